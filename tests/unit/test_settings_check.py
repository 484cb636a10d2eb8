"""`manage.py check` validates every JOB_* setting: a wrong type or an out-of-range value is a
django_pg_jobqueue.E0xx error naming the setting, the bad value and what is allowed, and the
queue's own code paths (`conf.get()`) refuse the same values with ImproperlyConfigured."""
import os
import re
import subprocess
import sys
from dataclasses import fields
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from django_pg_jobqueue import conf

REPO = Path(__file__).resolve().parents[2]

# (setting, bad value, words the message must contain about what is allowed)
BAD_VALUES = [
    ("JOB_LEASE_SECONDS", "30", "a number"),
    ("JOB_LEASE_SECONDS", 0.5, "at least 1"),
    ("JOB_LEASE_SECONDS", float("nan"), "a number"),
    ("JOB_WORKER_THREADS", 0, "at least 1"),
    ("JOB_WORKER_THREADS", 2.5, "whole number"),
    ("JOB_WORKER_THREADS", True, "whole number"),
    ("JOB_POLL_INTERVAL_SECONDS", 0, "greater than 0"),
    ("JOB_POLL_JITTER_SECONDS", -0.1, "at least 0"),
    ("JOB_LISTEN_NOTIFY", "false", "bool"),
    ("JOB_SHUTDOWN_GRACE_SECONDS", -1, "at least 0"),
    ("JOB_REAPER_INTERVAL_SECONDS", 0, "greater than 0"),
    ("JOB_CLAIM_BATCH_SIZE", 0, "at least 1"),
    ("JOB_PREFETCH", -1, "at least 0"),
    ("JOB_STATEMENT_TIMEOUT_MS", "30s", "whole number"),
    ("JOB_PREPARED_STATEMENTS", 1, "bool"),
    ("JOB_EXTRA_HANDLER_MODULES", "myapp.handlers,other.handlers", "a list"),
    ("JOB_EXTRA_HANDLER_MODULES", ["myapp.handlers", 3], "dotted module paths"),
    ("JOB_RETRY_BASE_SECONDS", -1, "at least 0"),
    ("JOB_RETRY_JITTER", 1.5, "at most 1"),
    ("JOB_DEFAULT_MAX_ATTEMPTS", 0, "at least 1"),
    ("JOB_DEFAULT_MAX_ATTEMPTS", 5000, "at most 1000"),
    ("JOB_DEFAULT_TIMEOUT_SECONDS", 0, "at least 1"),
    ("JOB_DEFAULT_TIMEOUT_SECONDS", "600", "or None"),
    ("JOB_MAX_PAYLOAD_BYTES", -1, "at least 2"),
    ("JOB_API_PUBLIC_READ", "yes", "bool"),
    ("JOB_CREATE_RATE", "600 per minute", "600/min"),
    ("JOB_CREATE_RATE", "600/fortnight", "600/min"),
    ("JOB_MAX_QUEUE_DEPTH", 0, "at least 1"),
    ("JOB_RETENTION_SUCCEEDED", "a week", "'7d'"),
    ("JOB_RETENTION_FAILED", "-5d", "'7d'"),
    ("JOB_RETENTION_CANCELLED", [7], "'7d'"),
    ("JOB_PRUNE_INTERVAL_SECONDS", -5, "at least 0"),
    ("JOB_PRUNE_BATCH_SIZE", 0, "at least 1"),
    ("JOB_WORKER_LOG_LEVEL", "LOUD", "'DEBUG'"),
    ("JOB_LOG_FORMAT", "xml", "'text', 'json'"),
    ("JOB_METRICS_TOKEN", 1234, "a string"),
    ("JOB_METRICS_WINDOW_SECONDS", 0, "at least 1"),
    ("JOB_METRICS_STATEMENT_TIMEOUT_MS", 0, "at least 1"),
    ("JOB_OTEL_ENABLED", "true", "bool"),
]


def errors_of(check_id_prefix="django_pg_jobqueue.E0"):
    return [e for e in conf.check_settings() if e.id.startswith(check_id_prefix)]


def test_the_demo_settings_pass_the_check():
    assert conf.check_settings() == []
    call_command("check")  # raises SystemCheckError on any error


@pytest.mark.parametrize(("name", "value", "allowed"), BAD_VALUES,
                         ids=[f"{n}={v!r}" for n, v, _ in BAD_VALUES])
def test_a_bad_value_is_a_check_error_naming_the_setting_the_value_and_what_is_allowed(
        name, value, allowed):
    with override_settings(**{name: value}):
        errors = errors_of()
        assert len(errors) == 1, [e.msg for e in errors]
        error = errors[0]
        assert error.is_serious()
        assert name in error.msg and repr(value) in error.msg and allowed in error.msg
        field = next(f for f in fields(conf.QueueConf) if conf.PREFIX + f.name == name)
        assert error.id == field.metadata["check_id"]
        # `manage.py check` fails with the same message...
        with pytest.raises(SystemCheckError) as raised:
            call_command("check")
        assert error.id in str(raised.value) and name in str(raised.value)
        # ...and the queue's code paths refuse to run with it.
        with pytest.raises(ImproperlyConfigured, match=name):
            conf.get()


def test_every_bad_setting_is_reported_at_once():
    with override_settings(JOB_LEASE_SECONDS="30", JOB_LOG_FORMAT="xml", JOB_PREFETCH=-1):
        named = {e.obj for e in errors_of()}
        with pytest.raises(ImproperlyConfigured) as raised:
            conf.get()
    assert named == {"JOB_LEASE_SECONDS", "JOB_LOG_FORMAT", "JOB_PREFETCH"}
    assert all(name in str(raised.value) for name in named)


def test_a_retry_cap_below_the_base_is_refused():
    with override_settings(JOB_RETRY_BASE_SECONDS=10, JOB_RETRY_MAX_SECONDS=5):
        [error] = errors_of()
    assert error.obj == "JOB_RETRY_MAX_SECONDS" and "JOB_RETRY_BASE_SECONDS" in error.msg


@pytest.mark.parametrize("values", [
    {"JOB_DEFAULT_TIMEOUT_SECONDS": None, "JOB_MAX_QUEUE_DEPTH": None},
    {"JOB_LEASE_SECONDS": 30, "JOB_RETRY_MAX_SECONDS": 60},  # ints where floats are expected
    {"JOB_PREFETCH": 0, "JOB_PRUNE_INTERVAL_SECONDS": 0, "JOB_STATEMENT_TIMEOUT_MS": 0},
    {"JOB_RETENTION_SUCCEEDED": "off", "JOB_RETENTION_FAILED": "",
     "JOB_RETENTION_CANCELLED": None},
    {"JOB_RETENTION_SUCCEEDED": "2w", "JOB_RETENTION_FAILED": timedelta(days=3),
     "JOB_RETENTION_CANCELLED": 3600},
    {"JOB_EXTRA_HANDLER_MODULES": ("django_pg_jobqueue.builtin_handlers",)},
    {"JOB_CREATE_RATE": "10/s", "JOB_WORKER_LOG_LEVEL": "DEBUG", "JOB_LOG_FORMAT": "json"},
    {"JOB_RETRY_BASE_SECONDS": 0.0, "JOB_RETRY_MAX_SECONDS": 0.0, "JOB_RETRY_JITTER": 0.0},
], ids=lambda values: ",".join(values))
def test_documented_edge_values_are_accepted(values):
    with override_settings(**values):
        assert errors_of() == []
        got = conf.get()
    for name, value in values.items():
        expected = tuple(value) if isinstance(value, list) else value
        assert getattr(got, name.removeprefix(conf.PREFIX)) == expected


def test_an_unset_setting_takes_its_documented_default():
    from django.conf import settings

    with override_settings():
        del settings.JOB_PREFETCH
        del settings.JOB_CREATE_RATE
        got = conf.get()
    assert got.PREFETCH == conf.default("JOB_PREFETCH") == 128
    assert got.CREATE_RATE == conf.default("JOB_CREATE_RATE") == "600/min"


def test_a_malformed_handler_module_list_does_not_stop_start_up():
    # apps.ready() imports JOB_EXTRA_HANDLER_MODULES; a bad value must reach `check`, not crash.
    with override_settings(JOB_EXTRA_HANDLER_MODULES="a.b,c.d"):
        assert conf.extra_handler_modules() == ()
    with override_settings(JOB_EXTRA_HANDLER_MODULES=["django_pg_jobqueue.builtin_handlers"]):
        assert conf.extra_handler_modules() == ("django_pg_jobqueue.builtin_handlers",)


def test_manage_py_check_reports_a_bad_environment_value_instead_of_a_traceback():
    # (The demo's LOGGING uses JOB_LOG_FORMAT and JOB_WORKER_LOG_LEVEL itself, so those two
    # fail in the demo's settings before any check runs.)
    env = {**os.environ, "JOB_CREATE_RATE": "fast", "JOB_LEASE_SECONDS": "0.5"}
    proc = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "django_pg_jobqueue.E020" in proc.stderr and "JOB_CREATE_RATE = 'fast'" in proc.stderr
    assert "django_pg_jobqueue.E001" in proc.stderr and "JOB_LEASE_SECONDS = 0.5" in proc.stderr


def test_every_setting_is_documented_with_its_own_check_id():
    # JOB_PERIODIC's entries are checked by the periodic schedule's own check (E200/E201).
    ids = [f.metadata["check_id"] for f in fields(conf.QueueConf) if f.name != "PERIODIC"]
    assert len(ids) == len(set(ids)), "two settings share a check id"
    for f in fields(conf.QueueConf):
        assert len(f.metadata["doc"]) > 30, f"document JOB_{f.name}"
        assert f.metadata["group"] in conf.GROUPS, f.name


PACKAGE = REPO / "backend" / "django_pg_jobqueue"
WRITTEN_CHECK_ID = re.compile(r"""\bid\s*=\s*["'](django_pg_jobqueue\.[A-Z]\d+)["']""")


def check_ids_written(package: Path = PACKAGE) -> list[tuple[str, str]]:
    """(id, file:line) of every system check id the package's source names as a literal
    (`id="django_pg_jobqueue.E044"`), migrations aside; the settings' own ids come from conf."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] == "migrations":
            continue
        text = path.read_text()
        for m in WRITTEN_CHECK_ID.finditer(text):
            found.append((m.group(1), f"{relative}:{text.count(chr(10), 0, m.start()) + 1}"))
    return found


def test_no_two_system_checks_share_an_id():
    # An id names one check: SILENCED_SYSTEM_CHECKS and the docs' tables go by it.
    written = check_ids_written()
    assert len(written) >= 10, "the scan finds the checks' ids"
    settings = [(f.metadata["check_id"], f"conf.py JOB_{f.name}") for f in fields(conf.QueueConf)
                if f.metadata["check_id"] is not None]
    where: dict[str, list[str]] = {}
    for check_id, place in [*written, *settings]:
        where.setdefault(check_id, []).append(place)
    assert {i: places for i, places in where.items() if len(places) > 1} == {}


def test_the_check_id_scan_finds_an_id_written_twice(tmp_path):
    (tmp_path / "checks.py").write_text(
        'checks.Error("a", id="django_pg_jobqueue.E044")\n'
        "checks.Warning('b', obj=x, id='django_pg_jobqueue.W043')\n")
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "checks.py").write_text(
        'return [checks.Error(msg,\n    id="django_pg_jobqueue.E044")]\n')
    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations" / "0001.py").write_text('id="django_pg_jobqueue.E044"\n')
    assert check_ids_written(tmp_path) == [
        ("django_pg_jobqueue.E044", "api/checks.py:2"), ("django_pg_jobqueue.E044", "checks.py:1"),
        ("django_pg_jobqueue.W043", "checks.py:2")]
