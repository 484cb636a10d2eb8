"""One registry of operator actions (job_actions.ACTIONS): the bulk API, the permissions, the
user's `can` flags and the admin all read it, so each surface offers exactly its actions,
each behind the permission it names, through the service it names."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.admin import JobAdmin
from django_pg_jobqueue.api.auth import UserSerializer
from django_pg_jobqueue.api.jobs.actions import JobActionSerializer
from django_pg_jobqueue.api.jobs.views import JobViewSet
from django_pg_jobqueue.api.permissions import ACTION_PERMISSIONS
from django_pg_jobqueue.services import deleting, job_actions


def test_every_surface_offers_exactly_the_registered_actions():
    names = list(job_actions.ACTIONS)
    assert names == ["cancel", "retry", "rerun", "run_now", "delete"]
    assert list(JobActionSerializer().fields["action"].choices) == names
    # And the admin's send-signal action, which takes a name and data: not an ACTIONS entry.
    assert JobAdmin.actions == [f"{n}_jobs" for n in names] + ["send_signal_jobs"]
    assert ACTION_PERMISSIONS == {n: a.perm for n, a in job_actions.ACTIONS.items()}
    from django_pg_jobqueue.api.auth import _Can

    assert [f for f in _Can().fields if f in job_actions.ACTIONS] == names


def test_each_action_runs_its_service_behind_its_permission():
    actions = job_actions.ACTIONS
    assert actions["cancel"].service is services.cancel
    assert actions["retry"].service is services.retry
    assert actions["rerun"].service is services.rerun
    assert actions["delete"].service is deleting.delete
    assert (actions["cancel"].perm, actions["retry"].perm, actions["delete"].perm) == (
        "django_pg_jobqueue.change_job", "django_pg_jobqueue.change_job",
        "django_pg_jobqueue.delete_job")
    # The single-job endpoints need the same permission as the bulk action.
    perms = JobViewSet.job_permissions
    assert (perms["cancel"], perms["retry"], perms["destroy"]) == (
        actions["cancel"].perm, actions["retry"].perm, actions["delete"].perm)
    for name, action in actions.items():
        method = getattr(JobAdmin, f"{name}_jobs")
        assert method.short_description == action.label
        assert list(method.allowed_permissions) == [action.admin_permission]


@pytest.mark.django_db
def test_the_users_can_flags_follow_the_registrys_permissions(django_user_model):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("deleter", password="x")
    user.user_permissions.add(Permission.objects.get(codename="delete_job"))
    user = django_user_model.objects.get(pk=user.pk)
    can = UserSerializer(user).data["can"]
    assert {n: can[n] for n in job_actions.ACTIONS} == {"cancel": False, "retry": False,
                                                         "rerun": False, "run_now": False,
                                                         "delete": True}


def test_an_unknown_action_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="action must be one of cancel, retry, rerun, run_now, delete; got 'x'"):
        job_actions.get("x")
