"""No import cycles inside doit, lazy (function-level) imports included: a module graph read
from the source, so a cycle hidden behind an import inside a function is found too."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "doit"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, name: str, known: set[str]) -> set[str]:
    """doit modules that ``path`` imports anywhere in its body (``from a import b``: ``a.b``
    when that is a module, else ``a``)."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + is_package]
                base = ".".join([*anchor, base] if base else anchor)
            for a in node.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imported(path, name, set(mods)) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_planted_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_doit_has_no_import_cycle():
    assert cycles(graph()) == []


# Lower layers never import upper ones: data and models know nothing of training, evaluation,
# studies or analysis; evaluation knows nothing of training (it reads run dirs as files);
# training knows nothing of the studies that run it, the grid nothing of the analysis of its
# tables, and the analysis reads run folders only through the grid.
LAYERS = {
    "doit.data": ("doit.train", "doit.eval", "doit.grid", "doit.analysis"),
    "doit.models": ("doit.train", "doit.eval", "doit.grid", "doit.analysis"),
    "doit.io": (
        "doit.data",
        "doit.models",
        "doit.train",
        "doit.eval",
        "doit.grid",
        "doit.analysis",
    ),
    "doit.eval": ("doit.train",),
    "doit.train": ("doit.grid", "doit.analysis"),
    "doit.grid": ("doit.analysis",),
    "doit.analysis": ("doit.train",),
    # the statistics the planner and the analysis share: below both
    "doit.stats": ("doit.train", "doit.eval", "doit.grid", "doit.analysis", "doit.models"),
}
# What the analysis may import of the grid: its public face (doit/grid/__init__.py) and the two
# contract modules, the results table and the typed plan; never the runner's insides.
GRID_FACE = ("doit.grid", "doit.grid.results", "doit.grid.plan")


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{src} -> {dst}"
        for src, targets in edges.items()
        for layer, forbidden in LAYERS.items()
        if within(src, layer)
        for dst in targets
        if any(within(dst, f) for f in forbidden)
    )


def test_the_layer_check_finds_a_planted_upward_import():
    edges = {"doit.data.load": {"doit.eval.score"}, "doit.eval.cli": {"doit.data.load"}}
    assert layer_violations(edges) == ["doit.data.load -> doit.eval.score"]


def test_lower_layers_import_nothing_from_upper_ones():
    assert layer_violations(graph()) == []


def face_violations(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{src} -> {dst}"
        for src, targets in edges.items()
        if within(src, "doit.analysis")
        for dst in targets
        if within(dst, "doit.grid") and dst not in GRID_FACE
    )


def test_the_face_check_finds_a_planted_reach_past_the_grids_face():
    edges = {
        "doit.analysis.ladder": {"doit.grid", "doit.grid.results", "doit.grid.evaluate"},
        "doit.grid.runner": {"doit.grid.cell"},
        "doit.train.sft": {"doit.grid.plan"},
    }
    assert face_violations(edges) == ["doit.analysis.ladder -> doit.grid.evaluate"]
    assert layer_violations(edges) == ["doit.train.sft -> doit.grid.plan"]


def test_the_analysis_imports_only_the_grids_public_face():
    assert face_violations(graph()) == []
