"""What JOB_SHARDS refuses before anything is written (tests/system/test_shards.py runs the
shards themselves): a job that would wait for a job or an item of another shard, naming
`after` (and the item's index), and a batch with a member in a shard's queue, naming `jobs`."""
import pytest

from django_pg_jobqueue import enqueue, enqueue_batch, enqueue_many
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.models import Job

pytestmark = [pytest.mark.django_db,
              pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")]

SHARD_B_JOB = 2**44 + 7  # an id of shard 1's range


@pytest.fixture(autouse=True)
def shard_b(settings):
    settings.DATABASES = {**settings.DATABASES, "shard_b": dict(settings.DATABASES["default"])}
    settings.DATABASE_ROUTERS = ["django_pg_jobqueue.routers.JobQueueRouter"]
    settings.JOB_SHARDS = {"shard_b": {"number": 1, "queues": ["emails"]}}


@pytest.mark.parametrize("queue, after", [("default", SHARD_B_JOB), ("emails", 7)])
def test_a_job_cannot_wait_for_a_job_of_another_shard(queue, after):
    with pytest.raises(InvalidJobArgument) as refused:
        enqueue("noop", queue=queue, after=[after])
    assert refused.value.argument == "after" and "own shard" in str(refused.value)
    assert not Job.objects.exists()


def test_an_item_cannot_wait_for_an_item_of_another_shard():
    with pytest.raises(InvalidJobArgument) as refused:
        enqueue_many([{"type": "noop"}, {"type": "noop", "queue": "emails"},
                      {"type": "noop", "queue": "emails", "after": [{"item": 0}]}])
    assert (refused.value.argument, refused.value.index) == ("after", 2)
    assert not Job.objects.exists()


def test_a_batch_keeps_to_the_queue_database():
    with pytest.raises(InvalidJobArgument) as refused:
        enqueue_batch([{"type": "noop"}, {"type": "noop", "queue": "emails"}])
    assert (refused.value.argument, refused.value.index) == ("jobs", 1)
    assert not Job.objects.exists()
