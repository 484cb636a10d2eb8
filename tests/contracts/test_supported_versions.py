"""The versions the package declares are the ones the docs' table lists, and the library's
own code parses and compiles on the lowest Python it declares."""
import os
import re
import subprocess
from pathlib import Path

import pytest
import tomllib  # the repository's tools run on 3.12+; only the library must run on 3.10

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
TABLE = (REPO / "docs" / "reference" / "supported-versions.md").read_text()
PY310 = Path.home() / ".pyenv" / "versions"


def table_rows():
    rows = {}
    for line in TABLE.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if re.fullmatch(r"\d+\.\d+( LTS)?", cells[0]):
            rows[cells[0].split()[0]] = re.findall(r"3\.\d+", cells[1])
    return rows


def test_the_classifiers_and_the_django_range_match_the_supported_versions_table():
    project = PYPROJECT["project"]
    rows = table_rows()
    assert set(rows) == {"5.2", "6.0", "6.1"}
    djangos = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
               if c.startswith("Framework :: Django :: ")}
    assert djangos == set(rows)
    pythons = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
               if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    assert pythons == {p for ps in rows.values() for p in ps}
    lowest = min(pythons, key=lambda v: tuple(map(int, v.split("."))))
    assert project["requires-python"] == f">={lowest}"
    django = next(d for d in project["dependencies"] if d.startswith("django"))
    assert django == "django>=5.2,<6.2"
    assert PYPROJECT["project"]["optional-dependencies"]["tasks"][0].startswith("django-tasks")


@pytest.mark.skipif(not list(PY310.glob("3.10*/bin/python3")), reason="no Python 3.10 here")
def test_the_pure_python_modules_import_on_python_3_10():
    """states (StrEnum) and compat (UTC) need nothing of Django: a bare 3.10 imports them.
    The rest runs on 3.10 in the matrix (noxfile.py)."""
    python = sorted(PY310.glob("3.10*/bin/python3"))[-1]
    code = ("from django_pg_jobqueue import compat, states; "
            "assert str(states.Status.QUEUED) == f'{states.Status.QUEUED}' == 'queued'; "
            "assert states.Status('failed') is states.Status.FAILED; "
            "print(compat.UTC)")
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(REPO / "backend"),
                                            "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "UTC"


def test_the_matrix_runs_every_supported_pair_and_make_test_runs_the_lowest():
    import importlib.util

    spec = importlib.util.spec_from_file_location("noxfile_under_test", REPO / "noxfile.py")
    noxfile = importlib.util.module_from_spec(spec)
    pytest.importorskip("nox")
    spec.loader.exec_module(noxfile)
    assert noxfile.MATRIX == table_rows()
    assert set(noxfile.ADOPTION) | set(noxfile.TASKS) <= set(noxfile.ENGINE + noxfile.TASKS
                                                            + noxfile.API + noxfile.ADOPTION)
    assert "tests/tasks/test_tasks_contract.py" in noxfile.QUICK
    makefile = (REPO / "Makefile").read_text()
    lowest_python = min(noxfile.MATRIX["5.2"], key=lambda v: tuple(map(int, v.split("."))))
    assert f"nox -s tests-{lowest_python}-django5.2 --error-on-missing-interpreters -- quick" \
        in makefile
    assert re.search(r"^test: .*\btest-lowest\b", makefile, re.M)
    assert str(noxfile.ENVDIR).startswith(("/tmp", os.environ.get("TMPDIR", "/tmp")))
