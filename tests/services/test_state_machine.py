"""Every allowed transition happens, every refused one is refused: a hypothesis stateful test
drives the real services against PostgreSQL and compares each row with a model of the rules."""
import uuid
from datetime import timedelta

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import InvalidTransition, LeaseLost
from django_pg_jobqueue.models import Job, TxNow
from django_pg_jobqueue.states import TRANSITIONS, Status

pytestmark = pytest.mark.django_db


class JobLifecycle(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.queue = f"sm-{uuid.uuid4().hex[:8]}"
        self.job = services.enqueue("noop", {}, queue=self.queue, max_attempts=3)
        self.status, self.attempts, self.max_attempts = "queued", 0, 3
        self.token = None
        self.stale_tokens: list = []
        self.cancel_requested = False
        self.last_seen = "queued"

    # -- worker side ---------------------------------------------------------------------------
    @rule()
    def claim(self):
        claimed = services.claim(worker_ids=["w-a"], queues=[self.queue])
        if self.status == "queued":
            assert [c.id for c in claimed] == [self.job.id]
            self.status, self.attempts = "running", self.attempts + 1
            if self.token:
                self.stale_tokens.append(self.token)
            self.token = claimed[0].lease_token
        else:
            assert claimed == []

    @rule(result=st.integers())
    def complete(self, result):
        if self.status != "running":
            with pytest.raises(LeaseLost):
                services.complete(self.job.id, self.token or uuid.uuid4(), worker_id="w-a")
            return
        status = services.complete(self.job.id, self.token, worker_id="w-a", result=result)
        self.status = "cancelled" if self.cancel_requested else "succeeded"
        assert status == self.status
        self._lose_token()

    @rule(permanent=st.booleans())
    def fail(self, permanent):
        if self.status != "running":
            with pytest.raises(LeaseLost):
                services.fail(self.job.id, self.token or uuid.uuid4(), worker_id="w-a",
                              error="boom", permanent=permanent)
            return
        status, _ = services.fail(self.job.id, self.token, worker_id="w-a", error="boom",
                                  permanent=permanent)
        if self.cancel_requested:
            self.status = "cancelled"
        elif not permanent and self.attempts < self.max_attempts:
            self.status = "queued"
        else:
            self.status = "failed"
        assert status == self.status
        self._lose_token()

    @rule()
    def stale_worker_writes_are_refused(self):
        if not self.stale_tokens:
            return
        stale = self.stale_tokens[-1]
        for write in (
            lambda: services.complete(self.job.id, stale, worker_id="w-old"),
            lambda: services.fail(self.job.id, stale, worker_id="w-old", error="late"),
            lambda: services.record_progress(self.job.id, stale, worker_id="w-old", percent=5),
            lambda: services.snooze(self.job.id, stale, worker_id="w-old", seconds=0),
        ):
            with pytest.raises(LeaseLost):
                write()
        assert services.renew_many([(self.job.id, stale)]) == {}

    @rule()
    def lease_expires_and_reaper_runs(self):
        if self.status == "running":
            Job.objects.filter(pk=self.job.id).update(lease_expires_at=TxNow() - timedelta(seconds=1))
        services.reap()
        if self.status == "running":
            if self.cancel_requested:
                self.status = "cancelled"
            elif self.attempts < self.max_attempts:
                self.status = "queued"
            else:
                self.status = "failed"
            self._lose_token()

    @rule()
    def release(self):
        released = services.release_many([(self.job.id, self.token or uuid.uuid4(), "w-a")])
        if self.status == "running":
            assert released == [self.job.id]
            if self.cancel_requested:
                self.status = "cancelled"
            else:
                self.status, self.attempts = "queued", self.attempts - 1
            self._lose_token()
        else:
            assert released == []

    # -- operator side ---------------------------------------------------------------------------
    @rule()
    def cancel(self):
        if self.status in ("succeeded", "failed", "cancelled"):
            with pytest.raises(InvalidTransition):
                services.cancel(self.job.id)
            return
        services.cancel(self.job.id)
        if self.status == "queued":
            self.status = "cancelled"
        else:
            self.cancel_requested = True

    @rule()
    def retry(self):
        if self.status not in ("failed", "cancelled"):
            with pytest.raises(InvalidTransition):
                services.retry(self.job.id)
            return
        services.retry(self.job.id)
        self.status = "queued"
        self.max_attempts = max(self.max_attempts, self.attempts + 1)
        self.cancel_requested = False

    def _lose_token(self):
        if self.token:
            self.stale_tokens.append(self.token)
        self.token = None
        if self.status in ("queued",):
            self.cancel_requested = False

    @invariant()
    def row_matches_the_model(self):
        row = Job.objects.get(pk=self.job.id)
        assert (row.status, row.attempts, row.max_attempts) == (
            self.status, self.attempts, self.max_attempts)
        assert (row.cancel_requested_at is not None) == (
            self.cancel_requested and row.status == "running"
        ) or row.status in ("cancelled",)
        if self.last_seen != row.status:
            assert (Status(self.last_seen), Status(row.status)) in TRANSITIONS
        self.last_seen = row.status


@override_settings(JOB_RETRY_BASE_SECONDS=0.0, JOB_RETRY_MAX_SECONDS=0.0, JOB_RETRY_JITTER=0.0)
def test_job_lifecycle_follows_the_state_machine():
    JobLifecycle.TestCase.settings = settings(
        max_examples=40, stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    JobLifecycle.TestCase().runTest()


def test_every_transition_in_the_table_is_named_by_a_verb():
    verbs = set(TRANSITIONS.values())
    assert verbs == {"claim", "complete", "fail", "requeue", "cancel", "retry", "block", "unblock"}
    assert not any(src in (Status.SUCCEEDED,) for src, _ in TRANSITIONS)
