"""The API's gunicorn settings (backend/config/gunicorn.py): one process per CPU by default."""
import importlib.util
import multiprocessing
from pathlib import Path

import pytest

CONFIG = Path(__file__).resolve().parents[2] / "backend" / "config" / "gunicorn.py"


def _load(monkeypatch, cpus: int, **env):
    monkeypatch.setattr(multiprocessing, "cpu_count", lambda: cpus)
    for name in ("GUNICORN_WORKERS", "GUNICORN_THREADS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location("gunicorn_config_under_test", CONFIG)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("cpus", "workers"), [(1, 1), (2, 2), (4, 4), (16, 4)])
def test_one_process_per_cpu_at_most_four(monkeypatch, cpus, workers):
    config = _load(monkeypatch, cpus)
    assert config.workers == workers
    assert config.threads == 4
    assert config.worker_class == "gthread"


def test_the_environment_sets_processes_and_threads(monkeypatch):
    config = _load(monkeypatch, 2, GUNICORN_WORKERS="3", GUNICORN_THREADS="8")
    assert (config.workers, config.threads) == (3, 8)
    assert _load(monkeypatch, 2, GUNICORN_WORKERS="").workers == 2  # empty: the default
