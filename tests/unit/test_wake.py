"""The wake policy's rules (worker/wake.py), on a fake clock: no threads, no database."""
import pytest

from django_pg_jobqueue.worker.wake import Step, WakePolicy


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock():
    return Clock()


def policy(clock, **options) -> WakePolicy:
    options = {"poll_interval": 1.0, "poll_interval_max": 30.0, "fetch_cooldown": 0.25,
               "clock": clock, "uniform": lambda low, high: high, **options}
    return WakePolicy(**options)


def claim(p: WakePolicy, *, asked: int, found: int) -> bool:
    """One claim, as a lane makes it: started, then its result."""
    return p.claimed(p.claim_started(), asked=asked, found=found)


def idle(p: WakePolicy) -> None:
    """A lane gone idle: its first look (as on a notification) and then a poll found nothing;
    it sleeps until its next poll, and any cooldown is over."""
    p.next_step()
    claim(p, asked=1, found=0)
    p.clock.advance(p.idle_wait())
    p.next_step()
    claim(p, asked=1, found=0)
    p.idle_wait()


# -- notified or due -----------------------------------------------------------------------------
def test_a_new_lane_claims_at_once_as_if_notified(clock):
    p = policy(clock)
    assert p.next_step(can_probe=True) == Step(extra=1)
    claim(p, asked=2, found=0)  # jobs may have waited since before it started
    assert p.cooling_down()


def test_a_freed_thread_without_a_notification_waits_for_the_poll(clock):
    p = policy(clock)
    idle(p)
    step = p.next_step()  # woken by a thread that freed up: nothing says a job waits
    assert not step.claim and step.wakeable and step.seconds == pytest.approx(1.0)
    clock.advance(0.4)
    assert p.next_step().seconds == pytest.approx(0.6)
    clock.advance(0.6)
    assert p.next_step() == Step()  # the poll is due


def test_a_notification_makes_an_idle_lane_claim(clock):
    p = policy(clock)
    idle(p)
    p.notify()
    assert p.next_step() == Step()


def test_a_backlog_claims_again_without_waiting(clock):
    p = policy(clock)
    idle(p)
    p.notify()
    claim(p, asked=4, found=4)
    assert p.backlog
    assert p.next_step(extra=3) == Step(extra=3)  # no poll wait, no cooldown, no jitter


# -- idle poll interval ---------------------------------------------------------------------------
def test_the_idle_poll_backs_off_while_notifications_arrive(clock):
    listening = [True]
    p = policy(clock, listening=lambda: listening[0], poll_interval_max=5.0)
    waits = []
    for _ in range(6):
        p.next_step()
        claim(p, asked=1, found=0)
        waits.append(p.idle_wait())
        clock.advance(waits[-1])
    assert waits == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    listening[0] = False  # the LISTEN connection is down: polls are all there is
    p.next_step()
    claim(p, asked=1, found=0)
    assert p.idle_wait() == 1.0


def test_under_a_rate_limit_a_lane_that_found_jobs_looks_again_soon_without_backing_off(clock):
    p = policy(clock, listening=lambda: True, poll_interval_max=5.0, rate_poll=0.1)
    p.next_step()
    claim(p, asked=8, found=3)  # the window filled up: jobs wait, no notification will say so
    waits = []
    for _ in range(4):
        waits.append(p.idle_wait(rate_window=1.0))
        clock.advance(waits[-1])
        p.next_step()
        claim(p, asked=8, found=0)
    assert waits == [pytest.approx(0.15)] * 4  # the rate poll and its jitter, no doubling
    clock.advance(2.0)  # past the limit's period and a poll interval since jobs were found
    assert p.idle_wait(rate_window=1.0) >= 1.0  # an idle lane's back-off again
    assert p.idle_wait() >= 1.0  # and without rate limits, the idle poll as before


def test_the_idle_poll_adds_its_jitter(clock):
    p = policy(clock, poll_jitter=0.1)
    p.next_step()
    claim(p, asked=1, found=0)
    assert p.idle_wait() == pytest.approx(1.1)


def test_a_job_found_by_a_poll_resets_the_back_off_and_one_found_on_a_notification_does_not(
        clock):
    p = policy(clock, listening=lambda: True)
    idle(p)
    clock.advance(60)
    idle(p)
    backed_off = p.empty_polls
    assert backed_off > 1
    p.notify()
    p.next_step()
    claim(p, asked=2, found=1)  # on a notification: the notifications work, keep backing off
    assert p.empty_polls == backed_off
    clock.advance(60)
    p.next_step()
    claim(p, asked=2, found=1)  # by a poll: a notification was missed
    assert p.empty_polls == 0


# -- cooldown ------------------------------------------------------------------------------------
def test_a_notified_claim_that_finds_nothing_cools_the_lane_down(clock):
    p = policy(clock)
    idle(p)
    p.notify()
    p.next_step()
    claim(p, asked=2, found=0)  # another process took the job
    assert p.cooling_down()
    p.notify()
    step = p.next_step()
    assert step.seconds == pytest.approx(0.25) and not step.wakeable  # notifications fold in
    clock.advance(0.25)
    assert p.next_step() == Step()  # this wake-up has waited: claim
    assert not p.cooling_down()


def test_the_cooldown_is_waited_once_per_wake_up(clock):
    p = policy(clock)
    idle(p)
    p.notify()
    claim(p, asked=2, found=0)
    p.notify()
    assert not p.next_step().claim
    clock.advance(0.1)  # woken early (the pool stopping, or spuriously): no second wait
    assert p.next_step().claim


def test_a_claim_by_poll_that_finds_nothing_does_not_cool_down(clock):
    p = policy(clock)
    idle(p)
    assert not p.cooling_down()
    p.notify()
    assert p.next_step() == Step()


def test_a_lane_whose_claims_find_jobs_never_cools_down(clock):
    p = policy(clock)
    idle(p)
    p.notify()
    claim(p, asked=2, found=1)
    p.notify()
    claim(p, asked=2, found=0)  # its last claim found jobs: it may have taken this one
    assert not p.cooling_down()
    p.notify()
    claim(p, asked=2, found=0)  # two in a row found nothing: others take them
    assert p.cooling_down()


def test_the_wake_jitter_delays_a_notified_claim_once(clock):
    p = policy(clock, wake_jitter=0.002)
    idle(p)
    p.notify()
    step = p.next_step()
    assert step.seconds == pytest.approx(0.002) and not step.wakeable
    assert p.next_step().claim


# -- late notice: a notification during a claim --------------------------------------------------
def test_a_notification_during_a_claim_makes_the_lane_claim_again(clock):
    p = policy(clock)
    idle(p)
    p.notify()
    started = p.claim_started()
    p.notify()  # from the listener's thread, while the claim runs
    p.claimed(started, asked=2, found=1)
    assert p.next_step() == Step()


def test_a_notification_during_a_claim_does_not_start_the_cooldown(clock):
    p = policy(clock)
    idle(p)
    clock.advance(5)
    started = p.claim_started()  # a poll
    p.notify()  # its job may be the one this claim is taking
    p.claimed(started, asked=2, found=0)
    assert p.next_step() == Step()
    started = p.claim_started()
    assert started.noticed and not started.may_cool_down
    p.claimed(started, asked=2, found=0)
    assert not p.cooling_down()


def test_a_failed_claim_leaves_no_claim_under_way(clock):
    p = policy(clock)
    p.claim_started()
    p.claim_failed()
    p.notify()
    assert p.claim_started().may_cool_down  # the notification came after the claim, not during


# -- probe ---------------------------------------------------------------------------------------
def test_a_notified_claim_probes_for_one_job_more(clock):
    p = policy(clock)
    idle(p)
    p.notify()
    assert p.next_step(can_probe=True) == Step(extra=1)


def test_no_probe_without_a_notification_nor_when_the_lane_cannot(clock):
    p = policy(clock)
    idle(p)
    clock.advance(2)
    assert p.next_step(can_probe=True) == Step()  # a poll
    p.notify()
    assert p.next_step(can_probe=False) == Step()  # a limit, prefetch off, or jobs prefetched
    p.notify()
    assert p.next_step(extra=3, can_probe=True) == Step(extra=3)  # asking for more already


def test_a_full_probe_is_a_burst_and_a_short_one_ends_the_wake_up(clock):
    p = policy(clock)
    idle(p)
    p.notify()
    assert claim(p, asked=2, found=2)  # one idle thread and the probe: both taken
    assert p.backlog
    idle_after = policy(clock)
    idle(idle_after)
    idle_after.notify()
    assert not claim(idle_after, asked=2, found=1)
    assert not idle_after.backlog


# -- burst hand-off ------------------------------------------------------------------------------
def test_the_host_is_told_once_per_burst(clock):
    p = policy(clock)
    assert claim(p, asked=4, found=4)
    assert not claim(p, asked=4, found=4)  # the same burst
    assert not claim(p, asked=1, found=1) and p.backlog  # a backlog of one thread still is
    assert not claim(p, asked=4, found=2)  # not full: the burst is over
    assert claim(p, asked=4, found=4)  # a new one


def test_one_job_for_one_thread_is_no_burst(clock):
    p = policy(clock)
    idle(p)
    p.notify()
    assert not claim(p, asked=1, found=1)
