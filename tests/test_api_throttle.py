"""The job-creation throttle decides exactly as DRF's sliding window, with a packed history."""
import random
from array import array

import pytest
from django.test import override_settings
from rest_framework.test import APIRequestFactory
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from django_pg_jobqueue import security
from django_pg_jobqueue.api.throttles import JobCreateThrottle

pytestmark = pytest.mark.django_db


class DRFThrottle(UserRateThrottle):
    """DRF's own, at the same rate, counting under another key."""

    scope = "job_create_reference"

    def get_rate(self):
        return "5/min"


def _request(user):
    request = APIView().initialize_request(APIRequestFactory().post("/api/v1/jobs/"))
    request.user = user
    return request


@override_settings(JOB_CREATE_RATE="5/min")
def test_decisions_and_waits_match_drf_over_200_requests_at_random_gaps(make_user):
    user = make_user("producer")
    rng = random.Random(7)
    now = 1_000_000.0
    decisions = []
    for _ in range(200):
        now += rng.choice([0.05, 0.3, 1.0, 4.0, 9.0])
        ours, drf = JobCreateThrottle(), DRFThrottle()
        ours.timer = drf.timer = lambda now=now: now
        request = _request(user)
        allowed = ours.allow_request(request, None)
        assert allowed == drf.allow_request(request, None)
        decisions.append(allowed)
        if not allowed:
            assert ours.wait() == pytest.approx(drf.wait())
        assert list(ours.history) == list(drf.history)
    assert 20 < decisions.count(True) < 180


@override_settings(JOB_CREATE_RATE="1000/min")
def test_the_history_is_stored_as_a_packed_array(make_user):
    user = make_user("producer")
    for _ in range(3):
        assert JobCreateThrottle().allow_request(_request(user), None)
    history, counts = security.throttle_cache().get(
        JobCreateThrottle().cache_format % {"scope": "job_create", "ident": user.pk})
    assert isinstance(history, array) and len(history) == 3
    assert isinstance(counts, array) and list(counts) == [1, 1, 1]
