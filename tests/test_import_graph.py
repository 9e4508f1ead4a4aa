"""The import graph of ``shc/``: no circle anywhere, and no import from a lower layer to a higher one.

Every module is parsed with ``ast``; every ``import`` / ``from ... import`` in it counts, wherever it stands:
at the top, inside a function (imported on demand), under ``if TYPE_CHECKING:`` (a circle all the same, only
hidden from the interpreter), and ``importlib.import_module("shc....")`` with a literal name. Relative imports
are resolved against the importing module's package. ``from a.b import c`` is an edge to the module ``a.b.c``
when there is one, else to ``a.b``. As in import-linter, importing ``a.b.c`` is not drawn as an edge to the
packages ``a`` and ``a.b`` (whose ``__init__`` runs first): a package that re-exports its modules would
otherwise be a circle with each of them.

:data:`LAYERS` is the house, bottom to top (docs/architecture.md draws it). A module belongs to the layer of
its longest matching entry (``"shc.runs"`` is that module, ``"shc.data.*"`` the package ``shc.data`` and every
module in it); a module may import from its own layer and the layers below, never from one above.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "shc"

#: The layers of ``shc``, bottom to top: (name, module or package entries).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundations", ("shc", "shc._compat", "shc._io", "shc._paths", "shc.registry", "shc.validation", "shc.stats",
                     "shc.executors",
                     "shc.progress", "shc._download", "shc.offline", "shc.cli_common", "shc.devices",
                     "shc.provenance")),
    ("compiled kernels", ("shc._jit", "shc._popcount", "shc.retrieval._kernels", "shc.centers._kernels")),
    ("data", ("shc.data.*",)),
    ("stage 1: similarity", ("shc.similarity",)),
    ("stage 2: distances", ("shc.centers.distance",)),
    ("stage 2: quality", ("shc.centers.quality",)),
    ("stage 2: baselines", ("shc.centers.baselines",)),
    ("stage 2: mds", ("shc.centers.mds",)),
    ("stage 2: Algorithm 1", ("shc.centers.semantic",)),
    ("stage 2: local search", ("shc.centers.search",)),
    ("stage 2: registry", ("shc.centers.registry",)),
    ("stage 2", ("shc.centers",)),
    ("networks and measures", ("shc.codebook", "shc.models", "shc.metrics.*", "shc.reachability", "shc.evaluation")),
    ("training: config", ("shc.train.config",)),
    ("training: checkpoint, distributed", ("shc.train.checkpoint", "shc.train.distributed")),
    ("training: loop, inference", ("shc.train.loop", "shc.train.inference")),
    ("training", ("shc.train",)),
    ("methods", ("shc.losses.*",)),
    ("method table", ("shc.methods",)),
    ("stage 0", ("shc.pretraining",)),
    ("runs", ("shc.runs",)),
    ("stages", ("shc.stages.base",)),
    ("stage definitions", ("shc.stages.definitions",)),
    ("stages package", ("shc.stages",)),
    ("retrieval, findings, figures", ("shc.retrieval.*", "shc.findings.*", "shc.paper", "shc.plots.*")),
    ("presets", ("shc.presets",)),
    ("compute and read", ("shc.pipeline", "shc.results.*", "shc.explore", "shc.explore_sources")),
    ("batch runner and command lines", ("shc.reports.*", "shc.cli", "shc.__main__")),
]


# --------------------------------------------------------------------------------------------
# The graph
# --------------------------------------------------------------------------------------------
def module_files(package_dir: Path) -> dict[str, tuple[Path, bool]]:
    """Every module below ``package_dir``: dotted name -> (file, whether it is a package's ``__init__``)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _named_imports(tree: ast.AST, package: str) -> Iterable[tuple[str, tuple[str, ...]]]:
    """(module, names imported from it) of every import statement, relative ones resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                if node.level - 1 > len(parts) - 1:
                    raise ValueError(f"relative import beyond the top package in {package}: level {node.level}")
                base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base, tuple(alias.name for alias in node.names)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            yield node.args[0].value, ()


def import_graph(package_dir: Path) -> tuple[dict[str, set[str]], list[str]]:
    """The module graph of the package at ``package_dir`` (module -> the package's modules it imports) and
    the imports that name a module of the package that does not exist ("importer: name")."""
    modules = module_files(package_dir)
    top = package_dir.name
    graph: dict[str, set[str]] = {}
    missing: list[str] = []
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        edges = set()
        for base, names in _named_imports(ast.parse(path.read_text(), str(path)), package):
            if base != top and not base.startswith(top + "."):
                continue
            if base not in modules:
                missing.append(f"{name}: {base}")
                continue
            targets = [f"{base}.{item}" if f"{base}.{item}" in modules else base for item in names] or [base]
            edges.update(target for target in targets if target != name)
        graph[name] = edges
    return graph, missing


def find_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected group of modules, as a path ``[a, b, ..., a]``, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative (no recursion limit)
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(_circle_through(min(group), group, graph) for group in groups)


def _circle_through(start: str, group: set[str], graph: Mapping[str, set[str]]) -> list[str]:
    """A shortest circle from ``start`` back to itself inside ``group`` (breadth first)."""
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph[node] & group):
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if successor not in parents:
                    parents[successor] = node
                    following.append(successor)
        frontier = following
    raise AssertionError(f"no circle through {start} in {sorted(group)}")


def _matches(entry: str, module: str) -> bool:
    """``"a.b"`` matches the module ``a.b``; ``"a.b.*"`` the package ``a.b`` and every module below it."""
    if entry.endswith(".*"):
        return module == entry[:-2] or module.startswith(entry[:-1])
    return module == entry


def layer_of(module: str, layers: Sequence[tuple[str, Sequence[str]]]) -> int | None:
    """The position of ``module``'s layer (its longest matching entry), None if no entry matches."""
    best, position = -1, None
    for number, (_, entries) in enumerate(layers):
        for entry in entries:
            if _matches(entry, module) and len(entry) > best:
                best, position = len(entry), number
    return position


def packages_run_on_the_way(importer: str, target: str) -> list[str]:
    """The packages whose ``__init__`` importing ``target`` runs and ``importer`` has not run already: the
    ancestors of ``target`` that are not ancestors of ``importer`` (``shc.metrics`` importing
    ``shc.retrieval._kernels`` runs ``shc.retrieval``'s ``__init__``, and with it the whole retrieval layer)."""
    own = importer.split(".")
    parts = target.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts)) if parts[:n] != own[:n]]


def upward_imports(graph: Mapping[str, set[str]], layers: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """Every import from a lower layer to a higher one, as a sentence; a package whose ``__init__`` an import runs
    on its way to the module it names counts as imported too (:func:`packages_run_on_the_way`)."""
    found = []
    for module in sorted(graph):
        low = layer_of(module, layers)
        for target in sorted(graph[module]):
            for reached in (*packages_run_on_the_way(module, target), target):
                high = layer_of(reached, layers)
                if low is not None and high is not None and high > low:
                    via = "" if reached == target else f" (its package's __init__, on the way to {target})"
                    found.append(f"{module} (layer {layers[low][0]!r}) imports {reached}{via} "
                                 f"(layer {layers[high][0]!r})")
    return found


def _describe(cycles: list[list[str]]) -> str:
    return "; ".join(" -> ".join(cycle) for cycle in cycles)


# --------------------------------------------------------------------------------------------
# shc itself
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shc_graph() -> dict[str, set[str]]:
    graph, missing = import_graph(PACKAGE)
    assert not missing, f"imports of modules that do not exist: {missing}"
    return graph


def test_no_module_of_shc_imports_one_that_imports_it_back(shc_graph):
    assert len(shc_graph) > 50 and shc_graph["shc.train.loop"] >= {"shc.train.config", "shc.train.checkpoint"}
    cycles = find_cycles(shc_graph)
    assert not cycles, f"import circles in shc/ (function-level imports included): {_describe(cycles)}"


def test_every_module_of_shc_has_a_layer_and_every_layer_entry_a_module(shc_graph):
    unplaced = sorted(module for module in shc_graph if layer_of(module, LAYERS) is None)
    assert not unplaced, f"modules in no layer; add them to LAYERS in {Path(__file__).name}: {unplaced}"
    stale = [entry for _, entries in LAYERS for entry in entries if not any(_matches(entry, m) for m in shc_graph)]
    assert not stale, f"LAYERS names modules that do not exist: {stale}"


def test_no_import_in_shc_runs_from_a_lower_layer_to_a_higher_one(shc_graph):
    upward = upward_imports(shc_graph, LAYERS)
    assert not upward, "imports running back up:\n" + "\n".join(upward)


def test_the_modules_of_a_package_import_their_siblings_not_the_package(shc_graph):
    """``shc.centers.search`` importing ``shc.centers`` would run the package's ``__init__``, which imports the
    search: the circle the split into packages removed."""
    for package in ("shc.centers", "shc.train", "shc.stages", "shc.results", "shc.losses", "shc.metrics"):
        inside = [module for module in shc_graph if module.startswith(package + ".")]
        assert inside and not [module for module in inside if package in shc_graph[module]], package


# --------------------------------------------------------------------------------------------
# The check itself can fail
# --------------------------------------------------------------------------------------------
def _write_package(root: Path, files: Mapping[str, str]) -> Path:
    for relative, text in files.items():
        path = root / "pkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_a_circle_through_a_function_level_and_a_relative_import_is_found_and_named(tmp_path):
    package = _write_package(tmp_path, {
        "__init__.py": "",
        "a.py": "def f():\n    from pkg import b  # on demand\n    return b\n",
        "b.py": "from .sub.c import thing\n",
        "sub/__init__.py": "",
        "sub/c.py": "from .. import a\nthing = 1\n",
        "d.py": "import pkg.sub\n",
    })
    graph, missing = import_graph(package)
    assert not missing
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.sub.c"}, "pkg.sub": set(),
                     "pkg.sub.c": {"pkg.a"}, "pkg.d": {"pkg.sub"}}
    cycles = find_cycles(graph)
    assert cycles == [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]
    assert _describe(cycles) == "pkg.a -> pkg.b -> pkg.sub.c -> pkg.a"


def test_a_circle_hidden_under_type_checking_counts_and_two_are_reported_apart(tmp_path):
    package = _write_package(tmp_path, {
        "__init__.py": "",
        "config.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.loop import Thing\n",
        "loop.py": "from pkg.config import Config\nclass Thing: ...\n",
        "x.py": "import importlib\nY = importlib.import_module('pkg.y')\n",
        "y.py": "from pkg import x\n",
    })
    graph, _ = import_graph(package)
    assert find_cycles(graph) == [["pkg.config", "pkg.loop", "pkg.config"], ["pkg.x", "pkg.y", "pkg.x"]]


def test_a_package_without_circles_passes_and_a_missing_module_is_reported(tmp_path):
    package = _write_package(tmp_path, {
        "__init__.py": "from pkg.low import value\n",
        "low.py": "value = 1\n",
        "high.py": "from . import low\nfrom pkg import __version__\nimport pkg.gone\n",
    })
    graph, missing = import_graph(package)
    assert find_cycles(graph) == [] and graph["pkg.high"] == {"pkg.low", "pkg"}
    assert missing == ["pkg.high: pkg.gone"]


def test_an_import_from_a_lower_layer_to_a_higher_one_is_found(tmp_path):
    package = _write_package(tmp_path, {"__init__.py": "", "low.py": "def f():\n    from pkg.top import g\n",
                                        "top.py": "def g(): ...\n", "sub/__init__.py": "", "sub/x.py": ""})
    graph, _ = import_graph(package)
    layers = [("bottom", ("pkg", "pkg.low")), ("upper", ("pkg.top", "pkg.sub.*"))]
    assert [layer_of(module, layers) for module in ("pkg.sub.x", "pkg.sub", "pkg.low", "pkg", "pkg.lower")] == [
        1, 1, 0, 0, None]
    assert upward_imports(graph, layers) == ["pkg.low (layer 'bottom') imports pkg.top (layer 'upper')"]
    assert upward_imports(graph, list(reversed(layers))) == []


def test_an_import_that_runs_a_higher_package_on_its_way_is_found(tmp_path):
    """``pkg.low`` names ``pkg.sub.kernel`` (a bottom-layer module), but importing it runs ``pkg.sub``'s
    ``__init__``, which belongs to the upper layer: an upward import all the same. A sibling inside ``pkg.sub``
    runs no package it is not in already."""
    package = _write_package(tmp_path, {"__init__.py": "", "low.py": "from pkg.sub.kernel import k\n",
                                        "sub/__init__.py": "from pkg.sub.kernel import k\n",
                                        "sub/kernel.py": "def k(): ...\n", "sub/top.py": "from pkg.sub import kernel\n"})
    graph, _ = import_graph(package)
    layers = [("bottom", ("pkg", "pkg.low", "pkg.sub.kernel")), ("upper", ("pkg.sub", "pkg.sub.top"))]
    assert packages_run_on_the_way("pkg.low", "pkg.sub.kernel") == ["pkg.sub"]
    assert packages_run_on_the_way("pkg.sub.top", "pkg.sub.kernel") == []
    assert upward_imports(graph, layers) == [
        "pkg.low (layer 'bottom') imports pkg.sub (its package's __init__, on the way to pkg.sub.kernel) "
        "(layer 'upper')"]


MAX_MODULE_LINES = 700
"""A module a newcomer can read in one sitting (issue 36): past this, split it by job, as shc.results was."""


def test_no_module_of_shc_is_longer_than_a_sitting():
    long = {name: lines for name, (path, _) in module_files(PACKAGE).items()
            if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines; split them by job: {long}"


def test_every_main_module_runs_its_command_only_as_a_script():
    """``shc/reports/__main__.py`` called the batch at import, so importing every module (pkgutil.walk_packages,
    pydoc, an audit's import pass) started ``python -m shc.reports --preset quick``: every statement of a
    ``__main__.py`` that runs something stands under ``if __name__ == "__main__":``."""
    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)

    def guarded(node: ast.stmt) -> bool:
        test = node.test if isinstance(node, ast.If) else None
        return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
                and [getattr(c, "value", None) for c in test.comparators] == ["__main__"])

    mains = sorted(PACKAGE.rglob("__main__.py"))
    assert len(mains) >= 5
    unguarded = {str(path.relative_to(PACKAGE.parent)): node.lineno for path in mains
                 for node in ast.parse(path.read_text()).body
                 if not (isinstance(node, allowed) or guarded(node)
                         or isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))}
    assert not unguarded, f"statements outside the __main__ guard (file: line): {unguarded}"


def test_the_reading_and_running_modules_start_without_torchvision():
    """Only the ResNet backbones need torchvision, and its import (its ops pull in torch._dynamo) costs about 2 s
    of every notebook kernel and command: shc.models imports it on first use."""
    import subprocess
    import sys

    probe = ("import sys; from shc import pipeline, plots, presets, reports, results, models; "
             "assert 'torchvision' not in sys.modules, 'torchvision was imported'; "
             "models.build_backbone('resnet18', in_channels=3); assert 'torchvision' in sys.modules")
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
