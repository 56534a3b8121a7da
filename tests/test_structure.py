"""ember's import structure: no import circles, and imports point down the layers.

The layers (DESIGN: imports point downward only), lowest first:

    base        ember.errors, ember.config, ember._traceback
    backends    ember.backends
    core        ember.core
    transforms  ember.transforms
    namespaces  ember.lax, ember.numpy, ember.scipy (one layer: numpy is written with lax, scipy with both)
    libraries   ember.random, ember.nn, ember.optim, ... and every other module (ember, ember.tree, ...)

Every module under ember/ is parsed with `ast`; every ``import`` / ``from ... import`` counts, at
module level and inside functions alike (an import inside a function is a dependency all the same; it
only runs later), except those under ``if TYPE_CHECKING:``, which never run. ``from pkg import name``
counts as an import of the module ``pkg.name`` where that is a module, of ``pkg`` otherwise.

One narrower rule, for circles only: an import written *inside a function* between two modules of the
same package directory (siblings, or a package's ``__init__`` and its own modules) is left out of the
circle check. Such an import is how one public namespace is assembled from its private modules (the
one-argument ``enp.where`` is ``enp.nonzero`` from ``numpy/_take.py``; ``__array_namespace__``
returns the ``ember.numpy`` package itself): it runs at call time, after the package has finished
importing, so it cannot break an import, and it ties no layer to another. It still counts for the
layer rule, and it counts everywhere in ``ember/core/primitives``, whose family modules are ordered
(a family may build on the families below it, never the other way round, so that new families can
import the old ones freely).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ember"

LAYERS = [
    ("base", ("ember.errors", "ember.config", "ember._traceback")),
    ("backends", ("ember.backends",)),
    ("core", ("ember.core",)),
    ("transforms", ("ember.transforms",)),
    ("namespaces", ("ember.lax", "ember.numpy", "ember.scipy")),
]
TOP = len(LAYERS)  # ember.random, ember.nn, ember itself, ...
STRICT_PACKAGES = ("ember.core.primitives",)  # function-level imports between siblings count here too


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def layer(module: str) -> int:
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return TOP


def _package(module: str) -> str:
    """The package directory a module lives in (a package's __init__ lives in its own directory)."""
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = _package(module).split(".")[: len(_package(module).split(".")) - (node.level - 1)]
            prefix = ".".join([*base, *([node.module] if node.module else [])])
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]
    found = []
    for name in names:
        while name and name not in MODULES:  # `import ember.numpy.fft` -> the module; a name inside one -> it
            name = name.rpartition(".")[0]
        if name and name != module:
            found.append(name)
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class Import:
    __slots__ = ("deferred", "line", "source", "target")

    def __init__(self, source: str, target: str, line: int, deferred: bool):
        self.source, self.target, self.line, self.deferred = source, target, line, deferred

    def __repr__(self) -> str:
        where = "inside a function" if self.deferred else "at module level"
        return f"{self.source} -> {self.target} ({MODULES[self.source].relative_to(ROOT)}:{self.line}, {where})"


def _imports(module: str) -> list[Import]:
    tree = ast.parse(MODULES[module].read_text(), filename=str(MODULES[module]))
    out: list[Import] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.extend(Import(module, t, child.lineno, deferred) for t in dict.fromkeys(_targets(module, child)))
            inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, False)
    return out


IMPORTS = {m: _imports(m) for m in MODULES}


def _counts_for_circles(imp: Import) -> bool:
    if not imp.deferred or _package(imp.source) != _package(imp.target):
        return True
    return any(imp.source.startswith(p + ".") for p in STRICT_PACKAGES)


def _circles(edges: dict[str, list[Import]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for imp in children:
                t = imp.target
                if t not in index:
                    index[t] = low[t] = len(index)
                    stack.append(t)
                    on_stack.add(t)
                    work.append((t, iter(edges[t])))
                    advanced = True
                    break
                if t in on_stack:
                    low[node] = min(low[node], index[t])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_module_list_is_complete():
    assert {"ember", "ember.numpy", "ember.core.primitives.structural", "ember.transforms.jit"} <= set(MODULES)


def test_no_import_circles():
    edges = {m: [i for i in IMPORTS[m] if _counts_for_circles(i)] for m in MODULES}
    circles = _circles(edges)
    report = []
    for circle in circles:
        members = set(circle)
        report.append(" <-> ".join(circle) + ":\n    " + "\n    ".join(
            repr(i) for m in circle for i in edges[m] if i.target in members))
    assert not circles, "import circles in ember/ (break them: move the shared piece down a layer, look a " \
                        "primitive up by name, or pass it in):\n" + "\n".join(report)


def test_imports_point_down_the_layers():
    upward = [i for m in MODULES for i in IMPORTS[m] if layer(i.target) > layer(i.source)]
    names = [name for name, _ in LAYERS] + ["libraries"]
    assert not upward, "imports that run up a layer:\n" + "\n".join(
        f"  {i!r}: {names[layer(i.source)]} imports {names[layer(i.target)]}" for i in upward)


@pytest.mark.parametrize("source, target, deferred, circle", [
    ("import ember.numpy\n", "ember.lax.control_flow", True, True),  # numpy imports lax
    ("from ember.transforms.jit import jit\n", "ember.lax.control_flow", False, False),
    ("from ember.core.primitives.reduction import reduce_sum_p\n", "ember.core.primitives.structural", True, True),
    ("from ember.numpy._take import nonzero\n", "ember.numpy._shape", True, False),  # siblings, at call time
])
def test_the_checks_find_what_they_look_for(source, target, deferred, circle):
    # The analysis on a made-up import added to a module.
    imp = _imports_of_text(target, source, deferred)
    edges = {m: [i for i in IMPORTS[m] if _counts_for_circles(i)] for m in MODULES}
    edges[target] = edges[target] + imp
    assert any(target in c for c in _circles(edges)) == circle


def _imports_of_text(module: str, text: str, deferred: bool) -> list[Import]:
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.extend(Import(module, t, node.lineno, deferred) for t in _targets(module, node))
    return out


def test_layers_of_some_modules():
    assert layer("ember.errors") < layer("ember.backends.kernels") < layer("ember.core.array")
    assert layer("ember.core.array") < layer("ember.transforms.jit") < layer("ember.numpy._ufuncs")
    assert layer("ember.lax.control_flow") == layer("ember.numpy") < layer("ember.random") == layer("ember")
