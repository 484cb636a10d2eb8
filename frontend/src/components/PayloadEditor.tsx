import { useId } from "react";
import { checkPayload } from "../lib/payload";

/**
 * The JSON payload editor. It checks as you type (valid JSON, an object, the size limit) and
 * shows the server's errors for `payload` and its keys (`payload.seconds: ...`) under itself.
 */
export function PayloadEditor({
  value,
  onChange,
  serverErrors = {},
  example,
  maxBytes,
}: {
  value: string;
  onChange: (text: string) => void;
  /** Field errors whose path starts with `payload` (as ApiError.fieldErrors gives them). */
  serverErrors?: Record<string, string[]>;
  example?: Record<string, unknown>;
  maxBytes?: number;
}) {
  const id = useId();
  const check = checkPayload(value, maxBytes);
  const server = Object.entries(serverErrors).filter(([path]) => path === "payload" || path.startsWith("payload."));
  const invalid = !check.ok || server.length > 0;
  return (
    <div className="field">
      <div
        style={{ display: "flex", justifyContent: "space-between", alignItems: "baseline", gap: 8, flexWrap: "wrap" }}
      >
        <label htmlFor={id}>Payload (JSON object)</label>
        <span className="actions">
          <button
            type="button"
            className="small"
            disabled={!check.ok}
            onClick={() => check.ok && onChange(JSON.stringify(check.value, null, 2))}
          >
            Format
          </button>
          {example && (
            <button type="button" className="small" onClick={() => onChange(JSON.stringify(example, null, 2))}>
              Use example
            </button>
          )}
        </span>
      </div>
      <textarea
        id={id}
        className="code"
        spellCheck={false}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        aria-invalid={invalid}
        aria-describedby={`${id}-status`}
        data-testid="payload-editor"
      />
      <div id={`${id}-status`} aria-live="polite">
        {!check.ok ? (
          <div className="field-error" data-testid="payload-error">
            {check.error}
          </div>
        ) : (
          <div className="hint">
            {check.bytes.toLocaleString()} bytes{maxBytes ? ` of ${maxBytes.toLocaleString()}` : ""}
          </div>
        )}
        {server.map(([path, messages]) => (
          <div key={path} className="field-error" data-testid="payload-server-error">
            {path === "payload" ? "" : <code>{path.slice("payload.".length)}</code>}
            {path === "payload" ? "" : ": "}
            {messages.join(" ")}
          </div>
        ))}
      </div>
    </div>
  );
}
