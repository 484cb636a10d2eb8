"""The API remembers tokens and permissions for a few seconds per process: fewer queries
per request, and every change made through the ORM is seen by the next request at once."""
import pytest
from django.contrib.auth.models import Group, Permission
from rest_framework.authtoken.models import Token

from django_pg_jobqueue import services
from django_pg_jobqueue.api import authentication
from django_pg_jobqueue.api.authentication import forget_all

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


@pytest.fixture(autouse=True)
def _cold():
    forget_all()
    yield
    forget_all()


def test_a_warm_list_reads_only_the_count_and_the_page(operator_client, django_assert_num_queries):
    services.enqueue_many([{"type": "noop"}] * 3)
    operator_client.get(JOBS)
    with django_assert_num_queries(2):
        assert operator_client.get(JOBS).status_code == 200


def test_a_warm_detail_reads_only_the_job_and_its_events(operator_client,
                                                         django_assert_num_queries):
    job = services.enqueue("noop")
    operator_client.get(f"{JOBS}{job.id}/")
    with django_assert_num_queries(2):
        assert operator_client.get(f"{JOBS}{job.id}/").status_code == 200


def test_a_deleted_token_is_refused_at_once(operator, operator_client):
    assert operator_client.get(JOBS).status_code == 200
    Token.objects.filter(user=operator).get().delete()
    assert operator_client.get(JOBS).status_code == 401


def test_a_deactivated_user_is_refused_at_once(operator, operator_client):
    assert operator_client.get(JOBS).status_code == 200
    operator.is_active = False
    operator.save()
    assert operator_client.get(JOBS).status_code == 401


def test_a_removed_permission_is_refused_at_once(operator, operator_client):
    assert operator_client.post(JOBS, {"type": "noop"}, format="json").status_code == 201
    operator.user_permissions.remove(Permission.objects.get(codename="add_job"))
    assert operator_client.post(JOBS, {"type": "noop"}, format="json").status_code == 403


def test_a_permission_granted_through_a_group_is_seen_at_once(make_user, client_for):
    user = make_user("grouped", perms=["view_job"])
    client = client_for(user)
    assert client.post(JOBS, {"type": "noop"}, format="json").status_code == 403
    group = Group.objects.create(name="producers")
    group.permissions.add(Permission.objects.get(codename="add_job"))
    user.groups.add(group)
    assert client.post(JOBS, {"type": "noop"}, format="json").status_code == 201


def test_a_change_without_signals_is_seen_once_the_entries_expire(operator, operator_client,
                                                                  monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(authentication.time, "monotonic", lambda: now[0])
    assert operator_client.get(JOBS).status_code == 200
    type(operator).objects.filter(pk=operator.pk).update(is_active=False)  # no signal
    assert operator_client.get(JOBS).status_code == 200  # still remembered
    now[0] += authentication.AUTH_CACHE_SECONDS + 0.1
    assert operator_client.get(JOBS).status_code == 401


def test_an_unknown_token_is_looked_up_every_time(client_for, django_assert_num_queries):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    for _ in range(2):
        with django_assert_num_queries(1):
            assert client.get(JOBS).status_code == 401


def test_each_request_gets_its_own_copy_of_the_user(operator, operator_client):
    operator_client.get(JOBS)
    (user_a, _), (user_b, _) = (
        authentication.CachedTokenAuthentication().authenticate_credentials(
            Token.objects.get(user=operator).key) for _ in range(2))
    assert user_a == user_b and user_a is not user_b
