"""The job-creation throttle: a sliding window counted in slices, never more than the rate in
any period, never much stricter than an exact log, and a stored window whose size does not
grow with the rate."""
import random

import pytest
from django.test import override_settings
from rest_framework.test import APIRequestFactory
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from django_pg_jobqueue.api.throttles import JobCreateThrottle
from django_pg_jobqueue.services import throttling

pytestmark = pytest.mark.django_db


class DRFThrottle(UserRateThrottle):
    """DRF's own exact log, at the same rate, counting under another key."""

    scope = "job_create_reference"
    rate_text = "5/min"

    def get_rate(self):
        return self.rate_text


def _request(user):
    request = APIView().initialize_request(APIRequestFactory().post("/api/v1/jobs/"))
    request.user = user
    return request


def _admit(throttle, user) -> bool:
    """One request through the throttle that, if let in, creates its job (the view charges)."""
    request = _request(user)
    allowed = throttle.allow_request(request, None)
    if allowed:
        throttle.charge(throttle.cost(request))
    return allowed


def _at(throttle, now):
    throttle.timer = lambda: now
    return throttle


@override_settings(JOB_CREATE_RATE="5/min")
def test_never_more_than_the_rate_in_any_period_over_400_requests_at_random_gaps(make_user):
    user = make_user("producer")
    rng = random.Random(7)
    now, allowed_at, decisions = 1_000_000.0, [], []
    for _ in range(400):
        now += rng.choice([0.05, 0.3, 1.0, 4.0, 9.0, 13.0])
        allowed = _admit(_at(JobCreateThrottle(), now), user)
        decisions.append(allowed)
        if allowed:
            allowed_at.append(now)
        # Every period ending now holds at most 5 allowed requests.
        assert sum(1 for t in allowed_at if t > now - 60) <= 5
    assert 20 < decisions.count(True) < 380


@override_settings(JOB_CREATE_RATE="5/min")
def test_it_allows_what_an_exact_log_allows_one_slice_later(make_user):
    """No stricter than DRF's exact window lengthened by one slice (1 s at /min): whatever
    that one allows, this one allows too."""
    user = make_user("producer")
    rng = random.Random(11)
    now, ours_allowed, checked = 2_000_000.0, [], 0
    for _ in range(400):
        now += rng.choice([0.2, 1.5, 6.0, 11.0, 17.0])
        allowed = _admit(_at(JobCreateThrottle(), now), user)
        # An exact log of what this throttle allowed, over 61 s instead of 60.
        exact_would = sum(1 for t in ours_allowed if t > now - 61) < 5
        if exact_would:
            checked += 1
            assert allowed, f"refused at {now} though only {sum(1 for t in ours_allowed if t > now - 61)} in 61 s"
        if allowed:
            ours_allowed.append(now)
    assert checked > 50


@override_settings(JOB_CREATE_RATE="5/min")
def test_the_wait_is_when_the_oldest_slice_leaves_the_window(make_user):
    user = make_user("producer")
    for i in range(5):
        assert _admit(_at(JobCreateThrottle(), 1_000_000.0 + i * 2.5), user)
    refused = _at(JobCreateThrottle(), 1_000_030.0)
    assert not _admit(refused, user)
    # The first request (t = 1,000,000.0) is in the slice [1,000,000, 1,000,001): it leaves
    # the window at 1,000,061, 31 s from now; the exact log would say 30 s.
    assert refused.wait() == pytest.approx(31.0)
    assert not _admit(_at(JobCreateThrottle(), 1_000_060.5), user)
    assert _admit(_at(JobCreateThrottle(), 1_000_061.0), user)


@override_settings(JOB_CREATE_RATE="100000000/min")
def test_the_stored_window_stays_small_whatever_the_rate(make_user):
    """3,000 requests of one client over a minute: DRF's log would store 3,000 timestamps
    (pickled and written to the cache on every request); this stores at most 61 slices."""
    user = make_user("producer")
    key = JobCreateThrottle.cache_format % {"scope": "job_create", "ident": user.pk}
    for i in range(3_000):
        assert _admit(_at(JobCreateThrottle(), 3_000_000.0 + i * 0.02), user)
    window = throttling.window(key, oldest=0)
    assert len(window) <= JobCreateThrottle.BUCKETS + 1
    assert sum(count for _, count in window) == 3_000


# Run by each process of the next test: its threads send requests of one user through the
# throttle at one moment, each creating its job if let in; it prints how many were let in.
_RACER = """
import sys, threading, time
from django.contrib.auth import get_user_model
from django.db import connections
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView
from django_pg_jobqueue.api.throttles import JobCreateThrottle

user_pk, start_at, threads, requests = int(sys.argv[1]), float(sys.argv[2]), 4, 10
user = get_user_model().objects.get(pk=user_pk)
admitted = []

def send():
    while time.time() < start_at:
        time.sleep(0.001)  # by design: the clock moves between requests
    for _ in range(requests):
        request = APIView().initialize_request(APIRequestFactory().post("/api/v1/jobs/"))
        request.user = user
        throttle = JobCreateThrottle()
        assert throttle.num_requests == 25
        if throttle.allow_request(request, None):
            throttle.charge(1)
            admitted.append(1)
    connections.close_all()

racers = [threading.Thread(target=send) for _ in range(threads)]
for t in racers:
    t.start()
for t in racers:
    t.join()
print("admitted", len(admitted))
"""


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_from_several_processes_never_pass_the_rate_together(make_user):
    """4 processes x 4 threads send 160 requests of one user at the same moment against a rate
    of 25/min: exactly 25 are let in. A throttle that reads the window and then writes it
    back lets in every request that read it before the others wrote."""
    import os
    import subprocess
    import sys
    import time

    from tests.utils import REPO, worker_database_url

    user = make_user("racer")
    env = {**os.environ, "DATABASE_URL": worker_database_url(), "JOB_CREATE_RATE": "25/min"}
    start_at = time.time() + 8  # every process has set Django up by then
    racers = [subprocess.Popen(
        [sys.executable, str(REPO / "manage.py"), "shell", "-c", _RACER.replace(
            "sys.argv[1]", str(user.pk)).replace("sys.argv[2]", repr(start_at))],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)]
    admitted = 0
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err[-2000:]
        admitted += int(out.split("admitted")[-1])
    assert admitted == 25


def test_windows_no_request_touched_for_a_whole_period_are_pruned(monkeypatch):
    """The counter deletes the rows whose every slice has left the window (checked every
    PRUNE_EVERY reservations of a process), and keeps the live ones."""
    monkeypatch.setattr(throttling, "PRUNE_EVERY", 1)
    common = {"slice_index": 100, "window_slices": 60, "cost": 1, "limit": 5}
    assert throttling.reserve("throttle_job_create_gone", keep_seconds=-1, **common)
    assert throttling.reserve("throttle_job_create_live", keep_seconds=61, **common)
    assert throttling.window("throttle_job_create_gone", oldest=0) == []
    assert throttling.window("throttle_job_create_live", oldest=0) == [(100, 1)]
