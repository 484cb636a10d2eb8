"""Django's Tasks framework, wherever it comes from: `django.tasks` on Django 6.0 and newer,
the `django-tasks` backport's `django_tasks` module on Django 5.2 (`pip install
'django-pg-jobqueue[tasks]'` brings it there). Chosen once, at import time, by Django's version.

The names the backend and its tests use are re-exported flat, with the backport's spellings
mapped onto Django's (`InvalidTaskError` is `InvalidTask`, `InvalidTaskBackendError` is
`InvalidTaskBackend`); `LOGGER_NAME` is the logger the framework logs task life-cycle lines to
("django.tasks" in Django, "django_tasks" in the backport).
"""
import django

if django.VERSION >= (6, 0):
    from django.tasks import (
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        default_task_backend,
        task,
        task_backends,
    )
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import (
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django.tasks.checks import check_tasks
    from django.tasks.exceptions import (
        InvalidTask,
        InvalidTaskBackend,
        TaskResultDoesNotExist,
        TaskResultMismatch,
    )
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json

    IS_BACKPORT = False
    LOGGER_NAME = "django.tasks"
    IMMEDIATE_BACKEND = "django.tasks.backends.immediate.ImmediateBackend"
    DUMMY_BACKEND = "django.tasks.backends.dummy.DummyBackend"
else:  # Django 5.2: the backport
    try:
        from django_tasks import (
            DEFAULT_TASK_BACKEND_ALIAS,
            DEFAULT_TASK_QUEUE_NAME,
            default_task_backend,
            task,
            task_backends,
        )
    except ImportError as exc:  # pragma: no cover - depends on what is installed
        raise ImportError(
            f"django_pg_jobqueue's Tasks backend needs Django 6.0 or newer, or on Django "
            f"{django.get_version()} the django-tasks backport: pip install "
            "'django-pg-jobqueue[tasks]' (or django-tasks)") from exc
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import (
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django_tasks.checks import check_tasks
    from django_tasks.exceptions import InvalidTaskBackendError as InvalidTaskBackend
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started
    from django_tasks.utils import normalize_json

    IS_BACKPORT = True
    LOGGER_NAME = "django_tasks"
    IMMEDIATE_BACKEND = "django_tasks.backends.immediate.ImmediateBackend"
    DUMMY_BACKEND = "django_tasks.backends.dummy.DummyBackend"

__all__ = [
    "DEFAULT_TASK_BACKEND_ALIAS", "DEFAULT_TASK_QUEUE_NAME", "DUMMY_BACKEND",
    "IMMEDIATE_BACKEND", "IS_BACKPORT", "LOGGER_NAME", "TASK_MAX_PRIORITY", "TASK_MIN_PRIORITY",
    "BaseTaskBackend", "InvalidTask", "InvalidTaskBackend", "Task", "TaskContext", "TaskError",
    "TaskResult", "TaskResultDoesNotExist", "TaskResultMismatch", "TaskResultStatus",
    "check_tasks", "default_task_backend", "normalize_json", "task", "task_backends",
    "task_enqueued", "task_finished", "task_started",
]
