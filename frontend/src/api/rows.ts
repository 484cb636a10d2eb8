/**
 * A row the server answered a change with, put into a cached list at once (before the list is
 * fetched again), so that what a page shows, and what its next button acts on, is the server's
 * answer: the row `same` matches is replaced where it is, `row` appended when none matches,
 * and the matching row removed when `row` is null (a delete).
 */
export const withRow =
  <T>(same: (r: T) => boolean, row: T | null) =>
  (list: T[] | undefined): T[] | undefined => {
    if (!list) return list;
    const kept = list.flatMap((r) => (same(r) ? (row ? [row] : []) : [r]));
    return row && !list.some(same) ? [...kept, row] : kept;
  };
