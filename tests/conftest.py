"""Shared fixtures. Tests run against real PostgreSQL (DATABASE_URL or the embedded one)."""
import pytest
from django.test import override_settings

from tests.utils import start_pool


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


# --- API: users by role, token clients, throttle counters reset between tests ---------------
@pytest.fixture(autouse=True)
def _clear_throttle_counters():
    from django.core.cache import cache

    # The default (memory) cache. The throttles count in the demo's database cache
    # (JOB_THROTTLE_CACHE), whose rows roll back with each test's transaction; clearing it here
    # would start that transaction early, which timing tests notice.
    cache.clear()
    yield


@pytest.fixture
def make_user(db, settings):
    """`make_user("ops", perms=["add_job", "change_job", "view_job"], is_staff=False)`."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    # A fast hasher: PBKDF2's deliberate slowness costs ~1 s per user on a busy machine.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

    def make(username, *, perms=(), password="pw-for-tests-1", **extra):
        user = get_user_model().objects.create_user(username, password=password, **extra)
        if perms:
            user.user_permissions.set(
                Permission.objects.filter(content_type__app_label="django_pg_jobqueue", codename__in=perms))
        return user

    return make


@pytest.fixture
def operator(make_user):
    return make_user("operator", perms=["add_job", "change_job", "view_job"])


@pytest.fixture
def queue_operator(make_user):
    """The operator, who may also set queue limits (change_queuesetting): a module that
    needs them as `operator` (and `operator_client`) names this in its own `operator`."""
    return make_user("operator", perms=["add_job", "change_job", "view_job", "change_queuesetting"])


@pytest.fixture(autouse=True)
def fresh_limits():
    """The claim caches the limits (concurrency, rate, fair shares) for a second: forgotten
    before and after every test, so a limit a test set and rolled back never holds back the
    next test's claims (a test that sets one, then another that claims within the second)."""
    from django_pg_jobqueue.services.claiming import forget_cached_limits

    forget_cached_limits()
    yield
    forget_cached_limits()


@pytest.fixture
def viewer(make_user):
    return make_user("viewer", perms=["view_job"])


@pytest.fixture
def client_for():
    """`client_for(user)`: an APIClient sending `Authorization: Token <key>` (None: anonymous)."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    def make(user=None):
        client = APIClient()
        if user is not None:
            token, _ = Token.objects.get_or_create(user=user)
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


@pytest.fixture
def operator_client(client_for, operator):
    return client_for(operator)


@pytest.fixture
def custom_handler():
    """Register handlers for one test: `custom_handler(name, func, **defaults)`; unregistered after."""
    from django_pg_jobqueue.registry import registry

    names = []

    def register(name, func, **defaults):
        registry.register(name, func, **defaults)
        names.append(name)

    yield register
    for name in names:
        registry.unregister(name)
