"""The room layout (ARCHITECTURE.md): read from the source's import statements, not from a list kept by hand.

- every metric room has prompt.py, parse.py, system.py, plugin.py, its evaluate module and card;
- no import cycle between rooms (subpackages of radmetrics), counting imports inside functions too;
- a metric room imports shared modules and other rooms' public names only, and never the judge, the runner
  or the CLI (prompts and parsing stay pure: the model is called at the edge).
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import PACKAGE  # the checkout's radmetrics/, or the installed wheel's: the same rules hold
METRIC_ROOMS = ["green", "vert", "finerad_score", "radcliq_rubric"]
#: rooms whose imports of each other are checked for cycles (meta and baselines: see ARCHITECTURE.md)
ROOMS = METRIC_ROOMS + ["er2score", "judge", "train", "data", "hub", "cli"]
EDGE = {"judge", "runner", "cli"}


def imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) for every `import radmetrics.x` / `from radmetrics.x import name` in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.startswith("radmetrics.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("radmetrics"):
            for alias in node.names:
                if node.module == "radmetrics":  # from radmetrics import evaluate_support
                    found.append((f"radmetrics.{alias.name}", ""))
                else:
                    found.append((node.module, alias.name))
    return found


def room_of(module: str) -> str:
    return module.split(".")[1]


def room_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for room in ROOMS:
        for path in (PACKAGE / room).rglob("*.py"):
            for module, _ in imports(path):
                other = room_of(module)
                if other != room and other in ROOMS:
                    graph[room].add(other)
    return graph


@pytest.mark.parametrize("room", METRIC_ROOMS)
def test_metric_room_has_the_standard_shape(room):
    files = {p.name for p in (PACKAGE / room).iterdir()}
    assert {"prompt.py", "parse.py", "system.py", "plugin.py", "README.md", f"{room}.py"} <= files, files


def test_no_import_cycle_between_rooms():
    graph = room_graph()

    def visit(room, path):
        for nxt in sorted(graph.get(room, ())):
            assert nxt not in path, f"import cycle: {' -> '.join(path + [nxt])}"
            visit(nxt, path + [nxt])

    for room in ROOMS:
        visit(room, [room])


@pytest.mark.parametrize("room", METRIC_ROOMS)
def test_metric_room_imports_only_shared_modules_and_public_names(room):
    for path in (PACKAGE / room).rglob("*.py"):
        for module, name in imports(path):
            other = room_of(module)
            assert other not in EDGE, f"{path.relative_to(PACKAGE.parent)} imports {module}: rooms stay pure, the judge is called by the runner"
            if other != room and (PACKAGE / other).is_dir():
                assert not name.startswith("_") and not module.split(".")[-1].startswith("_"), (
                    f"{path.relative_to(PACKAGE.parent)} imports private {module}.{name}")


def test_no_import_cycle_between_rooms_and_shared_modules():
    """The same over every subpackage and top-level module, with the registry's default plugins (loaded by
    name through importlib) as edges: e.g. the judge package never imports the registry above it."""
    from radmetrics.plugins import DEFAULT_PLUGINS

    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        unit = relative.parts[0].removesuffix(".py")
        if unit == "__init__":  # the package's curated re-exports
            continue
        for module, _ in imports(path):
            other = room_of(module)
            if other != unit and other in KNOWN_UNITS:
                graph[unit].add(other)
    graph["plugins"] |= {room_of(name) for name in DEFAULT_PLUGINS}
    # meta <-> baselines is still open (ARCHITECTURE.md); everything else is one-directional
    graph["baselines"].discard("meta")

    def visit(unit, path):
        for nxt in sorted(graph.get(unit, ())):
            assert nxt not in path, f"import cycle: {' -> '.join(path + [nxt])}"
            visit(nxt, path + [nxt])

    for unit in sorted(graph):
        visit(unit, [unit])


KNOWN_UNITS = {p.name.removesuffix(".py") for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}


def test_the_checks_would_see_a_cycle(tmp_path, monkeypatch):
    """The graph is read from real import statements: a function-level import back from judge is an edge."""
    fake = tmp_path / "radmetrics"
    for room in ROOMS:
        (fake / room).mkdir(parents=True)
    (fake / "green" / "system.py").write_text("from radmetrics.vert.prompt import x\n")
    (fake / "vert" / "prompt.py").write_text("def f():\n    from radmetrics.green.system import y\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    with pytest.raises(AssertionError, match="import cycle: green -> vert -> green"):
        test_no_import_cycle_between_rooms()
