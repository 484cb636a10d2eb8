"""The package stands in layers: no import cycle among its modules.

`make lint` runs import-linter's layers contract (pyproject.toml [tool.importlinter]); this
test counts cycles module by module, counting imports inside functions and under
TYPE_CHECKING as imports, so a cycle hidden in a function body fails here too.
"""
import grimp

PACKAGE = "django_pg_jobqueue"


def import_graph() -> dict[str, set[str]]:
    """Each module of the package (migrations aside: they import nothing of it) and the
    package's modules it imports, at the top or anywhere inside."""
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    modules = {m for m in graph.modules if ".migrations" not in m}
    return {m: {x for x in graph.find_modules_directly_imported_by(m) if x in modules}
            for m in modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, without
    recursion): each is an import cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_cycle_finder_finds_a_cycle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 100  # the whole package was read
    found = cycles(graph)
    assert found == [], "import cycles (function-local imports count): " + "; ".join(
        " <-> ".join(group) for group in found)


def test_a_function_local_import_counts():
    """The graph sees an import inside a function body: the periodic declarations import
    the task options only inside `PeriodicEntry.load_task`."""
    graph = import_graph()
    assert f"{PACKAGE}.tasks.options" in graph[f"{PACKAGE}.periodic"]


def test_the_picture_of_the_floors_is_current_with_the_contract():
    """assets/layers.svg is drawn from pyproject.toml's contract: `make diagrams` redraws it."""
    import subprocess
    import sys
    import xml.etree.ElementTree as ET
    from pathlib import Path

    assets = Path(__file__).resolve().parents[2] / "assets"
    fresh = subprocess.run([sys.executable, str(assets / "layers.py")], capture_output=True,
                           text=True, check=True).stdout
    assert fresh == (assets / "layers.svg").read_text(), "run `make diagrams`"
    ET.fromstring(fresh)  # well-formed
    for module in ("api", "worker", "engine", "services", "catalogue", "sql", "states"):
        assert f">{module}<" in fresh
