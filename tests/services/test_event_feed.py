"""The global event feed never skips an event, whatever order transactions commit in."""
import threading

import pytest
from django.db import connection, transaction

from django_pg_jobqueue import services
from django_pg_jobqueue.feed import event_ids_after
from django_pg_jobqueue.models import JobEvent
from tests.utils import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_event_committed_after_a_later_id_is_not_skipped():
    first = services.enqueue("noop", {})
    cursor = JobEvent.objects.filter(job_id=first.pk).latest("id").id
    inserted, release = threading.Event(), threading.Event()
    slow_job = {}

    def slow_transaction():
        try:
            with transaction.atomic():
                slow_job["job"] = services.enqueue("noop", {"slow": True})  # takes an id now
                inserted.set()
                release.wait(10)                                           # commits later
        finally:
            connection.close()

    t = threading.Thread(target=slow_transaction)
    t.start()
    assert inserted.wait(10)
    fast = services.enqueue("noop", {"fast": True})  # a higher id, committed first
    fast_event = JobEvent.objects.get(job_id=fast.pk).id

    # While the slow transaction is open, the feed holds back what sorts after it.
    seen = event_ids_after(cursor, limit=100)
    assert fast_event not in seen

    release.set()
    t.join()
    slow_event = JobEvent.objects.get(job_id=slow_job["job"].pk).id
    assert slow_event < fast_event
    # Other transactions on the server may hold the horizon back for a moment: poll.
    seen = wait_for(lambda: (ids := event_ids_after(cursor, limit=100)) and
                    {slow_event, fast_event} <= set(ids) and ids, 10)
    assert seen.index(slow_event) < seen.index(fast_event), "commit order"
    assert set(seen) == {slow_event, fast_event}, "both delivered, none skipped"


def test_feed_pages_through_every_event_in_order():
    jobs = [services.enqueue("noop", {"i": i}) for i in range(25)]
    all_ids = set(JobEvent.objects.filter(job_id__in=[j.pk for j in jobs]).values_list("id", flat=True))
    cursor, got = 0, []

    def poll():
        nonlocal cursor
        page = event_ids_after(cursor, limit=7)
        if page:
            got.extend(page)
            cursor = page[-1]
        return all_ids <= set(got)

    wait_for(poll, 10)  # polls, as a feed's reader does (the horizon moves with other work)
    assert len(got) == len(set(got)), "no event delivered twice"


def test_per_job_feed_only_returns_that_job():
    a = services.enqueue("noop", {})
    services.enqueue("noop", {})  # another job, whose events must not appear
    services.cancel(a.pk)
    ids = event_ids_after(0, limit=100, job_id=a.pk)
    assert set(JobEvent.objects.filter(id__in=ids).values_list("job_id", flat=True)) == {a.pk}
    assert len(ids) == 2  # created, cancelled
