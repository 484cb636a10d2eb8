"""/api/v1/rate-limits/: list the limits in force, set one, remove one; who may; bad input is
a 400 naming the field; with JOB_SHARDS, each database's limits, naming their `shard`."""
import pytest
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.models import RateLimit
from django_pg_jobqueue.services import claiming
from tests.api.test_api_merged_list import refused_shard  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

URL = "/api/v1/rate-limits/"


@pytest.fixture(autouse=True)
def fresh_limits():
    yield
    claiming.forget_cached_limits()


@pytest.fixture
def configurer(client_for, make_user):
    return client_for(make_user("configurer", perms=["view_job", "change_queuesetting"]))


def test_set_list_and_remove_a_limit(configurer):
    response = configurer.post(URL, {"key": "customer:*", "max_starts": 2, "period_seconds": 1},
                               format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"kind": "key", "name": "customer:*", "max_starts": 2,
                               "period_seconds": 1.0, "source": "set"}
    with override_settings(JOB_RATE_LIMITS=[{"type": "noop", "max_starts": 5,
                                             "period_seconds": 60}]):
        assert [(l["kind"], l["source"]) for l in configurer.get(URL).json()] == [
            ("key", "set"), ("type", "declared")]
    response = configurer.post(URL + "remove/", {"key": "customer:*"}, format="json")
    assert response.json() == {"removed": True}
    assert configurer.get(URL).json() == []
    assert configurer.post(URL + "remove/", {"key": "customer:*"},
                           format="json").json() == {"removed": False}


@pytest.mark.parametrize("body, field", [
    ({"type": "noop", "max_starts": 0, "period_seconds": 1}, "max_starts"),
    ({"type": "noop", "max_starts": 1, "period_seconds": 100000}, "period_seconds"),
    ({"type": "noop", "max_starts": "x", "period_seconds": 1}, "max_starts"),
    ({"type": "noop", "key": "k", "max_starts": 1, "period_seconds": 1}, "scope"),
    ({"max_starts": 1, "period_seconds": 1}, "scope"),
    ({"type": "noop", "max_starts": 1, "period_seconds": 1, "weight": 2}, "weight"),
])
def test_a_bad_limit_is_a_400_naming_the_field(configurer, body, field):
    response = configurer.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert field in str(response.json())


def test_a_queue_that_does_not_exist_is_a_404(configurer):
    response = configurer.post(URL, {"queue": "nope", "max_starts": 1, "period_seconds": 1},
                               format="json")
    assert response.status_code == 404


def test_an_operator_may_read_the_limits_but_not_set_them(operator_client):
    services.set_rate_limit(type="noop", max_starts=1, period_seconds=1)
    assert operator_client.get(URL).status_code == 200
    body = {"type": "noop", "max_starts": 5, "period_seconds": 1}
    assert operator_client.post(URL, body, format="json").status_code == 403
    assert operator_client.post(URL + "remove/", {"type": "noop"},
                                format="json").status_code == 403


def test_the_list_says_each_limit_s_use_now_and_a_key_limit_s_busiest_keys(configurer):
    services.set_rate_limit(key="customer:*", max_starts=5, period_seconds=60)
    services.set_rate_limit(type="noop", max_starts=3, period_seconds=60)
    services.set_rate_limit(queue="default", max_starts=9, period_seconds=60)
    services.enqueue("noop")  # the queue exists
    for key, times in (("customer:42", 2), ("customer:7", 1)):
        for _ in range(times):
            assert services.rate_limit(key).try_acquire().allowed
    assert services.rate_limit(type="noop").try_acquire(weight=2).allowed
    listed = {(l["kind"], l["name"]): l for l in configurer.get(URL).json()}
    assert listed[("type", "noop")]["used"] == 2
    assert listed[("queue", "default")]["used"] == 0
    key_limit = listed[("key", "customer:*")]
    assert key_limit["used"] == 2  # its busiest key's window
    assert key_limit["keys"] == [{"key": "customer:42", "used": 2}, {"key": "customer:7", "used": 1}]
    assert key_limit["keys_in_window"] == 2
    assert "keys" not in listed[("type", "noop")]


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_with_shards_the_list_names_each_limit_s_database_and_one_that_is_down(
        configurer, refused_shard):  # noqa: F811
    RateLimit.objects.create(kind="type", name="noop", max_starts=2, period_seconds=1)
    with override_settings(JOB_RATE_LIMITS=[{"queue": "video", "max_starts": 5,
                                             "period_seconds": 60}]):
        response = configurer.get(URL)
    assert response.status_code == 200
    # video's declared limit is listed in the database that holds it (shard_c), which is down.
    assert [(r["shard"], r["kind"], r["name"]) for r in response.json()] == [
        ("default", "type", "noop")]
    assert response.headers["X-Job-Shards-Down"] == "shard_c"
