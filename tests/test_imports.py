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
#: Top-level modules are the foundation (layer 0) unless named in ENTRY.
LAYERS = {
    "suite": 1,
    "produce": 2,
    "judging": 3,
    "deciding": 4,
    "reporting": 5,
    "drift": 6,
    "holdout": 6,
    "history": 6,
    "importers": 6,
    "scaffold": 6,
    "pipeline": 7,
    "github": 8,
    "cli": 8,
}
# Layer 8 with github/ and cli/: the entry points.
ENTRY = {"gate.__main__"}

#: Imports that still climb, each a debt to pay by moving what both sides need downward.
#: The list may only shrink: a new upward import fails with its path.
KNOWN_CLIMBS: set[tuple[str, str]] = {
    # The config's models hold the judge pin, the systems' and instruments' registries and
    # the clusters rule; cases and defaults parse `expect:` with the checks' registry.
    # Paid by moving those models and registries into gate/suite/.
    ("gate.suite.config", "gate.judging.judge"),
    ("gate.suite.config", "gate.produce"),
    ("gate.suite.config", "gate.produce.systems"),
    ("gate.suite.cases", "gate.judging"),
    ("gate.suite.cases", "gate.judging.checks"),
    ("gate.suite.defaults", "gate.judging"),
    ("gate.suite.defaults", "gate.judging.checks"),
}


def layer_of(module: str) -> int:
    parts = module.split(".")
    if module in ENTRY:
        return 8
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
    new = sorted(climbs(graph) - KNOWN_CLIMBS)
    assert not new, (
        "imports that climb a layer (stage folders, lowest first: "
        + ", ".join(LAYERS)
        + "):\n"
        + "\n".join(f"{paths[m].relative_to(GATE.parent)}: imports {t}" for m, t in new)
    )
    paid = sorted(KNOWN_CLIMBS - climbs(graph))
    assert not paid, f"no longer climbing, remove from KNOWN_CLIMBS: {paid}"


def test_the_layer_walk_sees_a_climb() -> None:
    assert climbs(
        {"gate.suite.cases": {"gate.reporting.report"}, "gate.reporting.report": {"gate.files"}}
    ) == {("gate.suite.cases", "gate.reporting.report")}
