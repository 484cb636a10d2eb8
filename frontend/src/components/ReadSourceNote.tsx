import type { ReadSource } from "../api/readSource";

/** Where the pages were read from, when the server reads from a replica (nothing otherwise). */
export function ReadSourceNote({ source }: { source: ReadSource | null }) {
  if (!source) return null;
  if (source.from === "replica") {
    const behind =
      source.lag === null ? "" : source.lag < 0.05 ? " · caught up" : ` · ${source.lag.toFixed(1)} s behind`;
    return (
      <span
        className="read-source"
        role="status"
        title="These pages are read from a streaming replica of the queue's database"
      >
        Read from a replica{behind}
      </span>
    );
  }
  return (
    <span className="read-source warn" role="status" title={source.fallback ?? undefined}>
      Replica left aside ({source.fallback ?? "unavailable"}): reading the primary
    </span>
  );
}
