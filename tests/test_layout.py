"""The code's layout keeps its promises: every hand-written SQL statement lives in sql.py."""
import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "backend" / "django_pg_jobqueue"

# Statement text, not prose: uppercase keywords followed by what makes them a statement.
STATEMENT = re.compile(
    r"\bSELECT\b.*?\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\s+\w+(\s+\w+)?\s+SET\b|\bDELETE\s+FROM\b",
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
        if relative.parts[0] == "migrations" or relative == Path("sql.py"):
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
        'MOVE = f"UPDATE jobs SET status = {1}"\n')
    (tmp_path / "sql.py").write_text('ALLOWED = "DELETE FROM jobs"\n')
    found = sql_outside_the_sql_module(tmp_path)
    assert [f.split(":")[:2] for f in found] == [["module.py", "2"], ["module.py", "3"]]


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
