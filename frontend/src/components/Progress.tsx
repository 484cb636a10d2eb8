export function ProgressBar({
  percent,
  status,
  label,
}: {
  percent: number | null | undefined;
  status: string;
  label?: string;
}) {
  const value = status === "succeeded" ? 100 : Math.max(0, Math.min(100, percent ?? 0));
  const cls = status === "succeeded" ? "progress done" : status === "failed" ? "progress failed" : "progress";
  return (
    <div className="progress-row">
      <div
        className={cls}
        role="progressbar"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={value}
        aria-label={label ?? "Progress"}
        data-testid="job-progress"
      >
        <span style={{ width: `${value}%` }} />
      </div>
      <span className="progress-label">
        {percent === null || percent === undefined ? (status === "succeeded" ? "100%" : "—") : `${value}%`}
      </span>
    </div>
  );
}

/** A job's progress in a row of a table: a thin bar, named for a screen reader. */
export function MiniProgress({ id, percent }: { id: number; percent: number }) {
  return (
    <span
      className="progress mini-progress"
      role="progressbar"
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={percent}
      aria-label={`Job ${id}: ${percent}% done`}
    >
      <span style={{ width: `${percent}%` }} />
    </span>
  );
}

/** "2/3", amber once a retry happened, red when no attempt is left. */
export function Attempts({ attempts, max, status }: { attempts: number; max: number; status: string }) {
  const exhausted = attempts >= max && status === "failed";
  const cls = exhausted ? "attempts exhausted" : attempts > 1 ? "attempts retried" : "attempts";
  return (
    <span className={cls} title={`${attempts} of ${max} attempts used`}>
      {attempts}/{max}
    </span>
  );
}
