"""A host's overrides of its queues, as this worker process applies them.

An operator may cap how many of a host's threads run a queue's jobs at once, or stop the
queue on that host (services/worker_overrides.py writes them; docs/how-to/queues.md). The pool
reads its host's rows through the engine (`worker_overrides`) when it starts and after each
renewal pass (worker/renewer.py: every min(lease / 3, 2 s)), and wakes its lanes when they
changed; each lane then asks `plan` before it claims:

- a stopped queue, or one whose cap this process's threads already fill, is left out of the
  claim (`exclude_queues`): no new job of it starts here, the running ones finish;
- a queue with room under its cap bounds the claim's size to that room, so that one claim
  never takes more of its jobs than the cap allows (a claim of k jobs takes at most k of
  any queue);
- a lane whose queues an override touches prefetches nothing, and gives back the prefetched
  jobs of a stopped or capped queue: a prefetched job would start on a thread without
  asking.

"Threads" is per process: a host running `--processes N` applies the cap in each of them.
The count is of this process's executors that run (or were just handed) a job of the queue,
so a lane over several queues, or two lanes over one queue, share the cap; lanes that a cap
covers claim one at a time (`claim_lock`) so that two never fill the same room.
"""
import logging
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

log = logging.getLogger("django_pg_jobqueue.worker")

# {queue: (threads or None, stopped)}, as engine.worker_overrides answers.
Overrides = dict[str, tuple[int | None, bool]]


@dataclass(frozen=True)
class ClaimPlan:
    exclude: tuple[str, ...]  # queues left out of the claim
    limit: int                # the most jobs the claim may take
    capped: bool              # a cap with room bounds it: claim under claim_lock

    @property
    def touched(self) -> bool:
        return bool(self.exclude) or self.capped


def plan(overrides: Overrides, scope: Iterable[str] | None, running: Counter,
         wanted: int) -> ClaimPlan:
    """What a lane over `scope` (None: every queue) may claim of `wanted` jobs, with
    `running` of each queue's jobs on this process's threads: pure, no clock, no database."""
    scope_set = None if scope is None else set(scope)
    exclude, room = [], []
    for queue, (threads, stopped) in sorted(overrides.items()):
        if scope_set is not None and queue not in scope_set:
            continue
        if stopped or (threads is not None and running[queue] >= threads):
            exclude.append(queue)
        elif threads is not None:
            room.append(threads - running[queue])
    limit = min([wanted, *room])
    if scope_set is not None and scope_set <= set(exclude):
        limit = 0  # every queue of the lane is stopped or full here
    return ClaimPlan(tuple(exclude), limit, bool(room))


def describe(overrides: Overrides) -> str:
    """'reports threads=1, media stopped', as the log says it ('none': no override)."""
    return ", ".join(" ".join([queue, *([f"threads={threads}"] if threads is not None else []),
                               *(["stopped"] if stopped else [])])
                     for queue, (threads, stopped) in sorted(overrides.items())) or "none"


class HostOverrides:
    """This process's copy of its host's overrides, refreshed by the pool through its
    engine (on the renewer's thread); read by the lanes and the executors."""

    def __init__(self, hostname: str, engine):
        self.hostname, self.engine = hostname, engine
        self._lock = threading.Lock()
        self._current: Overrides = {}
        self.claim_lock = threading.Lock()

    def refresh(self) -> bool:
        """Read the host's overrides again: whether they changed (then the pool wakes its
        lanes). A database error propagates; the last ones read stay in force."""
        fresh = dict(self.engine.worker_overrides(self.hostname))
        with self._lock:
            changed, self._current = fresh != self._current, fresh
        if changed:
            log.info("host %s: queue overrides now: %s", self.hostname, describe(fresh))
        return changed

    def current(self) -> Overrides:
        # One reference, swapped whole by refresh() and never changed in place: read without
        # the lock (an executor asks at the end of every job).
        return self._current

    def touches(self, scope: Iterable[str] | None) -> bool:
        """Whether an override applies to a lane over `scope` (then it prefetches nothing)."""
        current = self.current()
        return bool(current) and (scope is None or any(q in current for q in scope))

    def stopped(self, scope: Iterable[str] | None) -> list[str]:
        """The queues of `scope` stopped on this host (a chunk's extra claims leave them out)."""
        return [q for q, (threads, stopped) in self.current().items()
                if (stopped or threads == 0) and (scope is None or q in scope)]
