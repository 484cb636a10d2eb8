"""The job-creation throttle's counter, in the queue's database (sql.THROTTLE_*): a sliding
window per key cut into slices, checked and charged by one statement per request.

`reserve` charges a request's jobs before they are created, if they fit: the check and the
charge are one atomic statement, so concurrent requests from any number of processes never
pass the rate together. `give_back` returns what the request did not create (an invalid
request, an idempotent replay, a conflict): the net charge is the jobs created. Every
PRUNE_EVERY reservations a process also deletes the rows no request touched for a whole
period."""
import itertools
import threading

from .. import db, sql

PRUNE_EVERY = 1000

_reservations = itertools.count(1)
_prune_lock = threading.Lock()


def reserve(key: str, *, slice_index: int, window_slices: int, cost: int, limit: int,
            keep_seconds: float) -> bool:
    """Charge `cost` jobs to `key`'s slice `slice_index` if the slices still in its window
    (the last `window_slices` and this one) hold at most `limit - cost`; whether it did."""
    if next(_reservations) % PRUNE_EVERY == 0 and _prune_lock.acquire(blocking=False):
        try:
            db.fetch_all(sql.THROTTLE_PRUNE_EXPIRED, {})
        finally:
            _prune_lock.release()
    rows = db.fetch_all(sql.THROTTLE_RESERVE_IF_IT_FITS, {
        "key": key, "slice": slice_index, "oldest": slice_index - window_slices, "cost": cost,
        "limit": limit, "keep_seconds": keep_seconds})
    return bool(rows)


def give_back(key: str, *, slice_index: int, jobs: int) -> None:
    """Return `jobs` of a reservation charged to slice `slice_index` (if still in the window)."""
    if jobs > 0:
        db.fetch_all(sql.THROTTLE_GIVE_BACK, {"key": key, "slice": slice_index, "jobs": jobs})


def window(key: str, *, oldest: int) -> list[tuple[int, int]]:
    """`key`'s slices from `oldest` on and their jobs, oldest first (for a Retry-After)."""
    rows = db.fetch_all(sql.THROTTLE_WINDOW, {"key": key})
    if not rows:
        return []
    slices, counts = rows[0]
    return sorted((s, c) for s, c in zip(slices, counts, strict=True) if s >= oldest)
