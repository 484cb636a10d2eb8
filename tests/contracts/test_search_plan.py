"""The job search's cost, read from PostgreSQL's plans: the text search is served by the
trigram indexes (job_search_text_trgm_idx on the payload's text in its side table,
jobs_last_error_trgm_idx), never a sequential scan of `jobs`; a search for rare text reads a number of pages that does not grow with the table, and
one for text of common trigrams a small share of it.

The normal suite runs it at 20,000 jobs (the plan's shape and the index use);
SEARCH_PLAN_FULL=1 (marked slow) at 1,000,000 jobs (37,000 pages), where the same fixed bound
for rare text holds and a sequential scan would read every page.
"""
import json
import os

import pytest
from django.db import connection

from django_pg_jobqueue import selectors
from django_pg_jobqueue.api.filters import JobFilter

pytestmark = pytest.mark.django_db

# The most pages (8 kB) a search for a rare text may read, index and heap together, at any size.
MAX_PAGES_READ = 400
# And per job found by its payload: its row's page in job_search_text, a descent of `jobs`'
# primary key for its id (3 levels at a million jobs), its page of `jobs`, and one spare.
PAGES_PER_PAYLOAD_MATCH = 6

# Finished jobs of every day's shape: most succeeded, one in 50 failed with a common error;
# three old failed ones (the lowest ids) carry the needle.
GENERATE_JOBS = """
INSERT INTO jobs (type, queue, payload, status, attempts, max_attempts, available_at,
                  created_at, updated_at, started_at, finished_at, last_error)
SELECT 'noop', 'default',
       jsonb_build_object('to', 'user' || g || '@example.com', 'order', g, 'sku', 'A-' || g %% 997),
       CASE WHEN g %% 50 = 0 OR g <= 3 THEN 'failed' ELSE 'succeeded' END, 1, 1,
       now(), now(), now(), now(), now(),
       CASE WHEN g <= 3 THEN 'CardError: card declined by the issuer'
            WHEN g %% 50 = 0 THEN 'TimeoutError: upstream took too long' END
FROM generate_series(1, %s) AS g
"""
# Their payloads' searchable text, as the enqueue writes it (sql.ENQUEUE_MANY's search_text).
COPY_SEARCH_TEXT = """
INSERT INTO job_search_text (job_id, payload_text)
SELECT id, payload::text FROM jobs WHERE payload <> '{}'::jsonb
"""


def _nodes(plan):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _explain(qs) -> dict:
    query, params = qs.query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query, params)
        (plan,) = cur.fetchone()
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def _pages_read(plan: dict) -> int:
    return plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)


def _searched(params: dict):
    filterset = JobFilter(data=params, queryset=selectors.job_list(), request=None)
    assert filterset.is_valid(), filterset.errors
    return filterset.qs


def check_search_plan(rows: int) -> None:
    with connection.cursor() as cur:
        cur.execute(GENERATE_JOBS, [rows])
        cur.execute(COPY_SEARCH_TEXT)
        for index in ("job_search_text_trgm_idx", "jobs_last_error_trgm_idx"):
            cur.execute("SELECT gin_clean_pending_list(%s::regclass)", [index])
        cur.execute("ANALYZE jobs, job_search_text")
        cur.execute("SELECT pg_relation_size('jobs') / 8192")
        (table_pages,) = cur.fetchone()

    # (search, jobs it finds, pages it may read). Rare text: a fixed bound (plus a few pages
    # per job found). Text made of trigrams that most jobs hold ("user", "123"): the posting lists
    # of those trigrams are read, a small share of the table (measured at a million jobs: 158 to
    # 781 pages of 37,776 in the side table's design, 680 to 841 in the job row's), never the
    # table.
    common = max(MAX_PAGES_READ, table_pages // 20)
    for params, expected, bound in [
        ({"search": "card declined", "status": "failed"}, 3, MAX_PAGES_READ + 3),
        ({"search": "A-996\""}, rows // 997,
         MAX_PAGES_READ + PAGES_PER_PAYLOAD_MATCH * (rows // 997)),
        ({"search": "user1234567890@", "status": "failed"}, 0, common),
    ]:
        qs = _searched(params)
        for label, plan in [("page", _explain(qs.order_by("-id")[:25])),
                            ("count", _explain(qs.order_by()))]:
            nodes = list(_nodes(plan))
            shown = json.dumps(plan, indent=1)[:4000]
            assert not any(n["Node Type"] == "Seq Scan" for n in nodes), (label, shown)
            assert not any(n["Node Type"] == "Seq Scan" and n.get("Relation Name") ==
                           "job_search_text" for n in nodes), (label, shown)
            if label == "count":  # every match is visited: through both trigram indexes
                used = {n.get("Index Name") for n in nodes
                        if n["Node Type"] == "Bitmap Index Scan"}
                assert {"job_search_text_trgm_idx", "jobs_last_error_trgm_idx"} <= used, shown
                # the payload's matches, as job ids, join the last error's in one BitmapOr on
                # `jobs` (the primary key's `id = ANY(...)`), not a filter over every job
                assert any(n["Node Type"] == "BitmapOr" for n in nodes), shown
            # (the page may instead walk the primary key backwards until it has 25 matches,
            # when the planner expects many: bounded all the same)
            pages = _pages_read(plan)
            print(f"search plan, {rows:,} jobs ({table_pages:,} pages): {params['search']!r} "
                  f"{label}: {pages} pages read")
            assert pages <= bound, (label, params, pages, table_pages, shown)
        assert qs.count() == expected, params


def test_the_search_is_served_by_the_trigram_indexes():
    check_search_plan(20_000)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("SEARCH_PLAN_FULL"),
                    reason="a million jobs: SEARCH_PLAN_FULL=1")
@pytest.mark.timeout(1200)
def test_the_search_reads_a_bounded_number_of_pages_at_a_million_jobs():
    check_search_plan(1_000_000)


def test_the_payload_filter_is_served_by_the_containment_index():
    """`?payload=path:value` reads job_search_text_payload_idx (GIN, jsonb_path_ops, on the side
    table's copy of the payload), never a pass over `jobs` or the side table: its page and its
    count read a bounded number of pages for a value few jobs hold."""
    rows = 20_000
    with connection.cursor() as cur:
        cur.execute(GENERATE_JOBS, [rows])
        cur.execute(COPY_SEARCH_TEXT)
        cur.execute("SELECT gin_clean_pending_list('job_search_text_payload_idx'::regclass)")
        cur.execute("ANALYZE jobs, job_search_text")
    for params, expected in [({"payload": "order:1234"}, 1),
                             ({"payload": 'sku:"A-996"'}, rows // 997),
                             ({"payload": 'sku:"A-996"', "status": "failed"}, 0)]:
        qs = _searched(params)
        for label, plan in [("page", _explain(qs.order_by("-id")[:25])),
                            ("count", _explain(qs.order_by()))]:
            nodes = list(_nodes(plan))
            shown = json.dumps(plan, indent=1)[:4000]
            assert not any(n["Node Type"] == "Seq Scan" for n in nodes), (label, shown)
            assert "job_search_text_payload_idx" in {n.get("Index Name") for n in nodes}, shown
            assert _pages_read(plan) <= MAX_PAGES_READ + PAGES_PER_PAYLOAD_MATCH * expected, (
                label, params, _pages_read(plan), shown)
        assert qs.count() == expected, params
