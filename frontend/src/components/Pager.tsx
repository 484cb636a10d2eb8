import { type FormEvent, useState } from "react";

/** The page sizes offered; the API takes 1..100. */
export const PAGE_SIZES = [25, 50, 100] as const;

/**
 * Where the list is (rows a–b of n, page p of m), Previous and Next, a page number to jump to,
 * and how many rows a page shows (kept in the address, like the filters).
 */
export function Pager({
  page,
  count,
  pageSize,
  onPage,
  onPageSize,
}: {
  page: number;
  count: number;
  pageSize: number;
  onPage: (n: number) => void;
  onPageSize?: (n: number) => void;
}) {
  const pages = Math.max(1, Math.ceil(count / pageSize));
  const from = count === 0 ? 0 : (page - 1) * pageSize + 1;
  const to = Math.min(count, page * pageSize);
  const [jump, setJump] = useState("");
  const wanted = Number(jump);
  const jumpable = Number.isInteger(wanted) && wanted >= 1 && wanted <= pages;
  const go = (e: FormEvent) => {
    e.preventDefault();
    if (!jumpable) return;
    onPage(wanted);
    setJump("");
  };
  return (
    <nav className="pager" aria-label="Pages">
      <span>
        {from.toLocaleString()}–{to.toLocaleString()} of {count.toLocaleString()}
      </span>
      {onPageSize && (
        <span className="field inline">
          <label htmlFor="page-size">Per page</label>
          <select id="page-size" value={pageSize} onChange={(e) => onPageSize(Number(e.target.value))}>
            {PAGE_SIZES.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </span>
      )}
      <span className="actions">
        <button type="button" className="small" onClick={() => onPage(page - 1)} disabled={page <= 1}>
          ← Previous
        </button>
        <span>
          Page {page.toLocaleString()} of {pages.toLocaleString()}
        </span>
        <button type="button" className="small" onClick={() => onPage(page + 1)} disabled={page >= pages}>
          Next →
        </button>
        {pages > 2 && (
          <form className="jump" onSubmit={go}>
            <label htmlFor="jump-page" className="sr-only">
              Go to page (1 to {pages})
            </label>
            <input
              id="jump-page"
              type="number"
              min={1}
              max={pages}
              placeholder="Page"
              value={jump}
              onChange={(e) => setJump(e.target.value)}
            />
            <button type="submit" className="small" disabled={!jumpable}>
              Go
            </button>
          </form>
        )}
      </span>
    </nav>
  );
}
