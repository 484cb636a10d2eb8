import { type FormEvent, useState } from "react";
import type { JobEdit } from "../api/types";

/** An ISO time as a `datetime-local` input's value: the browser's local time, to the minute. */
export function toLocalInput(iso: string): string {
  const at = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}`;
}

/**
 * What the form changes, as PATCH jobs/{id}/ takes it: only the fields that differ from the
 * job's (a run time read as the browser's local time, sent with its offset as UTC); null when
 * nothing changed or a value is not a number or a time.
 */
export function editBody(
  job: { priority: number; available_at: string },
  priority: string,
  runAt: string,
): JobEdit | null {
  const body: JobEdit = {};
  const wanted = Number(priority);
  if (priority.trim() === "" || !Number.isInteger(wanted)) return null;
  if (wanted !== job.priority) body.priority = wanted;
  if (runAt !== toLocalInput(job.available_at)) {
    const at = new Date(runAt);
    if (Number.isNaN(at.getTime())) return null;
    body.run_at = at.toISOString();
  }
  return Object.keys(body).length ? body : null;
}

/**
 * The job page's edit of a job that has not started: its priority and its run time. It only
 * shapes the request; the page's mutation sends it, and the API checks the values (its 400,
 * naming the field, shows under the form).
 */
export function JobEditBar({
  job,
  busy,
  error,
  onSave,
  onClose,
}: {
  job: { id: number; priority: number; available_at: string };
  busy: boolean;
  error: string | null;
  onSave: (body: JobEdit) => void;
  onClose: () => void;
}) {
  const [priority, setPriority] = useState(String(job.priority));
  const [runAt, setRunAt] = useState(toLocalInput(job.available_at));
  const body = editBody(job, priority, runAt);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (body) onSave(body);
  };
  return (
    <form className="notice info edit-bar" aria-label={`Edit job #${job.id}`} onSubmit={submit}>
      <label>
        Priority
        <input type="number" step={1} value={priority} onChange={(e) => setPriority(e.target.value)} />
      </label>
      <label>
        Runs at (your time)
        <input type="datetime-local" value={runAt} onChange={(e) => setRunAt(e.target.value)} />
      </label>
      <button type="submit" className="primary" disabled={!body || busy}>
        {busy ? "Saving…" : "Save"}
      </button>
      <button type="button" onClick={onClose}>
        Close
      </button>
      {error && (
        <p role="alert" className="edit-error">
          Not saved: {error}
        </p>
      )}
    </form>
  );
}
