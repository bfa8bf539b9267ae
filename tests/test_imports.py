"""No module of casegate imports, even late inside a function, one that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

GATE = Path(__file__).resolve().parent.parent / "gate"


def module_name(path: Path) -> str:
    parts = path.relative_to(GATE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, known: set[str]) -> set[str]:
    """Every casegate module `path` imports at run time (TYPE_CHECKING blocks aside)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                found.add(child.module)
                found.update(f"{child.module}.{alias.name}" for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text()))
    return {name for name in found if name in known} - {module_name(path)}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in graph:
        if node not in index:
            connect(node)
    return groups


def test_no_import_cycles() -> None:
    paths = {module_name(p): p for p in GATE.rglob("*.py") if "__pycache__" not in p.parts}
    graph = {name: imported(path, set(paths)) for name, path in paths.items()}
    assert len(graph) > 100 and graph["gate.suite.config"]  # the walk found the package
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


#: The stages, lowest first: a module may import its own layer and the ones below it.
#: Top-level modules are the foundation (layer 0) unless named in ENTRY. Below the suite sit
#: the words a suite is written in: the checks its cases ask for and the systems its config
#: names, so reading a suite checks it with the same code that later runs it.
LAYERS = {
    "checks": 1,
    "systems": 1,
    "suite": 2,
    "produce": 3,
    "judging": 4,
    "deciding": 5,
    "reporting": 6,
    "drift": 7,
    "holdout": 7,
    "history": 7,
    "importers": 7,
    "scaffold": 7,
    "grow": 7,
    "pipeline": 8,
    "github": 9,
    "cli": 9,
}
# The top layer with github/ and cli/: the entry points.
ENTRY = {"gate.__main__"}


def layer_of(module: str) -> int:
    parts = module.split(".")
    if module in ENTRY:
        return max(LAYERS.values())
    if len(parts) == 2 and parts[1] not in LAYERS:
        return 0
    return LAYERS[parts[1]] if len(parts) > 1 else 0


def climbs(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    }


def test_layers_import_downward() -> None:
    paths = {module_name(p): p for p in GATE.rglob("*.py") if "__pycache__" not in p.parts}
    graph = {name: imported(path, set(paths)) for name, path in paths.items()}
    found = sorted(climbs(graph))
    assert not found, (
        "imports that climb a layer (stage folders, lowest first: "
        + ", ".join(LAYERS)
        + "):\n"
        + "\n".join(f"{paths[m].relative_to(GATE.parent)}: imports {t}" for m, t in found)
    )


def test_the_layer_walk_sees_a_climb() -> None:
    assert climbs(
        {"gate.suite.cases": {"gate.reporting.report"}, "gate.reporting.report": {"gate.files"}}
    ) == {("gate.suite.cases", "gate.reporting.report")}
