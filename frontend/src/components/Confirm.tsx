import { type ReactNode, type RefObject, useEffect, useRef } from "react";

/**
 * An inline "are you sure?": the question, a button that does it and one that does not.
 * Keyboard: the confirming button takes the focus when it appears, Escape answers no, and
 * the focus goes back to what opened it (`returnFocus`) when it closes without acting.
 */
export function InlineConfirm({
  question,
  confirmLabel,
  keepLabel,
  onConfirm,
  onKeep,
  busy = false,
  tone = "primary",
  returnFocus,
  testId,
}: {
  question: ReactNode;
  confirmLabel: string;
  keepLabel: string;
  onConfirm: () => void;
  onKeep: () => void;
  busy?: boolean;
  tone?: "primary" | "danger";
  returnFocus?: RefObject<HTMLElement | null>;
  testId?: string;
}) {
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    confirmRef.current?.focus();
  }, []);
  const keep = () => {
    onKeep();
    // After the re-render that closes this (the opener may only come back then).
    setTimeout(() => returnFocus?.current?.focus(), 0);
  };
  return (
    <span
      className="actions confirm"
      role="group"
      aria-label="Confirm"
      data-testid={testId}
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.stopPropagation();
          keep();
        }
      }}
    >
      <span>{question}</span>
      <button ref={confirmRef} type="button" className={`${tone} small`} disabled={busy} onClick={onConfirm}>
        {confirmLabel}
      </button>
      <button type="button" className="small" onClick={keep}>
        {keepLabel}
      </button>
    </span>
  );
}
