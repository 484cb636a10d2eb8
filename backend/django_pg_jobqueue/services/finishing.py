"""What follows a job's end, whoever ended it: one hook every outcome writer calls.

A job ends succeeded, failed for good or cancelled (expired is a cancel) by one of several
writers: the worker's completion and failure, its release of a job whose cancel was requested
or whose type no worker knows, the reaper, the expiry sweep, an operator's cancel of a job or
of a batch. Two things follow each end, in this order: the jobs waiting for it are unblocked
or cancelled, in turn (dependencies.settle), and a batch whose last member it was, or whose
last member such a cascade cancelled, is finished, its callbacks enqueued (batches.settle).
Each writer calls `after_ended` once its outcome committed (the settles must see it), so none
is left to the reaper's sweeps, which remain for what a crash between the two leaves behind.
"""
from collections.abc import Iterable

from . import batches, dependencies


def after_ended(ended: Iterable[int], *, with_dependants: Iterable[int] | None = None,
                batch_ids: Iterable[int | None] | None = None) -> None:
    """Settle what waited for the jobs `ended` (whose end committed).

    `with_dependants`: those of them known to have dependants (their rows' has_dependants),
    when the outcome's statement returned it; None: settle all of them. `batch_ids`: their
    batches, when the statement returned them; None: looked up from the jobs.
    """
    ended = list(ended)
    settling = ended if with_dependants is None else list(with_dependants)
    cascaded = settle_dependants(settling) if settling else []
    settle_batches(batch_ids=batch_ids, of_jobs=ended if batch_ids is None else (), cascaded=cascaded)


def settle_dependants(job_ids: list[int]) -> list[int]:
    """Unblock or cancel the dependants of these jobs; return the ids of those it cancelled
    (their batches are settled next, by `settle_batches`). For a writer that settles inside
    its own transaction (an operator's cancel: the cascade commits with the cancel)."""
    return [job_id for job_id, status in dependencies.settle(job_ids).items()
            if status == "cancelled"]


def settle_batches(*, batch_ids: Iterable[int | None] | None = None, of_jobs: Iterable[int] = (),
                   cascaded: Iterable[int] = ()) -> None:
    """After the commit: finish the batches `batch_ids`, and those of the jobs `of_jobs` and
    `cascaded`, that have no member left unfinished."""
    ids = [i for i in batch_ids or () if i is not None]
    if ids:
        batches.settle_after(ids)
    jobs = [*of_jobs, *cascaded]
    if jobs:
        batches.settle_after_jobs(jobs)
