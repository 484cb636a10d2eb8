import type { ShardState } from "../api/types";

/**
 * With shards (JOB_SHARDS): an alert naming each database that did not answer, whose jobs are
 * left out of what the page shows; nothing while every one answers (or without shards).
 */
export function ShardsDownNotice({ shards }: { shards: readonly ShardState[] | undefined }) {
  const down = (shards ?? []).filter((s) => !s.up);
  if (down.length === 0) return null;
  return (
    <div className="notice error" role="alert" data-testid="shards-down">
      {down.map((s) => (
        <div key={s.alias}>
          Shard <strong>{s.alias}</strong> is down{s.error ? ` (${s.error})` : ""}: its jobs are left out of these
          figures.
        </div>
      ))}
    </div>
  );
}

/** Which database's jobs to list: every one, merged, or one shard's. Hidden without shards. */
export function ShardFilter({
  aliases,
  value,
  onChange,
}: {
  aliases: readonly string[];
  value: string | undefined;
  onChange: (alias: string | undefined) => void;
}) {
  const choices = value && !aliases.includes(value) ? [...aliases, value] : aliases;
  if (choices.length === 0) return null;
  return (
    <span className="field inline">
      <label htmlFor="shard-filter">Shard</label>
      <select id="shard-filter" value={value ?? ""} onChange={(e) => onChange(e.target.value || undefined)}>
        <option value="">All shards</option>
        {choices.map((alias) => (
          <option key={alias} value={alias}>
            {alias}
          </option>
        ))}
      </select>
    </span>
  );
}

/**
 * The merged list's pager: it goes forward by cursor (its `next`) and back to the first page;
 * the count is every database's that answered.
 */
export function CursorPager({
  count,
  shown,
  atStart,
  hasNext,
  onNext,
  onFirst,
}: {
  count: number;
  shown: number;
  atStart: boolean;
  hasNext: boolean;
  onNext: () => void;
  onFirst: () => void;
}) {
  return (
    <nav className="pager" aria-label="Pages">
      <span>
        {shown.toLocaleString()} shown of {count.toLocaleString()}, every shard merged
      </span>
      <span className="actions">
        <button type="button" className="small" onClick={onFirst} disabled={atStart}>
          ← First page
        </button>
        <button type="button" className="small" onClick={onNext} disabled={!hasNext}>
          Next →
        </button>
      </span>
    </nav>
  );
}
