"""A Django task's concurrency key on real `run_job_workers` processes: two processes of four
threads never run two jobs of one task with the same key at once (the key made from the task's
arguments by `@task_options(concurrency_key=...)`, or given by `.using(concurrency_key=...)`),
while jobs of other keys run side by side; checked from the start and end each run logs."""
import importlib
import sys

import pytest

from django_pg_jobqueue.models import Job
from tests.system.test_concurrency_keys_workers import (
    ENV,
    Workers,
    all_succeeded,
    intervals,
    most_at_once,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

MODULE = "tests.handlers.tasks_with_keys"


@pytest.fixture
def keyed():
    sys.modules.pop(MODULE, None)
    yield importlib.import_module(MODULE)
    sys.modules.pop(MODULE, None)


@pytest.fixture
def workers(monkeypatch):
    # The worker processes import the tasks at start-up (a task outside an installed app).
    monkeypatch.setitem(ENV, "JOB_EXTRA_HANDLER_MODULES", f"tests.handlers.serial_handlers,{MODULE}")
    w = Workers()
    yield w
    w.stop()


def test_two_jobs_of_one_task_with_the_same_key_never_run_at_once(keyed, workers):
    seconds = 0.2
    by_key: dict[str, list[int]] = {}
    for customer in (1, 2, 3):
        for _ in range(6):
            result = keyed.sync_customer.enqueue(customer, seconds=seconds)
            by_key.setdefault(f"customer:{customer}", []).append(int(result.id))
    for _ in range(6):  # a key given per call, to a task of the same function
        result = keyed.sync_customer.using(concurrency_key="vip").enqueue(99, seconds=seconds)
        by_key.setdefault("vip", []).append(int(result.id))
    ids = [i for group in by_key.values() for i in group]
    assert dict(Job.objects.filter(id__in=by_key["vip"]).values_list("concurrency_key", "type")
                .distinct()) == {"vip": f"{MODULE}.sync_customer"}
    workers.start(threads=4)
    workers.start(threads=4)
    try:
        all_succeeded(ids, timeout=180)
    except AssertionError:
        raise AssertionError(workers.output()) from None
    runs = intervals(ids)
    assert all(len(runs[i]) == 1 and runs[i][0][1] for i in ids), runs
    for key, group in by_key.items():
        assert most_at_once([runs[i][0] for i in group]) == 1, f"two jobs of {key} ran at once"
    # The keys did not queue behind each other: jobs of different keys overlapped.
    assert most_at_once([runs[i][0] for i in ids]) > 1
