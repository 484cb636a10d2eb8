export function Pager({
  page,
  count,
  pageSize,
  onPage,
}: {
  page: number;
  count: number;
  pageSize: number;
  onPage: (n: number) => void;
}) {
  const pages = Math.max(1, Math.ceil(count / pageSize));
  const from = count === 0 ? 0 : (page - 1) * pageSize + 1;
  const to = Math.min(count, page * pageSize);
  return (
    <nav className="pager" aria-label="Pages">
      <span>
        {from.toLocaleString()}–{to.toLocaleString()} of {count.toLocaleString()}
      </span>
      <span className="actions">
        <button type="button" className="small" onClick={() => onPage(page - 1)} disabled={page <= 1}>
          ← Previous
        </button>
        <span>
          Page {page} of {pages}
        </span>
        <button type="button" className="small" onClick={() => onPage(page + 1)} disabled={page >= pages}>
          Next →
        </button>
      </span>
    </nav>
  );
}
