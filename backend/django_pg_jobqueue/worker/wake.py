"""When a lane claims: the wake policy, one object, no threads and no database.

A lane (worker/pool.py) asks its policy "claim now, or wait how long?" (`next_step`), tells it
when a claim starts and what it found (`claim_started`, `claimed`), and asks how long an idle
lane sleeps before it polls anyway (`idle_wait`). The listener's thread feeds it
notifications (`notify`), and a supervised child's relay asks whether the lane is cooling
down (`cooling_down`); those two come from other threads, so every flag lives under one lock.
The clock (`clock`, monotonic seconds) and the jitter's randomness (`uniform`) are given, so
tests drive the rules with a fake clock (tests/unit/test_wake.py).

The rules, each for a reason the fleet benchmark measured (bench/fleet.py):
- **notified or due**: an idle lane claims on a notification (an enqueue's, a retry's, the
  stager's: a job may wait), on its poll falling due, or while it has a backlog (its last
  claim came back full). A thread that frees up wakes the lane but is no reason to claim by
  itself: a trickled job costs one claim, not two.
- **idle poll interval**: an idle lane polls every JOB_POLL_INTERVAL_SECONDS, doubled by each
  poll in a row that found nothing up to JOB_POLL_INTERVAL_MAX_SECONDS while the LISTEN
  connection is up (a notification wakes it sooner), plus a jitter up to
  JOB_POLL_JITTER_SECONDS. A job found by a poll or in a backlog brings the interval back to
  the base (a notification was missed, or jobs keep coming); one found on a notification
  leaves it where it was: the notifications work, the polls are the fallback.
- **cooldown**: a claim on a notification that found nothing (another process took the job)
  starts JOB_FETCH_COOLDOWN_SECONDS during which the lane's notified claims wait; the
  notifications meanwhile fold into one claim at its end. Many hosts woken by every job of a
  trickle then claim at most once per cooldown each, not once per job; a lane whose claims
  find jobs never waits. The wait is paid once per wake-up, with a jitter up to
  JOB_WAKE_JITTER_SECONDS (by default under a supervisor only) so that woken processes do not
  all claim, nor all come back from their cooldowns, in the same instant.
- **late notice**: a claim that finds nothing does not start the cooldown if its notification
  came during the lane's previous claim, or that claim found jobs: either may have taken that
  very job itself. A notification during a claim makes the lane claim again after it.
- **probe**: a notified claim asks for one job more than the idle threads (with prefetch on,
  no concurrency limit and nothing prefetched). A notification does not say how many jobs
  wait: if the claim comes back full there are more (a burst), if not the lane is done
  without a second claim to find that out.
- **rate limits**: while a rate limit applies to the lane's claims and its last claim that
  found jobs is less than the limit's longest period ago (plus a poll interval), an idle lane
  polls every JOB_RATE_LIMIT_POLL_SECONDS, with a jitter up to half that, and does not back
  off: a claim under a full window finds nothing though jobs wait, and no notification says
  when the window frees, so the lane looks again soon after. Past that period it backs off
  as any idle lane.
- **burst hand-off**: a claim that comes back full, of more than one job or in a backlog, is a
  burst: the lane asks its supervisor once per burst to wake another process of the host for
  it (worker/relay.py); a claim that is not full ends the burst.
"""
from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """What a lane does next: wait `seconds` (0: claim now, asking for `extra` jobs beyond
    its idle threads). `wakeable`: a wake-up (a notification, a thread freed) ends the wait
    early; otherwise only the pool's stop does (a cooldown folds the notifications into its
    one claim)."""
    seconds: float = 0.0
    wakeable: bool = True
    extra: int = 0

    @property
    def claim(self) -> bool:
        return self.seconds <= 0


@dataclass(frozen=True)
class Claim:
    """A claim under way (`claim_started`): whether a notification led to it, and whether
    finding nothing in it would start the cooldown."""
    noticed: bool
    may_cool_down: bool


class WakePolicy:
    def __init__(self, *, poll_interval: float, poll_interval_max: float = 0.0,
                 poll_jitter: float = 0.0, fetch_cooldown: float = 0.0,
                 wake_jitter: float = 0.0, rate_poll: float = 0.05,
                 listening: Callable[[], bool] = lambda: False,
                 clock: Callable[[], float] = time.monotonic,
                 uniform: Callable[[float, float], float] = random.uniform):
        self.poll_interval = poll_interval
        self.poll_interval_max = max(poll_interval, poll_interval_max)
        self.poll_jitter, self.fetch_cooldown, self.wake_jitter = (poll_jitter, fetch_cooldown,
                                                                   wake_jitter)
        self.rate_poll = rate_poll
        self.listening = listening  # whether notifications arrive (the LISTEN connection is up)
        self.clock, self.uniform = clock, uniform
        self._lock = threading.Lock()
        # Under the lock (the listener's and the relay's threads touch them):
        self._notified = True  # a notification came since the last claim began (at start: look)
        self._claiming = False  # a claim is under way
        self._late_notice = False  # a notification came while it was
        self._missed_at = -math.inf  # the last notified claim that found nothing (the cooldown)
        # The lane's own thread alone:
        self._waited = False  # this wake-up has had its cooldown and jitter
        self._found_last = False  # the last claim found jobs
        self._told_host = False  # the lane asked for help with the current burst
        self._next_poll_at = 0.0  # when an idle lane polls anyway
        self._found_at = -math.inf  # when a claim last found jobs
        self.empty_polls = 0  # claims in a row that found nothing (the idle back-off)
        self.backlog = False  # the last claim came back full: claim again without waiting

    # -- from other threads --------------------------------------------------------------------
    def notify(self) -> None:
        """A notification: a job may wait in the lane's queues (the listener's thread)."""
        with self._lock:
            if self._claiming:
                self._late_notice = True
            self._notified = True

    def cooling_down(self) -> bool:
        """Whether a notified claim found nothing less than the cooldown ago (a supervised
        child passes its wake-ups on meanwhile: worker/relay.py)."""
        with self._lock:
            missed_at = self._missed_at
        return missed_at + self.fetch_cooldown > self.clock()

    # -- the lane's thread ---------------------------------------------------------------------
    def next_step(self, *, extra: int = 0, can_probe: bool = False) -> Step:
        """Claim now (asking for `extra` jobs beyond the idle threads, or for one more as a
        probe when `can_probe`: prefetch on, no limit, nothing prefetched), or wait how long.
        Called when the lane has idle threads or prefetch room."""
        if self.backlog:
            return Step(extra=extra)
        with self._lock:
            notified = self._notified
        if not notified:
            until_poll = self._next_poll_at - self.clock()
            if until_poll > 0:  # woken by a freed thread: nothing says a job waits
                return Step(until_poll)
            return Step(extra=extra)
        delay = self._wake_delay()
        if delay > 0:  # notifications meanwhile fold into this one claim
            return Step(delay, wakeable=False)
        return Step(extra=1 if not extra and can_probe else extra)

    def _wake_delay(self) -> float:
        """The rest of the cooldown and the jitter, once per wake-up: zero when this wake-up
        has waited already."""
        if self._waited:
            self._waited = False
            return 0.0
        with self._lock:
            missed_at = self._missed_at
        cooldown_left = missed_at + self.fetch_cooldown - self.clock()
        jitter = self.uniform(0, self.wake_jitter) if self.wake_jitter else 0.0
        delay = max(cooldown_left, jitter)
        self._waited = delay > 0
        return delay

    def claim_started(self) -> Claim:
        """A claim begins: a notification from now on makes the lane claim again after it."""
        with self._lock:
            noticed = not self.backlog and self._notified
            claim = Claim(noticed, noticed and not self._late_notice)
            self._late_notice, self._claiming, self._notified = False, True, False
        self._waited = False
        return claim

    def claim_failed(self) -> None:
        """The claim raised (the database is away): nothing learnt from it."""
        with self._lock:
            self._claiming = False

    def claimed(self, claim: Claim, *, asked: int, found: int) -> bool:
        """The claim found `found` of the `asked` jobs; returns whether the lane should ask
        its host for help with a burst (once per burst)."""
        with self._lock:
            self._claiming = False
            if claim.may_cool_down and not found and not self._found_last:
                self._missed_at = self.clock()  # another process took it: cool down
        self._found_last = found > 0
        if found:
            self._found_at = self.clock()
        full = found == asked
        tell = False
        if full and (asked > 1 or self.backlog):  # a burst, not one job: share it out
            tell, self._told_host = not self._told_host, True
        elif not full:
            self._told_host = False
        self.backlog = full
        if not found:
            self.empty_polls += 1
        elif not claim.noticed:
            self.empty_polls = 0
        return tell

    def idle_wait(self, *, rate_window: float = 0.0) -> float:
        """After a claim that left the lane idle: how long it sleeps before it polls again,
        unless woken (the module docstring's idle poll interval; `rate_window`: the longest
        period of the rate limits the lane's claims count against, 0 for none)."""
        if rate_window > 0 and self.clock() - self._found_at <= rate_window + self.poll_interval:
            wait = self.rate_poll + self.uniform(0, self.rate_poll / 2)
            self._next_poll_at = self.clock() + wait
            return wait
        wait = self.poll_interval
        if self.empty_polls > 1 and self.listening():
            wait = min(self.poll_interval_max,
                       self.poll_interval * 2 ** min(self.empty_polls - 1, 16))
        wait = max(wait, self.poll_interval) + self.uniform(0, self.poll_jitter)
        self._next_poll_at = self.clock() + wait
        return wait
