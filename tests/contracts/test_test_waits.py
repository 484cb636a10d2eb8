"""The suite waits on signals, not on the clock: every sleep left in tests/ says why on its
line or the line above (a handler's work, time that must pass, a sample's interval, a poll of
another process), and neither the sleeps nor the `wait_for` polls grow past what is left.
A new wait belongs on a test signal (django_pg_jobqueue/worker/signals.py), a worker's log
line (tests.handlers.chaos_handlers.Output) or a moved clock; lower the ceilings as they go."""
import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# Lowered from 37 and 40 when start-ups, back-offs, parks, give-backs and LISTEN connections of
# other processes moved onto their log lines, and sweeps that must do nothing more were run
# here instead of waited for. What is left: handlers' work (deaf to a stop, or an await a
# timeout cancels), random timing in the fencing race, samples, time that is the scenario
# (a held key, a held row lock), and polls of rows and sessions nothing reports (31 since a
# closed session was found to linger in pg_stat_activity for a moment on a loaded machine:
# tests.utils.wait_until_no_session, shared by the tests that count sessions).
SLEEPS_AT_MOST = 15  # time.sleep and asyncio.sleep calls
WAIT_FOR_AT_MOST = 31  # calls of tests.utils.wait_for (or a module's own wait_for)


def _calls(names: set[str], exclude: frozenset[str] = frozenset(),
           root: Path = TESTS) -> list[tuple[Path, int, str]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name in names or (name.split(".")[-1] in names and name not in exclude):
                    found.append((path, node.lineno, lines[node.lineno - 1]))
    return found


def sleeps(root: Path = TESTS) -> list[tuple[Path, int, str]]:
    return _calls({"time.sleep", "asyncio.sleep"}, root=root)


def test_every_sleep_in_the_tests_says_why():
    unexplained = []
    for path, lineno, line in sleeps():
        above = path.read_text().splitlines()[lineno - 2].strip() if lineno > 1 else ""
        if "#" not in line and not above.startswith("#"):
            unexplained.append(f"{path.relative_to(TESTS.parent)}:{lineno}: {line.strip()}")
    assert not unexplained, "a sleep without its reason:\n" + "\n".join(unexplained)


def test_the_sleeps_and_polls_left_in_the_tests_do_not_grow():
    assert len(sleeps()) <= SLEEPS_AT_MOST, [f"{p.name}:{n}" for p, n, _ in sleeps()]
    polls = _calls({"wait_for"}, exclude=frozenset({"asyncio.wait_for"}))
    assert len(polls) <= WAIT_FOR_AT_MOST, [f"{p.name}:{n}" for p, n, _ in polls]


def test_the_count_sees_a_sleep_by_either_name(tmp_path):
    (tmp_path / "test_x.py").write_text("import asyncio, time\n\n\nasync def test_x():\n"
                                        "    time.sleep(1)\n    await asyncio.sleep(1)\n")
    assert [(p.name, n) for p, n, _ in sleeps(tmp_path)] == [("test_x.py", 5), ("test_x.py", 6)]
