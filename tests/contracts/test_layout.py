"""The code's layout keeps its promises: every hand-written SQL statement lives in the sql
package (django_pg_jobqueue/sql/), and every reader of job events reads the history's view."""
import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "django_pg_jobqueue"

# Statement text, not prose: uppercase keywords followed by what makes them a statement.
STATEMENT = re.compile(
    r"\bSELECT\b.*?\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\s+\w+(\s+\w+)?\s+SET\b|\bDELETE\s+FROM\b"
    # A SELECT without FROM (set_config(...), pg_advisory_lock(...)) and a SET LOCAL.
    r"|\bSELECT\s+\w+\s*\(|\bSET\s+(LOCAL|SESSION)\s+\w+\s*(=|\bTO\b)",
    re.DOTALL,
)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def sql_outside_the_sql_module(package: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] in ("migrations", "sql"):  # the migrations' frozen copies; the sql package
            continue
        tree = ast.parse(path.read_text(), str(path))
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docstrings and STATEMENT.search(node.value)):
                found.append(f"{relative}:{node.lineno}: {node.value.strip()[:60]!r}")
    return found


def test_no_sql_statement_is_written_outside_the_sql_module():
    assert sql_outside_the_sql_module() == []


def test_the_layout_check_finds_a_statement_written_elsewhere(tmp_path):
    (tmp_path / "module.py").write_text(
        '"""SELECT in a docstring FROM prose is fine."""\n'
        'QUERY = "SELECT id FROM jobs WHERE status = %s"\n'
        'MOVE = f"UPDATE jobs SET status = {1}"\n'
        'NAME = "SELECT set_config(\'application_name\', %s, false)"\n'
        'LIMIT = "SET LOCAL lock_timeout = \'2s\'"\n'
        'PROSE = "the SET LOCAL limits ride in each transaction"\n')
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "claim.py").write_text('ALLOWED = "DELETE FROM jobs"\n')
    (tmp_path / "services").mkdir()
    (tmp_path / "services" / "sql.py").write_text('LOCK = "SELECT pg_advisory_xact_lock(1)"\n')
    (tmp_path / "sql_helpers.py").write_text('LIMIT = "SET SESSION statement_timeout TO 5"\n')
    found = sql_outside_the_sql_module(tmp_path)
    assert sorted(f.split(":")[:2] for f in found) == [
        *(["module.py", str(n)] for n in (2, 3, 4, 5)),
        ["services/sql.py", "1"], ["sql_helpers.py", "1"]]


def defined_names(module: Path) -> set[str]:
    """The public names a module assigns or defines at its top level."""
    names = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {n for n in names if not n.startswith("_")}


def test_the_sql_package_offers_every_statement_of_its_modules_under_one_name():
    # Callers write `sql.NAME`: the package re-exports each module's public names, so two
    # modules defining the same name would silently hide one of them.
    import importlib

    from django_pg_jobqueue import sql

    modules = sorted(p for p in (PACKAGE / "sql").glob("*.py") if p.name != "__init__.py")
    owners: dict[str, list[str]] = {}
    for path in modules:
        module = importlib.import_module(f"django_pg_jobqueue.sql.{path.stem}")
        assert module.__doc__, f"sql/{path.name} says what it holds in its docstring"
        for name in defined_names(path):
            owners.setdefault(name, []).append(path.stem)
            assert getattr(sql, name) is getattr(module, name), name
    assert {n: m for n, m in owners.items() if len(m) > 1} == {}
    assert "CLAIM" in owners and "metrics_window" in owners


def test_the_app_is_the_job_queue_under_its_unchanged_label():
    from django.apps import apps

    config = apps.get_app_config("django_pg_jobqueue")
    assert (type(config).__name__, config.verbose_name) == ("JobQueueConfig", "Job queue")
    assert config.label == "django_pg_jobqueue"  # migrations and permissions depend on it


def test_every_exception_the_package_raises_on_purpose_is_a_job_error():
    from django_pg_jobqueue import exceptions

    raised = [v for v in vars(exceptions).values()
              if isinstance(v, type) and issubclass(v, Exception) and v.__module__ == exceptions.__name__]
    assert exceptions.PermanentError in raised and exceptions.JobCancelled in raised
    assert [e.__name__ for e in raised if not issubclass(e, exceptions.JobError)] == []


def live_imports_of(migration: Path) -> list[str]:
    """The package's own modules a migration imports (`from django_pg_jobqueue import sql`,
    `import django_pg_jobqueue.states`, `from ..models import X`), at any depth."""
    found = []
    for node in ast.walk(ast.parse(migration.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == PACKAGE.name]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 1 and (node.module or "").startswith("_"):
                continue  # the migrations' own frozen helpers (migrations/_frozen.py)
            if node.level > 0 or (node.module or "").split(".")[0] == PACKAGE.name:
                found.append("." * node.level + (node.module or ""))
    return found


# The one exception, with its reason in the migration: job_events' partition grid is laid out
# by the code the maintenance thread runs (services/partitions.py), not by a frozen copy.
LIVE_IMPORTS_ALLOWED = {"0007_partition_job_events.py": ["django_pg_jobqueue.services"]}


def test_no_migration_imports_the_package_s_live_modules():
    # A migration that has run must not change when sql/, models.py or states.py do: each
    # carries its own DDL and constants, frozen when it was written.
    offenders = {m.name: live_imports_of(m) for m in sorted((PACKAGE / "migrations").glob("0*.py"))}
    assert {name: found for name, found in offenders.items() if found} == LIVE_IMPORTS_ALLOWED


def test_the_migration_check_finds_a_live_import(tmp_path):
    migration = tmp_path / "0099_example.py"
    migration.write_text("from django.db import migrations\n"
                         "def forwards(apps, schema_editor):\n"
                         "    from django_pg_jobqueue import sql\n"
                         "from ..states import MAX_JSON_DEPTH\n"
                         "from ._frozen import replace_event_kind_check\n")
    assert sorted(live_imports_of(migration)) == ["..states", "django_pg_jobqueue"]


def test_the_frozen_helpers_import_nothing_of_the_package():
    # migrations/_frozen.py is shared by migrations that have run: it must be as frozen as they are.
    assert live_imports_of(PACKAGE / "migrations" / "_frozen.py") == []


# What a module under worker/ may not import: it reaches the jobs only through the engine.
AROUND_THE_ENGINE = ("services", "selectors", "sql")


def imports_around_the_engine(module: Path, package_path: tuple[str, ...]) -> list[str]:
    """The modules of AROUND_THE_ENGINE (or inside them) that `module` imports, at any depth
    (function-local and TYPE_CHECKING imports too); `package_path` is the module's package,
    from the package's root (("worker",)), to resolve relative imports."""
    found = []
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name.split(".") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = [PACKAGE.name, *package_path][:len(package_path) + 2 - node.level]
            else:
                base = []
            module_path = base + (node.module.split(".") if node.module else [])
            names = [module_path + [a.name] for a in node.names]
        else:
            continue
        for name in names:
            if (len(name) > 1 and name[0] == PACKAGE.name and name[1] in AROUND_THE_ENGINE):
                found.append(".".join(name[:2]))
    return found


def test_no_worker_module_reaches_past_the_engine():
    offenders = {
        str(path.relative_to(PACKAGE)): imports_around_the_engine(path, ("worker",))
        for path in sorted((PACKAGE / "worker").rglob("*.py"))}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_engine_check_finds_an_import_past_it(tmp_path):
    module = tmp_path / "example.py"
    module.write_text("from typing import TYPE_CHECKING\n"
                      "from .. import conf, sql\n"
                      "from ..engine import Engine\n"
                      "from ..services.lifecycle import Completion\n"
                      "import django_pg_jobqueue.selectors\n"
                      "if TYPE_CHECKING:\n"
                      "    from django_pg_jobqueue.services import ClaimedJob\n"
                      "def run():\n"
                      "    from .. import services\n"
                      "    from .base import ServiceThread\n")
    assert sorted(imports_around_the_engine(module, ("worker",))) == [
        "django_pg_jobqueue.selectors", "django_pg_jobqueue.services",
        "django_pg_jobqueue.services", "django_pg_jobqueue.services", "django_pg_jobqueue.sql"]


# --- the history's one read path ---------------------------------------------------------------
# Every reader of job events reads the view job_history (models.HistoryEvent, migration 0031),
# never the table job_events, so that where the history is kept can change in one place.
# Writers write job_events; upkeep (pruning, partitions, the history's guard:
# sql/maintenance.py) works on the table itself.
# The table named anywhere but after a writer's keyword: a read.
_READ_OF_THE_TABLE = re.compile(r"(?<!INSERT INTO )(?<!DELETE FROM )\bjob_events\b(?!_)")


# The event feed's statements read each of the history's two places on its own index, in
# order (sql.EVENTS_AFTER says why not through the view).
READS_BOTH_PLACES = {"EVENTS_AFTER", "EVENTS_LATEST"}


def table_reads_in_sql(package: Path = PACKAGE) -> list[str]:
    """Statements of the sql package (upkeep's module aside) that read job_events."""
    found = []
    for path in sorted((package / "sql").glob("*.py")):
        if path.name == "maintenance.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        skipped = _docstrings(tree) | {
            id(inner) for node in tree.body if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id in READS_BOTH_PLACES for t in node.targets)
            for inner in ast.walk(node)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in skipped):
                if _READ_OF_THE_TABLE.search(node.value):
                    found.append(f"{path.name}:{node.lineno}")
    return found


def model_reads_outside_writers(package: Path = PACKAGE) -> list[str]:
    """Statements outside the migrations that use JobEvent's manager other than to write."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        source = path.read_text()
        for node in ast.walk(ast.parse(source, str(path))):
            if not isinstance(node, ast.stmt) or isinstance(
                    node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With,
                           ast.If, ast.For, ast.While, ast.Try)):
                continue
            text = ast.get_source_segment(source, node) or ""
            if "JobEvent.objects" in text and not re.search(r"\.(create|update|bulk_create)\(",
                                                            text):
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    return found


def test_no_statement_of_the_sql_package_reads_the_table():
    assert table_reads_in_sql() == []


def test_no_module_reads_the_history_through_job_event_s_manager():
    assert model_reads_outside_writers() == []


def test_both_checks_find_a_read(tmp_path):
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "reads.py").write_text(
        '"""Reads of job_events, said in prose."""\n'
        'A = "SELECT id FROM job_events WHERE job_id = %s"\n'
        'B = "INSERT INTO job_events (job_id) VALUES (%s)"\n'
        'C = "DELETE FROM job_events WHERE job_id = %s"\n'
        'D = "SELECT id FROM job_history JOIN job_events_default d ON true"\n'
        'EVENTS_AFTER = "SELECT id FROM job_events UNION ALL SELECT outcome_event_id FROM jobs"\n')
    (tmp_path / "selectors.py").write_text(
        "def f(job):\n"
        "    JobEvent.objects.create(job=job, kind='log')\n"
        "    rows = list(JobEvent.objects.filter(job=job))\n"
        "    JobEvent.objects.filter(job=job).update(data={})\n")
    assert table_reads_in_sql(tmp_path) == ["reads.py:2"]
    assert model_reads_outside_writers(tmp_path) == ["selectors.py:3"]
