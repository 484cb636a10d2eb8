import { type FormEvent, useState } from "react";
import type { JobSignal } from "../api/types";

/**
 * The signal the form sends, as POST jobs/{id}/signal/ takes it: the name, and the data read
 * as JSON (empty: null). An error message instead when the name is empty or the data is not
 * JSON.
 */
export function signalBody(name: string, data: string): JobSignal | string {
  if (!name.trim()) return "Give the signal's name.";
  if (!data.trim()) return { name: name.trim(), data: null };
  try {
    return { name: name.trim(), data: JSON.parse(data) as unknown };
  } catch {
    return "The data is not JSON.";
  }
}

/**
 * The job page's form for a signal to a job parked on `ctx.wait_for_signal(name)`: the name
 * (the one it waits for, to begin with) and the data, as JSON. It only shapes the request; the
 * page's mutation sends it, and the API's refusal (409, 400) shows under the form.
 */
export function SignalForm({
  jobId,
  awaiting,
  busy,
  error,
  onSend,
  onClose,
}: {
  jobId: number;
  /** The signal the job waits for (the name field's first value). */
  awaiting: string;
  busy: boolean;
  error: string | null;
  onSend: (body: JobSignal) => void;
  onClose: () => void;
}) {
  const [name, setName] = useState(awaiting);
  const [data, setData] = useState("");
  const body = signalBody(name, data);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (typeof body !== "string") onSend(body);
  };
  return (
    <form className="notice info edit-bar" aria-label={`Send a signal to job #${jobId}`} onSubmit={submit}>
      <label>
        Signal name
        <input value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
      </label>
      <label>
        Data (JSON)
        <textarea
          rows={2}
          value={data}
          placeholder='{"approved": true}'
          spellCheck={false}
          onChange={(e) => setData(e.target.value)}
        />
      </label>
      <button type="submit" className="primary" disabled={typeof body === "string" || busy}>
        {busy ? "Sending…" : "Send signal"}
      </button>
      <button type="button" onClick={onClose}>
        Close
      </button>
      {typeof body === "string" && data.trim() !== "" && <p className="edit-error">{body}</p>}
      {error && (
        <p role="alert" className="edit-error">
          Not sent: {error}
        </p>
      )}
    </form>
  );
}
