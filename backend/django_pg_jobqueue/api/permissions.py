"""Who may do what: Django model permissions on Job.

    reads (list, detail, events, metrics, job types)  jobs.view_job, or anyone when
                                                       JOB_API_PUBLIC_READ=true
    create, bulk                                       jobs.add_job
    cancel, retry, queue pause and resume              jobs.change_job
    a queue's concurrency limit (PATCH queues/{name}/)  jobs.change_queuesetting
    delete (a finished job)                            jobs.delete_job
    the audit log (GET audit/)                         jobs.view_auditlogentry (never public)
    bulk actions (POST jobs/actions/)                  the single-job action's permission
                                                       (job_actions.ACTIONS); by filter or
                                                       all (also POST jobs/retry/), view_job
                                                       too (may_select)

A method a view has no handler for (PUT or PATCH on a job, DELETE on a queue) is a 405 for an
authenticated user, whatever their permissions: the permission check lets it through to DRF's
`http_method_not_allowed`. (It used to be a 403, even for a superuser: an action-less method
has no permission.) Anonymous requests still get 401 first.

Anonymous requests get 401 (TokenAuthentication comes first, so DRF answers with
`WWW-Authenticate: Token`); authenticated users without the permission get 403.
Each process remembers a user's answer for a few seconds (authentication.has_perm).
"""
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

from .. import conf
from ..services import job_actions
from .authentication import has_perm

VIEW, ADD, CHANGE = "django_pg_jobqueue.view_job", "django_pg_jobqueue.add_job", "django_pg_jobqueue.change_job"
# A queue's concurrency limit is configuration, as in the admin's QueueSetting form; pausing
# and resuming are an operator's actions, like cancel (change_job).
CHANGE_QUEUE = "django_pg_jobqueue.change_queuesetting"
# The audit log (GET audit/): who did what. Not a read of jobs: JOB_API_PUBLIC_READ leaves it
# closed, and view_job alone does not open it.
VIEW_AUDIT_LOG = "django_pg_jobqueue.view_auditlogentry"
# What each action needs, on one job or many (POST jobs/actions/): from the one registry.
ACTION_PERMISSIONS = {name: a.perm for name, a in job_actions.ACTIONS.items()}


class JobPermission(BasePermission):
    """The permission a view or viewset action needs: `view.job_permissions[action]`,
    else `view.job_permission`, else view_job for safe methods and nothing else."""

    def required(self, view, request) -> str | None:
        per_action = getattr(view, "job_permissions", {})
        action = getattr(view, "action", None)
        if action in per_action:
            return per_action[action]
        if getattr(view, "job_permission", None):
            return view.job_permission
        return VIEW if request.method in SAFE_METHODS else None

    def has_permission(self, request, view) -> bool:
        perm = self.required(view, request)
        if perm == VIEW and conf.get().API_PUBLIC_READ:
            return True
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if not _handles(view, request):
            return True  # DRF answers 405 Method Not Allowed
        return perm is not None and has_perm(user, perm)


def may_view_jobs(user) -> bool:
    """Whether `user` may see jobs through the API (GET jobs/ and jobs/{id}/): view_job, or
    anyone under JOB_API_PUBLIC_READ. Every such user sees every job (there is no per-user
    ownership of jobs); a user who may not names no job in `after` either: each id is
    answered as a job that does not exist (services/dependencies.py)."""
    if conf.get().API_PUBLIC_READ:
        return True
    return bool(user and user.is_authenticated and has_perm(user, VIEW))


def _handles(view, request) -> bool:
    """Whether the view has a handler for the request's method (a viewset binds one per
    method its router mapped to an action)."""
    return getattr(view, request.method.lower(), None) is not None


class JobActionPermission(BasePermission):
    """POST jobs/actions/: the user must hold one of the actions' permissions to be heard;
    the view then checks the one its `action` needs (`has_action_permission`), once the body
    says which."""

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return any(has_perm(user, perm) for perm in set(ACTION_PERMISSIONS.values()))


def has_action_permission(user, action: str) -> bool:
    return has_perm(user, ACTION_PERMISSIONS[action])


def may_select(user) -> bool:
    """Whether `user` may choose jobs by what they hold (a filter) or take every job: a bulk
    action by filter or `all` needs the reads' permission too.

    What such a request answers (which jobs it did, which it refused and why, how many) tells
    which jobs match: by `search`, what their payloads and errors contain. Without view_job
    that is an oracle, a payload read a character at a time. By ids, a bulk action tells no
    more than the single-job endpoints (404, 409 with the status) already do."""
    return conf.get().API_PUBLIC_READ or has_perm(user, VIEW)


def check_may_select(user, action: str) -> None:
    """403 (nothing matched, nothing changed) unless `may_select(user)`."""
    if not may_select(user):
        raise PermissionDenied(
            f"{action} by filter or on every job needs the view_job permission too (a filter "
            "reads the jobs it matches); without it, give the jobs' ids.")
