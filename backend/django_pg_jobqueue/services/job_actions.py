"""The operator's actions on a job, one entry each: the one list every surface reads.

An entry names the action (the same word for the service, the API action, the admin action
and the dashboard button), the service that performs it on one job
(`service(job_id, *, actor)`, raising InvalidTransition or JobNotFound when it may not), the
Job model permission it needs, the admin's label and message, which jobs it takes (for the
API's help text) and the event kinds it records.

Read by:
- services/bulk_actions.py: an action on many jobs (POST /api/v1/jobs/actions/);
- api/permissions.py: the permission each action needs, for one job and for many;
- api/jobs/actions.py: the bulk action's choices; api/auth.py: the user's `can` flags;
- admin.py: an admin action per entry.

Adding an action is one entry here (and its service); a single-job endpoint
(POST /api/v1/jobs/{id}/<name>/) is a three-line `@action` in api/jobs/views.py that calls it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..states import EventKind
from . import deleting, operations, rerunning

APP = "django_pg_jobqueue"


@dataclass(frozen=True)
class JobAction:
    name: str
    service: Callable[..., object]
    permission: str          # a Job model permission's codename: change_job, delete_job, ...
    label: str               # the admin's action label
    done: str                # the admin's message: "<done> N job(s)."
    takes: str               # which jobs it applies to (the others are refused)
    events: tuple[str, ...]  # the event kinds it records on a job

    @property
    def perm(self) -> str:
        """The permission as `user.has_perm` takes it."""
        return f"{APP}.{self.permission}"

    @property
    def admin_permission(self) -> str:
        """The admin's name for it (`ModelAdmin.has_<name>_permission`)."""
        return self.permission.removesuffix("_job")


ACTIONS: dict[str, JobAction] = {a.name: a for a in (
    JobAction("cancel", operations.cancel, "change_job", "Cancel the selected jobs",
              "Cancelled (or asked to stop)", "queued or running jobs",
              (EventKind.CANCELLED, EventKind.CANCEL_REQUESTED)),
    JobAction("retry", operations.retry, "change_job",
              "Retry the selected jobs (failed or cancelled)", "Retried",
              "failed or cancelled jobs", (EventKind.RETRIED,)),
    JobAction("rerun", rerunning.rerun, "change_job",
              "Re-run the selected succeeded jobs (each as a new copy)", "Re-ran (as new copies)",
              "succeeded jobs (each enqueued again as a new job)", ()),
    JobAction("run_now", operations.run_now, "change_job",
              "Run the selected delayed jobs now", "Made runnable now",
              "queued or waiting jobs (a delayed one runs at once; a due one is left as it is)",
              (EventKind.EDITED,)),
    JobAction("delete", deleting.delete, "delete_job",
              "Delete the selected finished jobs (with their events)", "Deleted",
              "finished jobs: succeeded, failed or cancelled", ()),
)}


def get(name: str) -> JobAction:
    """The action named `name`; ValueError naming the known ones otherwise."""
    try:
        return ACTIONS[name]
    except KeyError:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}; got {name!r}") from None
