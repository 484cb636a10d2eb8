"""The support matrix: the built wheel with each Django on each Python it supports.

    make matrix                         every leg below (nox, with uv when it is installed)
    make matrix MATRIX_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres
                                        every leg against that server (e.g. a PostgreSQL 15)
    nox -s "tests-3.10-django5.2"       one leg; `-- quick` runs its fast subset only,
                                        `-- tests/<tier>/test_x.py ...` those files
    nox -l                              the legs

Each leg installs the wheel (built once per run, from this checkout) with one Django into a
virtualenv under $NOX_ENVDIR (default /tmp/django-pg-jobqueue-nox, never in the repository),
then runs a named subset of the suite against PostgreSQL: MATRIX_DATABASE_URL when set, else
DATABASE_URL, else the embedded server (backend/config/embedded_pg.py, PostgreSQL 18), each
leg in a test database of its own (named after the leg and the checkout, so that checkouts
sharing one server do not collide). Each leg prints the server's version first. The
tests import the installed wheel, not backend/: only the demo project (backend/config,
backend/demo) and tests/ come from the checkout.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nox

REPO = Path(__file__).resolve().parent
# One envdir per checkout: two clones (or worktrees) never share venvs, wheels or links.
_CHECKOUT = hashlib.sha256(str(REPO).encode()).hexdigest()[:10]
ENVDIR = Path(os.environ.get(
    "NOX_ENVDIR", Path(tempfile.gettempdir()) / f"django-pg-jobqueue-nox-{_CHECKOUT}"))
nox.options.envdir = str(ENVDIR)
nox.options.default_venv_backend = "uv|virtualenv"
# The Pythons installed here (PATH, pyenv): uv must not fetch interpreters of its own.
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")
os.environ.setdefault("UV_PYTHON_PREFERENCE", "only-system")
# pyenv's installs, found directly: its shims answer only for the versions it has activated.
_PYENV = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
os.environ["PATH"] = os.pathsep.join(
    [*sorted(str(p) for p in _PYENV.glob("3.1[0-9]*/bin")), os.environ.get("PATH", "")])
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = False

# Django -> the Pythons it supports (docs/reference/supported-versions.md).
MATRIX = {
    "5.2": ["3.10", "3.11", "3.12", "3.13"],
    "6.0": ["3.12", "3.13"],
    "6.1": ["3.12", "3.13"],
}
# The named subset: the engine, the Tasks backend and Django's own Tasks contract, the REST
# API, async code, and the adoption test (the wheel into a fresh startproject, following the tutorial).
ENGINE = ["tests/services/test_claim.py", "tests/services/test_state_machine.py", "tests/services/test_enqueue_validation.py",
          "tests/worker/test_reaper.py", "tests/services/test_queue_status.py"]
TASKS = ["tests/tasks/test_tasks_backend.py", "tests/tasks/test_tasks_contract.py",
         "tests/tasks/test_task_options.py",
         # what `check` says of TASKS and creatable tasks, with each Django's Tasks framework
         "tests/contracts/test_checks_what_settings_name.py"]
API = ["tests/api/test_api_create.py", "tests/api/test_api_bulk_create.py", "tests/api/test_api_list.py",
       "tests/api/test_api_detail.py", "tests/api/test_api_cancel_retry.py"]
# Async handlers and tasks on worker processes, aenqueue from an async view; the vocabulary.
ASYNC = ["tests/system/test_async.py", "tests/contracts/test_vocabulary.py"]
ADOPTION = ["tests/system/test_adoption.py"]
# `-- quick`: the leg `make test` runs (kept to a couple of minutes).
# The docs' examples (tests/contracts/test_docs_examples.py) run here on Django 5.2, in their variant for it.
DOCS = ["tests/contracts/test_docs_examples.py"]
QUICK = ["tests/services/test_claim.py", "tests/services/test_state_machine.py", *TASKS, *API, *DOCS]
TEST_REQUIREMENTS = ["pytest>=8.3", "pytest-django>=4.9", "pytest-timeout>=2.3",
                     "hypothesis>=6.120,<6.156", "django-environ>=0.12", "whitenoise>=6.8",
                     "psycopg[binary]>=3.2", "pyyaml>=6", "build>=1.2",
                     "httpx>=0.27"]  # the async how-to's example (tests/contracts/test_docs_examples.py)

_wheel: Path | None = None


def wheel() -> Path:
    """The wheel of this checkout, built once per nox run."""
    global _wheel
    if _wheel is None:
        out = ENVDIR / "dist"
        shutil.rmtree(out, ignore_errors=True)
        uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
        command = ([uv, "build", "--wheel", "--out-dir", str(out), str(REPO)] if uv else
                   [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)])
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        (_wheel,) = out.glob("django_pg_jobqueue-*.whl")
    return _wheel


def database_url() -> str:
    """The server the legs run against: MATRIX_DATABASE_URL, DATABASE_URL, else embedded."""
    for name in ("MATRIX_DATABASE_URL", "DATABASE_URL"):
        if os.environ.get(name):
            return os.environ[name]
    done = subprocess.run([sys.executable, str(REPO / "backend" / "config" / "embedded_pg.py"),
                           "url"], check=True, capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1]


def demo_path() -> Path:
    """A directory holding only the demo project's packages (config, demo), so that
    `django_pg_jobqueue` is imported from the installed wheel, not from backend/."""
    path = ENVDIR / "demo-path"
    path.mkdir(parents=True, exist_ok=True)
    for name in ("config", "demo"):
        link, target = path / name, REPO / "backend" / name
        if link.is_symlink() and link.readlink() != target:
            link.unlink()  # made for another checkout
        if not link.is_symlink():
            link.symlink_to(target)
    return path


def run_leg(session: nox.Session, django: str) -> None:
    extras = "api,metrics" + (",tasks" if django.startswith("5.") else "")
    # The wheel keeps its version from build to build: a reused venv must take this build.
    reinstall = (["--reinstall-package", "django-pg-jobqueue"] if session.venv_backend == "uv"
                 else ["--force-reinstall", "--no-deps"])
    session.install(f"{wheel()}[{extras}]", f"django=={django}.*", *TEST_REQUIREMENTS)
    session.install(*reinstall, str(wheel()))
    env = {
        "DATABASE_URL": database_url(),
        "TEST_DATABASE_NAME": f"test_matrix_{_CHECKOUT}_" + re.sub(r"\W", "_", session.name),
        "PYTHONPATH": os.pathsep.join([str(demo_path()), str(REPO)]),
        "ADOPTION_DJANGO": django,  # tests/system/test_adoption.py: install this Django, not the floor
    }
    session.run("python", "-c", "import django, django_pg_jobqueue as q; "
                "assert 'site-packages' in q.__file__, q.__file__; "
                f"assert django.get_version().startswith('{django}'), django.get_version(); "
                "print('django', django.get_version(), 'and the wheel at', q.__file__)", env=env)
    session.run("python", "-c", "import os, psycopg; print('against', psycopg.connect("
                "os.environ['DATABASE_URL']).execute('SELECT version()').fetchone()[0])", env=env)
    named = [arg for arg in session.posargs if arg.startswith("tests/")]
    quick = "quick" in session.posargs
    tests = named or (QUICK if quick else [*ENGINE, *TASKS, *API, *ASYNC, *DOCS, *ADOPTION])
    session.run("python", "-m", "pytest", "-q", "-p", "no:randomly", "-o", "pythonpath=",
                "--create-db", *tests, env=env, external=False)


def _leg(django: str):
    def leg(session: nox.Session) -> None:
        run_leg(session, django)

    leg.__doc__ = f"The wheel with Django {django}."
    return leg


for _django, _pythons in MATRIX.items():
    for _python in _pythons:
        nox.session(name=f"tests-{_python}-django{_django}", python=_python)(_leg(_django))
