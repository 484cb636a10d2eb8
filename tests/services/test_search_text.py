"""The search's side table (job_search_text): a job's payload text is written once, by the
enqueue's own statement, for a non-empty payload only; the claim and the completion leave it
alone; every path that deletes a job deletes it; audit_jobs reports one left behind."""
import importlib
from datetime import timedelta

import pytest
from django.db import connection

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.exceptions import InvalidTransition
from django_pg_jobqueue.models import Job, JobSearchText
from django_pg_jobqueue.services.deleting import delete
from django_pg_jobqueue.services.lifecycle import Completion
from django_pg_jobqueue.services.pruning import prune
from tests.services.test_pruning import make_jobs

pytestmark = pytest.mark.django_db


def texts(ids) -> dict:
    return dict(JobSearchText.objects.filter(job_id__in=ids).values_list("job_id", "payload_text"))


def payload_text(job_id) -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT payload::text FROM jobs WHERE id = %s", [job_id])
        return cur.fetchone()[0]


def test_a_single_and_a_bulk_enqueue_write_the_payloads_json_text_once():
    one = services.enqueue("noop", {"to": "Ada@example.com", "n": [1, 2]})
    many = services.enqueue_many([{"type": "noop", "payload": {"i": i, "s": "x" * i}}
                                  for i in range(5)])
    ids = [one.id, *(j.id for j in many)]
    assert texts(ids) == {i: payload_text(i) for i in ids}  # jsonb's own text, as searched


def test_an_empty_payload_writes_no_row_and_no_search_can_match_it():
    """`{}` is two characters; a text search needs three (selectors.SEARCH_MIN_TEXT_CHARS)."""
    empty = services.enqueue("noop", {})
    [bulk_empty] = services.enqueue_many([{"type": "noop", "payload": {}}])
    assert texts([empty.id, bulk_empty.id]) == {}
    assert audit(job_ids=[empty.id, bulk_empty.id]).ok


def test_a_keyed_enqueue_that_finds_its_job_writes_no_second_row():
    first = services.enqueue("noop", {"n": 1}, unique={"key": "sync:acme"})
    again = services.enqueue("noop", {"n": 2}, unique={"key": "sync:acme"})
    keyed = services.enqueue_many([{"type": "noop", "payload": {"n": 3},
                                    "idempotency_key": "k-1"}] * 2)
    assert again.id == first.id and keyed[0].id == keyed[1].id
    assert texts([first.id, keyed[0].id]) == {first.id: '{"n": 1}', keyed[0].id: '{"n": 3}'}
    assert JobSearchText.objects.count() == 2


def test_the_claim_and_the_completion_do_not_rewrite_the_row():
    job = services.enqueue("noop", {"n": 1})
    with connection.cursor() as cur:
        cur.execute("SELECT xmin::text FROM job_search_text WHERE job_id = %s", [job.id])
        (written_by,) = cur.fetchone()
        [claimed] = services.claim(worker_ids=["w1"], job_ids=[job.id])
        services.complete_many([Completion(claimed.id, claimed.lease_token, "w1", {"ok": 1})])
        cur.execute("SELECT xmin::text FROM job_search_text WHERE job_id = %s", [job.id])
        assert cur.fetchone() == (written_by,)
    assert Job.objects.get(pk=job.id).status == "succeeded"


def test_the_operator_delete_deletes_the_jobs_search_text_and_a_refused_one_keeps_it():
    [done] = make_jobs(1, "succeeded")
    [running] = make_jobs(1, "running")
    delete(done)
    with pytest.raises(InvalidTransition):
        delete(running)
    assert texts([done, running]) == {running: payload_text(running)}


def test_the_pruner_deletes_the_pruned_jobs_search_text_only():
    old = make_jobs(3, "succeeded", finished_ago=timedelta(days=10))
    kept = make_jobs(2, "succeeded", finished_ago=timedelta(hours=1))
    prune(timedelta(days=7))
    assert set(texts(old + kept)) == set(kept)
    assert audit().ok


def test_a_delete_through_the_orm_takes_the_search_text_with_it():
    [done] = make_jobs(1, "succeeded")
    Job.objects.filter(pk=done).delete()
    assert texts([done]) == {}


def test_audit_reports_a_row_left_behind_a_missing_one_and_a_different_one():
    gone, missing, different = (services.enqueue("noop", {"n": n}).id for n in range(3))
    with connection.cursor() as cur:
        cur.execute("UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE id = %s",
                    [gone])
        cur.execute("DELETE FROM job_events WHERE job_id = %s", [gone])
        cur.execute("DELETE FROM jobs WHERE id = %s", [gone])  # not the library's statement
        cur.execute("DELETE FROM job_search_text WHERE job_id = %s", [missing])
        # Still JSON: job_search_text_payload_idx casts the text to jsonb (migration 0026).
        cur.execute("""UPDATE job_search_text SET payload_text = '{"n": 99}' WHERE job_id = %s""",
                    [different])
    report = audit()
    found = {(v.job_id, v.message.split(" ")[0]) for v in report.violations
             if v.check == "search_text"}
    assert found == {(gone, "a"), (missing, "no"), (different, "its")}
    assert [(v.check, v.job_id) for v in audit(job_ids=[missing]).violations] == [
        ("search_text", missing)]


def index_names() -> set:
    with connection.cursor() as cur:
        cur.execute("SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                    " WHERE c.relname LIKE '%%trgm_idx' AND i.indisvalid")
        return {name for (name,) in cur.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_the_migration_copies_every_non_empty_payload_in_batches_and_goes_back(monkeypatch):
    """0016 backwards: the table gone, jobs_payload_trgm_idx back; forwards again, over what an
    interrupted run left (batches of 2 here, so several): a row per job with a non-empty
    payload, its JSON text; the payload's trigram index on the side table, none on `jobs`."""
    from django.db.migrations.executor import MigrationExecutor

    migration = importlib.import_module("django_pg_jobqueue.migrations.0016_search_side_table")
    monkeypatch.setattr(migration, "BATCH", 2)
    app = "django_pg_jobqueue"
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes(app)
    jobs = [services.enqueue("noop", payload).id
            for payload in ({"a": 1}, {}, {"b": "Ünïcode 100%"}, {}, {"c": [1, {"d": None}]})]
    with_payload = [jobs[0], jobs[2], jobs[4]]
    try:
        executor.migrate([(app, "0014_throttle_windows")])
        with connection.cursor() as cur:
            cur.execute("SELECT to_regclass('job_search_text')")
            assert cur.fetchone() == (None,)
        assert index_names() >= {"jobs_payload_trgm_idx", "jobs_last_error_trgm_idx"}
        # As a run interrupted after the table and a first batch left them:
        with connection.cursor() as cur:
            cur.execute(migration.CREATE_JOB_SEARCH_TEXT)
            cur.execute("INSERT INTO job_search_text VALUES (%s, %s)",
                        [jobs[0], payload_text(jobs[0])])
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
    assert texts(jobs) == {i: payload_text(i) for i in with_payload}
    names = index_names()
    assert "job_search_text_trgm_idx" in names and "jobs_payload_trgm_idx" not in names
    assert audit().ok


def test_the_search_finds_exactly_the_jobs_the_payloads_own_text_matches():
    """The side table's text is the job row's `payload::text`: for every search, the jobs
    found are those the expression of migration 0012 (`payload::text ILIKE ... OR last_error
    ILIKE ...`, over `jobs` itself) finds."""
    from django_pg_jobqueue import selectors

    payloads = [{}, {"to": "Ada.Lovelace@example.com"}, {"rate": "100%_off"}, {"p": "a\\b"},
                {"ünï": "ÇODE {}"}, {"n": [1, 2, {"x": None}]}, {"s": "{}{}"}, {"q": '"quoted"'}]
    ids = [services.enqueue("noop", p).id for p in payloads]
    with connection.cursor() as cur:
        cur.execute("UPDATE jobs SET last_error = %s WHERE id = %s",
                    ["CardError: 100% declined", ids[0]])
    matched = 0
    for value in ["ada.lovelace", "100%_", "100%", "a\\b", "a\\\\b", "ünï", "çode {}", "{}{}",
                  '"n": [1', "null", '"quoted"', "declined", "nothing like it", '": "']:
        pattern = selectors._like_pattern(value.strip())
        with connection.cursor() as cur:
            cur.execute("SELECT id FROM jobs WHERE payload::text ILIKE %s OR last_error ILIKE %s",
                        [pattern, pattern])
            expected = {i for (i,) in cur.fetchall()}
        found = set(Job.objects.filter(selectors.text_search(value)).values_list("id", flat=True))
        assert found == expected, value
        matched += bool(found)
    assert matched >= 9, "most of the searches find something"
