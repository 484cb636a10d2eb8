"""JOB_SHARDS without a second server (tests/system/test_shards.py runs three): the setting's
rule (aliases that exist, distinct numbers, no queue in two shards), the router check, the
routing of a queue and of a job id (pure: no query), and the router on a shard's block."""
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_pg_jobqueue import checks, conf, db, shards
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.routers import JobQueueRouter

ROUTER = "django_pg_jobqueue.routers.JobQueueRouter"
SHARDS = {"shard_b": {"number": 1, "queues": ["emails", "reports*"]},
          "shard_c": {"number": 2, "queues": ["video"]}}

pytestmark = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")


@pytest.fixture
def two_shards(settings):
    default = settings.DATABASES["default"]
    settings.DATABASES = {**settings.DATABASES, "shard_b": dict(default),
                          "shard_c": dict(default)}
    settings.DATABASE_ROUTERS = [ROUTER]
    settings.JOB_SHARDS = SHARDS
    return settings


def problem(value) -> str | None:
    return conf.shard_map(value)


def test_an_id_names_its_shard_by_its_top_bits():
    assert shards.shard_for_job_id(1) == 0
    assert shards.shard_for_job_id(2**44 - 1) == 0
    assert shards.shard_for_job_id(2**44) == 1
    assert shards.id_range(0) == (1, 2**44 - 1)
    assert shards.id_range(3) == (3 * 2**44, 4 * 2**44 - 1)
    # The last shard's ids still fit a JavaScript number exactly.
    assert shards.id_range(shards.MAX_SHARD_NUMBER)[1] == 2**53 - 1
    assert shards.shard_for_job_id(shards.id_range(7)[1]) == 7


def test_without_shards_every_queue_and_id_is_the_queue_database():
    assert conf.get().SHARDS == {}
    assert shards.alias_for_queue("emails") == "default"
    assert shards.alias_for_job_id(5 * 2**44) == "default"
    assert shards.aliases() == [] and checks.check_shards() == []


def test_queues_and_ids_go_to_their_shard(two_shards):
    assert shards.alias_for_queue("emails") == "shard_b"
    assert shards.alias_for_queue("reports") == "shard_b"
    assert shards.alias_for_queue("reports.monthly") == "shard_b"
    assert shards.alias_for_queue("video") == "shard_c"
    assert shards.alias_for_queue("emails2") == "default"
    assert shards.alias_for_queue("default") == "default"
    assert shards.alias_for_job_id(12) == "default"
    assert shards.alias_for_job_id(2**44 + 12) == "shard_b"
    assert shards.alias_for_job_id(2 * 2**44) == "shard_c"
    assert shards.alias_for_job_id(9 * 2**44) == "default"  # no such shard: found nowhere
    assert shards.aliases() == ["shard_b", "shard_c"]
    assert shards.number_of("shard_c") == 2 and shards.number_of("default") == 0
    assert checks.check_shards() == []


def test_the_rule_names_what_is_wrong(two_shards):
    assert problem(SHARDS) is None
    assert "'nowhere' is not an alias" in problem({"nowhere": {"number": 1, "queues": ["a"]}})
    assert "is JOB_DATABASE" in problem({"default": {"number": 1, "queues": ["a"]}})
    assert "number 0" in problem({"shard_b": {"number": 0, "queues": ["a"]}})
    assert "number 512" in problem({"shard_b": {"number": 512, "queues": ["a"]}})
    assert "both have number 1" in problem({"shard_b": {"number": 1, "queues": ["a"]},
                                            "shard_c": {"number": 1, "queues": ["b"]}})
    # A shard without queues is one being retired: its old jobs are still found by id.
    assert problem({"shard_b": {"number": 1, "queues": []}}) is None
    assert "has queues" in problem({"shard_b": {"number": 1, "queues": ["a b"]}})
    assert "has queues" in problem({"shard_b": {"number": 1, "queues": "emails"}})
    assert problem(["shard_b"]) is not None
    for one, other in (("emails", "emails"), ("emails", "em*"), ("rep*", "reports*"),
                       ("*", "video")):
        found = problem({"shard_b": {"number": 1, "queues": [one]},
                         "shard_c": {"number": 2, "queues": [other]}})
        assert "overlap" in found, (one, other)
    # Within one shard, overlapping patterns are harmless.
    assert problem({"shard_b": {"number": 1, "queues": ["emails", "em*"]}}) is None


def test_a_bad_value_is_a_settings_error(two_shards):
    two_shards.JOB_SHARDS = {"shard_b": {"number": 1, "queues": ["a"]},
                             "shard_c": {"number": 2, "queues": ["a"]}}
    [error] = conf.check_settings()
    assert error.id == "django_pg_jobqueue.E122" and "overlap" in error.msg
    with pytest.raises(ImproperlyConfigured, match="JOB_SHARDS"):
        conf.get()


def test_shards_need_the_router(two_shards):
    with override_settings(DATABASE_ROUTERS=[]):
        [error] = checks.check_shards()
        assert error.id == "django_pg_jobqueue.E405" and "JobQueueRouter" in error.msg


def test_shards_behind_a_transaction_pooler_cannot_listen(two_shards):
    with override_settings(JOB_TRANSACTION_POOLER=True,
                           JOB_LISTEN_DATABASE_URL="postgres://direct/db"):
        assert [e.id for e in checks.check_shards()] == ["django_pg_jobqueue.E406"]
    with override_settings(JOB_TRANSACTION_POOLER=True, JOB_LISTEN_NOTIFY=False):
        assert checks.check_shards() == []


def test_the_router_follows_the_shard_a_block_works_on(two_shards):
    router = JobQueueRouter()
    assert router.db_for_read(Job) == router.db_for_write(Job) == "default"
    with db.on_database("shard_b"):
        assert db.alias() == db.home_alias() == "shard_b"
        assert router.db_for_read(Job) == router.db_for_write(Job) == "shard_b"
        with db.reading(db.ReadTarget("replica", 0.0)) as target:
            assert target.alias is None and db.alias() == "shard_b"  # no replica for a shard
        with db.on_database("default"):
            assert router.db_for_write(Job) == "default"
        assert db.alias() == "shard_b"
    assert db.alias() == "default"
    job = Job(id=2**44 + 1)
    job._state.db = "shard_b"
    assert router.db_for_read(Job, instance=job) == "shard_b"  # refresh_from_db()
    assert router.allow_migrate("shard_b", "django_pg_jobqueue")
    assert not router.allow_migrate("shard_b", "auth")
    assert router.allow_migrate("default", "auth") is None


def test_a_worker_of_one_shard_works_on_its_database(two_shards):
    db.serve_shard("shard_c")
    try:
        assert db.serving_shard() and db.alias() == "shard_c"
        assert JobQueueRouter().db_for_write(Job) == "shard_c"
    finally:
        db.serve_shard(None)
    assert not db.serving_shard() and db.alias() == "default"
