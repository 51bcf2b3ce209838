"""One-way layering: a module imports its own part or a part below it, and no modules import each
other in a cycle (docs/architecture.md draws the layers).

Every import counts, at any depth (inside functions too), relative or absolute. Imports under
`if TYPE_CHECKING:` count for the direction (a lower part that names a higher part's types knows
about it) but not for cycles (they never run, so they cannot make an import cycle).
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import mutagym

ROOT = Path(__file__).resolve().parents[1]

#: The parts, bottom first: a module may import its own part or one listed before it.
LAYERS = ("runtime", "configs", "substrates", "rules", "rewards", "mutants", "envs", "mutagym")


@dataclass(frozen=True)
class Edge:
    source: str          # importing module
    target: str          # imported module (a package's own name for its `__init__.py`)
    path: str            # importing file, relative to the root
    line: int
    typing_only: bool


def package_dirs(root: Path) -> dict[str, str]:
    """pyproject.toml's `package-dir`: package name -> folder."""
    with open(root / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]["package-dir"]


def find_modules(root: Path, packages: dict[str, str]) -> dict[str, tuple[Path, bool]]:
    """Every module of the mapped folders: dotted name -> (file, is a package's `__init__.py`)."""
    modules = {}
    for package, folder in packages.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root / folder).with_suffix("").parts
            is_init = parts[-1] == "__init__"
            modules[".".join((package, *(parts[:-1] if is_init else parts)))] = (path, is_init)
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST, typing_only: bool = False):
    """(node, typing_only) for every import statement under `tree`, at any depth."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, typing_only
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for node in child.body:
                yield from _import_nodes(ast.Module(body=[node], type_ignores=[]), True)
            for node in child.orelse:
                yield from _import_nodes(ast.Module(body=[node], type_ignores=[]), typing_only)
        else:
            yield from _import_nodes(child, typing_only)


def _base(module: str, is_init: bool, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` names."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_init else module.split(".")[:-1]
    if node.level - 1 > len(package) - 1:
        raise ValueError(f"relative import beyond the top package (level {node.level}) in {module}")
    anchor = package[:len(package) - (node.level - 1)]
    return ".".join(anchor + ([node.module] if node.module else []))


def import_edges(root: Path, packages: dict[str, str]) -> tuple[list[Edge], dict[str, tuple[Path, bool]]]:
    """Every import of a `mutagym` module by a module of the package."""
    modules = find_modules(root, packages)
    edges = []
    for name, (path, is_init) in modules.items():
        rel = str(path.relative_to(root))
        for node, typing_only in _import_nodes(ast.parse(path.read_text(), filename=rel)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = _base(name, is_init, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            edges += [Edge(name, t, rel, node.lineno, typing_only) for t in dict.fromkeys(targets)
                      if t == "mutagym" or t.startswith("mutagym.")]
    return edges, modules


def _part(module: str, packages: dict[str, str]) -> str:
    """The part (folder) a module belongs to: its longest mapped package."""
    package = max((p for p in packages if module == p or module.startswith(p + ".")), key=len)
    return packages[package]


def _cycles(edges: list[Edge]) -> list[list[Edge]]:
    """One cycle through each group of modules that import each other (runtime imports only)."""
    graph: dict[str, list[Edge]] = {}
    for e in edges:
        if not e.typing_only and e.source != e.target:
            graph.setdefault(e.source, []).append(e)
    found, done, seen = [], set(), set()

    def visit(module: str, stack: list[Edge], on_stack: dict[str, int]) -> None:
        on_stack[module] = len(stack)
        for e in graph.get(module, []):
            if e.target in on_stack:
                cycle = stack[on_stack[e.target]:] + [e]
                key = frozenset(c.source for c in cycle)
                if key not in seen:
                    seen.add(key)
                    found.append(cycle)
            elif e.target not in done:
                visit(e.target, stack + [e], on_stack)
        del on_stack[module]
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [], {})
    return found


def layering_problems(root: Path, layers: tuple[str, ...] = LAYERS,
                      moved: dict[str, str] | None = None) -> list[str]:
    """Every upward import, unknown module and import cycle, one line each naming the file and
    line; a moved module's old name (`moved`) counts as the module it names now."""
    packages = package_dirs(root)
    moved = mutagym.MOVED if moved is None else moved
    problems = [f"pyproject.toml maps {p} ({f}/), which LAYERS does not place"
                for p, f in packages.items() if f not in layers]
    if problems:
        return problems
    edges, modules = import_edges(root, packages)
    known = []
    for e in edges:
        where = f"{e.path}:{e.line}"
        if e.target in moved:          # the facade resolves it: judge where it really points
            e = Edge(e.source, moved[e.target], e.path, e.line, e.typing_only)
        if e.target not in modules:
            problems.append(f"{where}: imports {e.target}, which is no module of the package")
        else:
            known.append(e)
            low, high = _part(e.source, packages), _part(e.target, packages)
            if layers.index(high) > layers.index(low):
                problems.append(f"{where}: {e.source} ({low}/) imports {e.target} ({high}/), a layer above it "
                                f"(bottom first: {' < '.join(layers)})")
    for cycle in _cycles(known):
        chain = " -> ".join(f"{e.source} ({e.path}:{e.line})" for e in cycle)
        problems.append(f"import cycle: {chain} -> {cycle[0].source}")
    return problems


# ---------------------------------------------------------------------------------------------
# the package
# ---------------------------------------------------------------------------------------------

def test_the_package_is_layered():
    """Every import of every module points to its own part or below, and there is no cycle."""
    problems = layering_problems(ROOT)
    assert not problems, "\n".join(problems)


def test_the_architecture_page_states_the_layers():
    """docs/architecture.md gives the order this test enforces."""
    assert f"`{' < '.join(LAYERS)}`" in (ROOT / "docs" / "architecture.md").read_text()


def test_every_module_is_seen():
    """The walk finds the modules that exist, imports inside functions included."""
    edges, modules = import_edges(ROOT, package_dirs(ROOT))
    assert {"mutagym.cli", "mutagym.runtime", "mutagym.mutants.killmatrix", "mutagym.envs.trainer"} <= set(modules)
    assert any(e.source == "mutagym.envs.trainer" and e.target == "mutagym.envs.judge" for e in edges)


@pytest.mark.parametrize("old", sorted(mutagym.MOVED))
def test_old_names_import_the_moved_module(old):
    """A moved module's old name is the new module itself, which keeps its own name and spec."""
    new = importlib.import_module(mutagym.MOVED[old])
    assert importlib.import_module(old) is new
    parent, _, leaf = old.rpartition(".")
    assert getattr(importlib.import_module(parent), leaf) is new
    assert new.__name__ == new.__spec__.name == mutagym.MOVED[old]


# ---------------------------------------------------------------------------------------------
# the checker itself, on small trees
# ---------------------------------------------------------------------------------------------

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackage-dir = { "mutagym" = "top", "mutagym.low" = "low", "mutagym.high" = "high" }\n')
    for name, text in {"top/__init__.py": "", "low/__init__.py": "", "high/__init__.py": "", **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


LAYERS_LOW_HIGH = ("low", "high", "top")


def test_an_upward_import_inside_a_function_is_named(tmp_path):
    """A relative import two levels up, hidden in a function, is named with its file and line."""
    root = _tree(tmp_path, {"low/a.py": "import os\n\n\ndef f():\n    from ..high import b\n",
                            "high/b.py": "X = 1\n"})
    assert layering_problems(root, LAYERS_LOW_HIGH, {}) == [
        "low/a.py:5: mutagym.low.a (low/) imports mutagym.high.b (high/), a layer above it "
        "(bottom first: low < high < top)"]


def test_an_absolute_import_cycle_is_named(tmp_path):
    """Two modules of one part that import each other (one absolutely) make a cycle."""
    root = _tree(tmp_path, {"low/a.py": "from . import b\n",
                            "low/b.py": "def g():\n    import mutagym.low.a\n"})
    assert layering_problems(root, LAYERS_LOW_HIGH, {}) == [
        "import cycle: mutagym.low.a (low/a.py:1) -> mutagym.low.b (low/b.py:2) -> mutagym.low.a"]


def test_typing_only_imports_count_for_direction_not_cycles(tmp_path):
    """An import under TYPE_CHECKING never runs: no cycle, but still no upward reference."""
    root = _tree(tmp_path, {
        "low/a.py": "from typing import TYPE_CHECKING\nfrom . import b\nif TYPE_CHECKING:\n    from ..high import c\n",
        "low/b.py": "import typing\nif typing.TYPE_CHECKING:\n    from .a import x\n",
        "high/c.py": ""})
    assert layering_problems(root, LAYERS_LOW_HIGH, {}) == [
        "low/a.py:4: mutagym.low.a (low/) imports mutagym.high.c (high/), a layer above it "
        "(bottom first: low < high < top)"]


def test_old_names_count_where_they_point_and_unknown_modules_are_named(tmp_path):
    """A moved module's old name in a lower part is an upward import; a missing module is named."""
    root = _tree(tmp_path, {"low/c.py": "import mutagym.low.gone\nfrom .old import x\n", "high/new.py": ""})
    assert layering_problems(root, LAYERS_LOW_HIGH, {"mutagym.low.old": "mutagym.high.new"}) == [
        "low/c.py:1: imports mutagym.low.gone, which is no module of the package",
        "low/c.py:2: mutagym.low.c (low/) imports mutagym.high.new (high/), a layer above it "
        "(bottom first: low < high < top)"]


def test_an_unplaced_part_is_named(tmp_path):
    """A folder pyproject.toml maps but LAYERS does not place cannot be checked: it is named."""
    root = _tree(tmp_path, {})
    assert layering_problems(root, ("low", "top"), {}) == [
        "pyproject.toml maps mutagym.high (high/), which LAYERS does not place"]
