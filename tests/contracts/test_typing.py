"""The public API is typed: mypy checks callers' code against it (tests/typing/)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MYPY = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
pytestmark = pytest.mark.skipif(MYPY is None, reason="mypy is not installed (the dev group)")


def mypy(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "backend"), str(REPO)])}
    return subprocess.run([MYPY, "--no-incremental", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_mypy_reports_a_mistyped_enqueue_aenqueue_handler_and_drain_in_caller_code():
    done = mypy("tests/typing/sample_bad.py")
    assert done.returncode == 1, done.stdout + done.stderr
    assert ('sample_bad.py:5: error: Argument "priority" to "enqueue" has incompatible type '
            '"str"; expected "int | None"') in done.stdout
    assert 'Argument "max_attempts" to "handler" has incompatible type "str"' in done.stdout
    assert 'Argument "timeout_seconds" to "aenqueue" has incompatible type "str"' in done.stdout
    assert 'Argument "max_jobs" to "drain" has incompatible type "str"' in done.stdout


def test_the_package_and_the_typed_sample_check_clean():
    done = mypy()  # pyproject.toml's [tool.mypy] files: the package and tests/typing/sample_ok.py
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
