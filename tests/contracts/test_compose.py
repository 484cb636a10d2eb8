"""docker-compose.yml, the Dockerfile, .env.sample and the docs' environment table agree
with the code. Docker cannot run here, so the compose file is parsed and checked instead: its
services, commands, ports and variables; and every variable is documented exactly once."""
import re
import shlex
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
ENV_SAMPLE = REPO / ".env.sample"
ENVIRONMENT_DOC = REPO / "docs" / "reference" / "environment.md"
CONFIG_MODULES = [REPO / "backend" / "config" / "settings.py", REPO / "backend" / "config" / "gunicorn.py"]
COMPOSE_ONLY_HEADER = "# --- docker-compose only"

# A variable read from the environment by the config modules: env.int("X", ...), _env("X", ...),
# os.environ.get("X"), os.environ["X"], os.getenv("X").
READ_PATTERN = re.compile(
    r"""(?:\benv\.[a-z_]+\(|\b_env\(|os\.environ\.get\(|os\.getenv\(|os\.environ\[)\s*["']([A-Z][A-Z0-9_]*)["']""")
# ${VAR}, ${VAR:-default}, ${VAR:?message}, nested ones included; $$ escapes are not variables.
COMPOSE_VAR = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)")


# --- parsing ------------------------------------------------------------------------------------
def env_sample() -> dict[str, str]:
    """Every variable of .env.sample, in order, with its sample value."""
    values = {}
    for line in ENV_SAMPLE.read_text().splitlines():
        m = re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", line)
        if m:
            assert m.group(1) not in values, f".env.sample lists {m.group(1)} twice"
            values[m.group(1)] = m.group(2).strip()
    return values


def compose_only_variables() -> set[str]:
    """The variables under the '# --- docker-compose only' header of .env.sample."""
    names, inside = set(), False
    for line in ENV_SAMPLE.read_text().splitlines():
        if line.startswith("# ---"):
            inside = line.startswith(COMPOSE_ONLY_HEADER)
        m = re.match(r"^([A-Z][A-Z0-9_]*)=", line)
        if m and inside:
            names.add(m.group(1))
    return names


def read_by_config() -> set[str]:
    return {name for path in CONFIG_MODULES for name in READ_PATTERN.findall(path.read_text())}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def interpolate(value: str, sample: dict[str, str]) -> str:
    """Compose's ${VAR:-default} with .env.sample's values, enough to read ports and replicas."""
    pattern = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^${}]*))?\}")
    while (m := pattern.search(value)) is not None:
        value = value[:m.start()] + (sample.get(m.group(1)) or m.group(2) or "") + value[m.end():]
    return value


def command_words(service: dict) -> list[str]:
    command = service["command"]
    words = command if isinstance(command, list) else shlex.split(command)
    if words[:2] == ["sh", "-c"]:
        words = shlex.split(words[2])
    return words


def env_files(service: dict) -> list[str]:
    value = service.get("env_file", [])
    items = [value] if isinstance(value, str) else value
    return [item if isinstance(item, str) else item["path"] for item in items]


def depends_on_healthy(service: dict, name: str) -> bool:
    deps = service.get("depends_on", {})
    return isinstance(deps, dict) and deps.get(name, {}).get("condition") == "service_healthy"


# --- services -----------------------------------------------------------------------------------
def test_compose_runs_the_database_the_api_and_the_workers(compose):
    assert set(compose["services"]) == {"db", "api", "worker"}


def test_database_is_current_postgres_with_a_named_volume_and_a_healthcheck(compose):
    db = compose["services"]["db"]
    assert db["image"].split(":")[0] == "postgres"
    assert int(db["image"].split(":")[1].split(".")[0].split("-")[0]) >= 18
    # PostgreSQL 18 images keep PGDATA under /var/lib/postgresql/<major>/docker and refuse a
    # volume at the old /var/lib/postgresql/data.
    mounts = dict(v.split(":", 1) for v in db["volumes"])
    volume = next(name for name, target in mounts.items() if target == "/var/lib/postgresql")
    assert volume in compose["volumes"], "the data volume must be a named volume"
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert "POSTGRES_PASSWORD" in db["environment"]
    assert "ports" not in db, "the database need not be reachable from outside the compose network"


def test_api_migrates_then_serves_gunicorn_with_the_project_config(compose):
    api = compose["services"]["api"]
    text = " ".join(command_words(api))
    assert "manage.py migrate" in text and "gunicorn" in text
    assert text.index("manage.py migrate") < text.index("gunicorn"), "migrate before serving"
    assert "&&" in text, "gunicorn must not start when migrations fail"
    words = shlex.split(text.split("&&", 1)[1])
    assert words[0] == "exec" and words[1] == "gunicorn", "gunicorn as PID 1 receives SIGTERM"
    assert "config.wsgi" in words
    assert (REPO / "backend" / "config" / "wsgi.py").is_file()
    chdir = words[words.index("--chdir") + 1]
    config = words[words.index("-c") + 1]
    assert (REPO / config).is_file(), f"gunicorn config {config} does not exist"
    assert (REPO / chdir / "config" / "wsgi.py").is_file()


def test_api_publishes_the_port_gunicorn_binds(compose):
    api = compose["services"]["api"]
    words = command_words(api)
    text = " ".join(words)
    bind = re.search(r"--bind\s+(\S+)", text).group(1)
    host, _, container_port = bind.rpartition(":")
    assert host == "0.0.0.0", "inside a container, bind every interface"
    published = [interpolate(str(p), env_sample()) for p in api["ports"]]
    assert len(published) == 1
    host_port, _, target = published[0].rpartition(":")
    assert target == container_port
    assert host_port.isdigit()
    healthcheck = " ".join(api["healthcheck"]["test"])
    script = next(w for w in api["healthcheck"]["test"] if w.endswith(".py"))
    assert (REPO / script).is_file()
    assert f":{container_port}/" in (REPO / script).read_text(), healthcheck


def test_worker_runs_run_job_workers_scales_with_replicas_and_outlives_the_grace_period(compose):
    from django.core.management import load_command_class

    worker = compose["services"]["worker"]
    words = command_words(worker)
    assert words[:3] == ["python", "manage.py", "run_job_workers"]
    # The flags (if any) parse with the real command's parser.
    command = load_command_class("django_pg_jobqueue", "run_job_workers")
    command.create_parser("manage.py", "run_job_workers").parse_args(words[3:])
    replicas = int(interpolate(str(worker["deploy"]["replicas"]), env_sample()))
    assert replicas >= 1
    assert "ports" not in worker, "published ports would stop the worker from scaling"
    grace = float(env_sample().get("JOB_SHUTDOWN_GRACE_SECONDS") or 25)
    stop = re.fullmatch(r"(\d+)s", worker["stop_grace_period"])
    assert stop and int(stop.group(1)) > grace, (
        "Docker must wait longer than JOB_SHUTDOWN_GRACE_SECONDS before SIGKILL")


def test_app_services_share_the_image_and_read_dot_env_in_production(compose):
    for name in ("api", "worker"):
        service = compose["services"][name]
        assert env_files(service) == [".env"], name
        assert service["environment"]["DJANGO_ENV"] == "production", name
        assert depends_on_healthy(service, "db"), name
        build = service["build"]
        context = build if isinstance(build, str) else build.get("context", ".")
        assert (REPO / context / "Dockerfile").is_file()
    assert depends_on_healthy(compose["services"]["worker"], "api"), (
        "workers wait for the API, which applies the migrations")


def test_dockerfile_builds_the_ui_then_the_django_image():
    text = (REPO / "Dockerfile").read_text()
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.M | re.I)
    assert [image.split(":")[0] for image, _ in stages] == ["node", "python"]
    node_stage = stages[0][1]
    assert "npm ci" in text and "npm run build" in text
    # Vite builds into the app's static files (package data); the image's repo is its WORKDIR.
    workdir = re.findall(r"^WORKDIR\s+(\S+)", text, re.M)[-1]
    built = "backend/django_pg_jobqueue/static/django_pg_jobqueue/dashboard"
    assert re.search(rf"^COPY --from={node_stage} \S+/{built} {built}$", text, re.M)
    assert re.search(r"^COPY backend/ backend/$", text, re.M) and workdir == "/app"
    assert "collectstatic" in text
    python_version = re.search(r"^FROM python:(\d+)\.(\d+)", text, re.M).groups()
    required = re.search(r'requires-python = ">=(\d+)\.(\d+)"',
                         (REPO / "pyproject.toml").read_text()).groups()
    assert tuple(map(int, python_version)) >= tuple(map(int, required))
    assert re.search(r"^USER (?!root)\S+", text, re.M), "the app does not run as root"


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_image():
    ignored = set((REPO / ".dockerignore").read_text().split())
    for path in (".env", ".git", ".venv", ".pgdata", "frontend/node_modules"):
        assert path in ignored, path


def test_healthcheck_sends_an_allowed_host():
    from config.healthcheck import host_header

    assert host_header("jobs.example.com,other.example.com") == "jobs.example.com"
    assert host_header(".example.com") == "example.com"
    assert host_header("*") == "localhost"
    assert host_header("") == "localhost"


# --- variables ----------------------------------------------------------------------------------
def test_every_variable_compose_uses_is_in_env_sample(compose):
    sample = env_sample()
    used = set(COMPOSE_VAR.findall(COMPOSE_FILE.read_text()))
    for name in ("api", "worker"):
        used |= set(compose["services"][name].get("environment", {}))
    missing = sorted(used - set(sample))
    assert not missing, f"docker-compose.yml uses {missing}; add them to .env.sample"


def test_every_env_sample_variable_is_read_by_the_settings_or_used_by_compose():
    sample, compose_only = set(env_sample()), compose_only_variables()
    unread = sorted(sample - compose_only - read_by_config())
    assert not unread, (f".env.sample lists {unread}, which backend/config/settings.py (or "
                        f"gunicorn.py) never reads")
    compose_text = COMPOSE_FILE.read_text()
    unused = sorted(n for n in compose_only if not re.search(rf"\$\{{{n}\b", compose_text))
    assert not unused, f".env.sample's docker-compose section lists {unused}, unused by compose"


def test_every_variable_the_settings_read_is_in_env_sample():
    undocumented = sorted(read_by_config() - set(env_sample()))
    assert not undocumented, (f"backend/config reads {undocumented}; add each to .env.sample "
                              f"with its default and to the README's configuration table")


# --- README -------------------------------------------------------------------------------------
def readme_configuration_table() -> dict[str, list[str]]:
    rows = {}
    for line in ENVIRONMENT_DOC.read_text().splitlines():
        m = re.match(r"^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|(.*)\|\s*$", line)
        if m:
            assert m.group(1) not in rows, f"README's table lists {m.group(1)} twice"
            rows[m.group(1)] = [cell.strip() for cell in m.group(2).split("|")]
    return rows


def test_readme_configuration_table_lists_exactly_the_variables_of_env_sample():
    sample, table = env_sample(), readme_configuration_table()
    missing = [n for n in sample if n not in table]
    extra = sorted(set(table) - set(sample))
    assert not missing, (f"document {missing} in the README's configuration table "
                         f"(| `NAME` | `default` | meaning |)")
    assert not extra, f"the README's configuration table lists {extra}, absent from .env.sample"


def test_readme_configuration_table_shows_each_sample_default():
    sample, table = env_sample(), readme_configuration_table()
    wrong = {name: (value, table[name][0]) for name, value in sample.items()
             if value and name in table and f"`{value}`" not in table[name][0]}
    assert not wrong, f"README default differs from .env.sample (sample, README): {wrong}"
    undocumented = [name for name, cells in table.items() if len(cells) < 2 or not cells[1]]
    assert not undocumented, f"say what {undocumented} mean in the README's table"
