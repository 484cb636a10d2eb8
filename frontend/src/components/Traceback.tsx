import { useState } from "react";

/**
 * A traceback, wrapped to the panel's width (no sideways scrolling, on a phone neither), with a
 * button that copies it whole for a bug report.
 */
export function Traceback({ text, label = "Traceback" }: { text: string; label?: string }) {
  const [copied, setCopied] = useState<"yes" | "no" | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied("yes");
    } catch {
      setCopied("no");
    }
  };
  return (
    <div className="traceback-box">
      <button
        type="button"
        className="small copy"
        onClick={() => void copy()}
        aria-label={`Copy the ${label.toLowerCase()}`}
      >
        {copied === "yes" ? "Copied" : "Copy"}
      </button>
      <span className="sr-only" role="status">
        {copied === "yes" ? "Copied to the clipboard." : copied === "no" ? "The browser refused to copy." : ""}
      </span>
      <pre className="traceback">{text}</pre>
    </div>
  );
}
