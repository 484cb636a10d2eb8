"""JOB_READ_DATABASE's wiring, without a replica (tests/system/test_read_replica.py runs a real
one): the check that refuses a setup that would mix two moments on one page, and the router
that sends model reads, never writes, to the replica inside db.reading()."""
import pytest
from django.core import checks as django_checks
from django.test import override_settings

from django_pg_jobqueue import checks, db
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.routers import JobQueueRouter

ROUTER = "django_pg_jobqueue.routers.JobQueueRouter"


def messages() -> list[django_checks.CheckMessage]:
    return checks.check_read_database()


def test_no_replica_no_message():
    assert messages() == []


@override_settings(JOB_READ_DATABASE="default", DATABASE_ROUTERS=[ROUTER])
def test_the_replica_may_not_be_the_queue_database_itself():
    [error] = messages()
    assert error.id == "django_pg_jobqueue.E404" and "JOB_DATABASE itself" in error.msg


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_a_replica_without_the_router_is_refused(settings):
    settings.DATABASES = {**settings.DATABASES, "replica": dict(settings.DATABASES["default"])}
    with override_settings(JOB_READ_DATABASE="replica", DATABASE_ROUTERS=[]):
        [error] = messages()
        assert error.id == "django_pg_jobqueue.E404" and "JobQueueRouter" in error.msg
    with override_settings(JOB_READ_DATABASE="replica", DATABASE_ROUTERS=[ROUTER]):
        assert messages() == []


def test_inside_reading_the_router_reads_the_replica_and_writes_the_primary():
    router = JobQueueRouter()
    assert router.db_for_read(Job) == "default"
    with db.reading(db.ReadTarget("replica", 0.0)):
        assert router.db_for_read(Job) == "replica"
        assert db.alias() == "replica"
        assert router.db_for_write(Job) == "default"
    assert router.db_for_read(Job) == "default" and db.alias() == "default"


def test_reading_without_a_replica_changes_nothing():
    with db.reading() as target:
        assert target == db.ReadTarget(None)
        assert db.alias() == "default" and db.model_read_alias() is None
