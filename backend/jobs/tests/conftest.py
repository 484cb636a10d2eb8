"""Shared fixtures. Tests run against real PostgreSQL (DATABASE_URL or the embedded one)."""
import pytest
from django.test import override_settings

from jobs.tests.utils import start_pool


@pytest.fixture
def fast_queue_settings():
    """Short leases and retries so engine tests finish in seconds."""
    with override_settings(
        JOB_LEASE_SECONDS=2.0, JOB_RETRY_BASE_SECONDS=0.05, JOB_RETRY_MAX_SECONDS=0.2,
        JOB_RETRY_JITTER=0.0, JOB_POLL_INTERVAL_SECONDS=0.1, JOB_POLL_JITTER_SECONDS=0.05,
        JOB_REAPER_INTERVAL_SECONDS=0.5, JOB_SHUTDOWN_GRACE_SECONDS=2.0,
    ):
        yield


@pytest.fixture
def worker_pool(transactional_db, fast_queue_settings):
    """Start an in-process WorkerPool: `pool = worker_pool(threads=4)`; stopped at teardown."""
    pools = []

    def start(**kwargs):
        pool = start_pool(**kwargs)
        pools.append(pool)
        return pool

    yield start
    for pool in pools:
        if not pool.stopping.is_set():
            pool.shutdown(grace=2)
