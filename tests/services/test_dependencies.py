"""Job dependencies: a job enqueued after=[...] runs only once every job it waits for
succeeded; a permanent failure or a cancel of one cancels it (or, asked, lets it run)."""
import pytest
from django.core.management import call_command
from django.db.models import Q

from django_pg_jobqueue import services, sql
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.models import HistoryEvent, Job, JobDependency
from django_pg_jobqueue.services.dependencies import settle_waiting
from django_pg_jobqueue.services.pruning import prune
from django_pg_jobqueue.states import Status
from django_pg_jobqueue.worker.reaper import Reaper
from tests.utils import spawn_workers, wait_until_jobs

pytestmark = pytest.mark.django_db


def _run(job: Job, *, fail: bool = False) -> None:
    [claimed] = services.claim(worker_ids=["w"], job_ids=[job.id])
    if fail:
        services.fail(claimed.id, claimed.lease_token, worker_id="w", error="boom", permanent=True)
    else:
        services.complete(claimed.id, claimed.lease_token, worker_id="w", result=None)


def _status(job: Job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def _kinds(job: Job) -> list[str]:
    return list(HistoryEvent.objects.filter(job_id=job.pk).order_by("id").values_list("kind", flat=True))


def test_a_job_enqueued_after_another_waits_and_is_not_claimed_until_it_succeeded():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])

    assert b.status == "waiting" and _status(b) == "waiting"
    assert [c.id for c in services.claim(worker_ids=["w1", "w2"])] == [a.id], "b is not claimed"
    assert HistoryEvent.objects.get(job_id=b.id, kind="blocked").message == f"waiting for job {a.id}"
    lease = Job.objects.get(pk=a.pk).lease_token
    services.complete(a.id, lease, worker_id="w1", result=None)

    assert _status(b) == "queued"
    assert _kinds(b) == ["created", "blocked", "unblocked"]
    assert [c.id for c in services.claim(worker_ids=["w1"])] == [b.id]


def test_a_group_then_a_final_job_in_one_enqueue_many():
    items = [{"type": "noop", "payload": {"n": n}} for n in range(3)]
    items.append({"type": "noop", "payload": {"final": True},
                  "after": [{"item": 0}, {"item": 1}, {"item": 2}]})
    *group, final = services.enqueue_many(items)

    assert final.status == "waiting"
    assert sorted(JobDependency.objects.filter(job_id=final.id)
                  .values_list("depends_on_id", flat=True)) == [g.id for g in group]
    for job in group[:2]:
        _run(job)
        assert _status(final) == "waiting", "not before the whole group succeeded"
    _run(group[2])
    assert _status(final) == "queued"


def test_a_permanent_failure_cancels_the_chain_behind_it_with_the_reason():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a])
    c = services.enqueue("noop", after=[b])

    _run(a, fail=True)

    assert (_status(b), _status(c)) == ("cancelled", "cancelled")
    reason = HistoryEvent.objects.get(job_id=b.id, kind="cancelled")
    assert reason.message == f"cancelled: job {a.id}, which it waited for, failed"
    assert reason.data == {"reason": "dependency_failed", "dependency_id": a.id}
    assert HistoryEvent.objects.get(job_id=c.id, kind="cancelled").message == (
        f"cancelled: job {b.id}, which it waited for, was cancelled")


def test_a_retried_attempt_is_not_a_failure_for_the_jobs_waiting():
    a = services.enqueue("noop", max_attempts=2)
    b = services.enqueue("noop", after=[a.id])
    [claimed] = services.claim(worker_ids=["w"], job_ids=[a.id])
    services.fail(claimed.id, claimed.lease_token, worker_id="w", error="transient")
    assert (_status(a), _status(b)) == ("queued", "waiting")


def test_after_failure_run_lets_the_job_run_once_every_dependency_finished():
    ok, bad = services.enqueue("noop"), services.enqueue("noop")
    cleanup = services.enqueue("noop", after=[ok.id, bad.id], after_failure="run")
    _run(bad, fail=True)
    assert _status(cleanup) == "waiting", "one is still to finish"
    _run(ok)
    assert _status(cleanup) == "queued"


def test_cancelling_a_dependency_cancels_its_dependants_and_a_waiting_job_can_be_cancelled():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    c = services.enqueue("noop", after=[a.id])
    services.cancel(c.id)
    assert _status(c) == "cancelled"
    services.cancel(a.id)
    assert _status(b) == "cancelled"
    assert "waited for, was cancelled" in HistoryEvent.objects.get(job_id=b.id, kind="cancelled").message


def test_waiting_for_jobs_that_already_finished():
    done, failed = services.enqueue("noop"), services.enqueue("noop")
    _run(done)
    _run(failed, fail=True)
    assert services.enqueue("noop", after=[done.id]).status == "queued"
    late = services.enqueue("noop", after=[failed.id])
    assert late.status == "cancelled" and late.finished_at is not None
    assert services.enqueue("noop", after=[failed.id], after_failure="run").status == "queued"


def test_a_job_can_wait_only_for_jobs_that_exist_so_no_cycle_can_form():
    a = services.enqueue("noop")
    with pytest.raises(InvalidJobArgument, match="job 999999 does not exist") as caught:
        services.enqueue("noop", after=[a.id, 999999])
    assert caught.value.argument == "after"
    with pytest.raises(InvalidJobArgument) as in_batch:
        services.enqueue_many([{"type": "noop"}, {"type": "noop", "after": [999999]}])
    assert in_batch.value.index == 1
    with pytest.raises(InvalidJobArgument, match="earlier item"):
        services.enqueue_many([{"type": "noop", "after": [{"item": 1}]}, {"type": "noop"}])
    assert Job.objects.count() == 1 and not JobDependency.objects.exists()


@pytest.mark.parametrize("after, after_failure, message", [
    (5, None, "must be a list"),
    (["5"], None, "must list job ids"),
    ([True], None, "must list job ids"),
    ([0], None, "is not a job id"),
    ([{"item": 0}], None, "same enqueue_many"),
    ([1], "ignore", "must be one of cancel, run"),
])
def test_bad_after_arguments_are_refused_naming_them(after, after_failure, message):
    with pytest.raises(InvalidJobArgument, match=message) as caught:
        services.enqueue("noop", after=after, after_failure=after_failure)
    assert caught.value.argument == ("after_failure" if after_failure else "after")


def test_the_sweep_settles_what_no_completion_did():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    # As if the worker died between its completion and the settle that follows it.
    Job.objects.filter(pk=a.pk).update(status="succeeded", finished_at=a.created_at)
    assert _status(b) == "waiting"

    assert Reaper().run_once() == {"waiting_queued": 1}
    assert _status(b) == "queued"
    assert settle_waiting() == {}


def test_a_unique_job_waiting_for_another_still_holds_its_key():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id], unique={"key": "k"})
    assert services.enqueue("noop", unique={"key": "k"}).id == b.id


def test_audit_accepts_the_new_transitions(capsys):
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    c = services.enqueue("noop", after=[b.id])
    _run(a)
    _run(b, fail=True)
    assert (_status(b), _status(c)) == ("failed", "cancelled")
    call_command("audit_jobs")  # raises CommandError on any violation


def test_pruning_a_job_deletes_what_it_waited_for_but_not_what_waits_for_it():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    _run(a)
    _run(b)
    Job.objects.filter(pk__in=[a.pk, b.pk]).update(finished_at=a.created_at.replace(year=2001))
    prune("1d")
    assert not Job.objects.exists() and not JobDependency.objects.exists()


# -- the API ------------------------------------------------------------------------------------

JOBS = "/api/v1/jobs/"


@pytest.fixture
def api(make_user, client_for):
    return client_for(make_user("ops", perms=["add_job", "view_job", "change_job"]))


def test_the_api_enqueues_a_group_and_a_final_job_and_shows_both_sides(api):
    response = api.post(JOBS + "bulk/", {"jobs": [
        {"type": "noop"}, {"type": "noop"},
        {"type": "noop", "after": [{"item": 0}, {"item": 1}], "after_failure": "cancel"}]},
        format="json")
    assert response.status_code == 201, response.json()
    first, second, final = response.json()["jobs"]
    assert final["status"] == "waiting"

    detail = api.get(f"{JOBS}{final['id']}/").json()
    assert [d["id"] for d in detail["dependencies"]] == [first["id"], second["id"]]
    assert detail["dependencies"][0] == {"id": first["id"], "type": "noop", "status": "queued",
                                         "on_failure": "cancel"}
    assert detail["dependants"] == []
    upstream = api.get(f"{JOBS}{first['id']}/").json()
    assert upstream["dependants"] == [{"id": final["id"], "type": "noop", "status": "waiting",
                                       "on_failure": "cancel"}]
    single = api.post(JOBS, {"type": "noop", "after": [final["id"]]}, format="json")
    assert single.status_code == 201 and single.json()["status"] == "waiting"


def test_the_api_refuses_bad_dependencies_with_400(api):
    assert api.post(JOBS, {"type": "noop", "after": [123456789]},
                    format="json").status_code == 400
    assert api.post(JOBS, {"type": "noop", "after": [{"item": 0}]},
                    format="json").status_code == 400
    assert api.post(JOBS, {"type": "noop", "after": "1"}, format="json").status_code == 400
    assert api.post(JOBS, {"type": "noop", "after_failure": "x"}, format="json").status_code == 400
    assert not Job.objects.exists()


def test_the_claim_statement_is_unchanged_by_dependencies():
    assert "waiting" not in sql.CLAIM and "job_dependencies" not in sql.CLAIM


# -- real worker processes ----------------------------------------------------------------------
# The reaper's interval is an hour: its sweep (which would settle a dependant that no
# completion did) never runs while these jobs do, so each unblock was the completion's own.
WORKER_ENV = {"JOB_POLL_INTERVAL_SECONDS": "0.05", "JOB_REAPER_INTERVAL_SECONDS": "3600"}


def _workers(processes: int, threads: int):
    return [spawn_workers("--threads", str(threads), env=WORKER_ENV) for _ in range(processes)]


def _stop(procs) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=60)


def _rows(jobs):
    return {j.id: j for j in Job.objects.filter(pk__in=[x.id for x in jobs])}


@pytest.mark.django_db(transaction=True)
def test_workers_run_a_chain_in_order_and_a_group_before_its_final_job():
    a = services.enqueue("sleep", {"seconds": 0.2})
    b = services.enqueue("sleep", {"seconds": 0.2}, after=[a.id])
    c = services.enqueue("noop", after=[b.id])
    items = [{"type": "sleep", "payload": {"seconds": 0.1 * (n % 3)}} for n in range(10)]
    items.append({"type": "noop", "after": [{"item": n} for n in range(10)]})
    *group, final = services.enqueue_many(items)
    procs = _workers(2, 4)
    try:
        wait_until_jobs("succeeded", count=14, timeout=90, message="the chain and the group done")
    finally:
        _stop(procs)
    rows = _rows([a, b, c, final, *group])
    assert rows[a.id].finished_at <= rows[b.id].started_at
    assert rows[b.id].finished_at <= rows[c.id].started_at
    assert max(rows[g.id].finished_at for g in group) <= rows[final.id].started_at
    assert rows[final.id].attempts == 1
    assert _started(final) == 1


def _started(job) -> int:
    """How many attempts of `job` started: the claim writes no event, each attempt's outcome
    carries its start (and a `claimed` event, before, was one)."""
    return HistoryEvent.objects.filter(job_id=job.id).filter(
        Q(kind="claimed") | Q(data__has_key="started_at")).count()


@pytest.mark.django_db(transaction=True)
def test_a_permanent_failure_in_a_group_cancels_its_final_job_under_real_workers():
    items = [{"type": "noop"} for _ in range(9)]
    items.append({"type": "fail", "payload": {"permanent": True}})
    items.append({"type": "noop", "after": [{"item": n} for n in range(10)]})
    *group, final = services.enqueue_many(items)
    procs = _workers(2, 4)
    try:
        wait_until_jobs("cancelled", pk=final.pk, timeout=60, message="the final job cancelled")
        wait_until_jobs("succeeded", count=9, timeout=30)
    finally:
        _stop(procs)
    event = HistoryEvent.objects.get(job_id=final.id, kind="cancelled")
    assert event.message == f"cancelled: job {group[-1].id}, which it waited for, failed"
    assert _started(final) == 0


@pytest.mark.django_db(transaction=True)
def test_no_final_job_is_lost_when_many_workers_finish_its_group_at_once():
    finals = []
    for _ in range(20):
        items = [{"type": "noop"} for _ in range(10)]
        items.append({"type": "noop", "payload": {"final": True},
                      "after": [{"item": n} for n in range(10)]})
        finals.append(services.enqueue_many(items)[-1])
    procs = _workers(2, 8)
    try:
        wait_until_jobs("succeeded", count=220, timeout=120,
                        message="every group and every final job done, without the sweep")
    finally:
        _stop(procs)
    assert not Job.objects.filter(status="waiting").exists()
    for final in finals:
        assert HistoryEvent.objects.filter(job_id=final.id, kind="unblocked").count() == 1
        assert _started(final) == 1


def test_the_dependants_of_a_job_ended_by_a_release_are_settled_at_once(settings):
    # Failed for good because no worker knows its type, or cancelled as it was given back at a
    # shutdown after its cancel was asked: the jobs waiting for it are cancelled by the
    # release itself (services/finishing.py), not left to the reaper's sweep.
    settings.JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS = 0
    unknown = services.enqueue("noop", {"n": "a"})
    asked = services.enqueue("noop", {"n": "b"})
    after_unknown = services.enqueue("noop", {"n": "c"}, after=[unknown.id])
    after_asked = services.enqueue("noop", {"n": "d"}, after=[asked.id])
    first, second = services.claim(worker_ids=["w-1", "w-2"], job_ids=[unknown.id, asked.id])
    held = {first.id: first, second.id: second}
    services.release_unknown_type(unknown.id, held[unknown.id].lease_token, worker_id="w-1",
                                  job_type="noop")
    services.cancel(asked.id)
    services.release_many([(asked.id, held[asked.id].lease_token, "w-2")])
    assert Job.objects.get(pk=after_unknown.id).status == Status.CANCELLED
    assert Job.objects.get(pk=after_asked.id).status == Status.CANCELLED
