"""The import layering of ``runtime``: module-level imports only go downwards, and no two
modules or packages import each other at module level.

Layers, bottom first: ``core`` (errors, dtypes, shapes, the op record); the tensor, devices,
kernel-set map and dispatch; ``ops``; ``autodiff`` and ``capture``; ``nn``, ``optim``, ``data``,
``checkpoint``, ``distributed``; ``jit`` (``rt.compile``, over ``nn`` and ``optim``), the
package facade and the command-line programs.
"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "runtime"

BASE = {"runtime.tensor", "runtime.kernel_sets", "runtime.random", "runtime.lowprec",
        "runtime.device", "runtime.dispatch", "runtime.errors", "runtime.dtypes"}
APP = {"runtime", "runtime.__main__", "runtime.demo", "runtime.tour", "runtime.warmup"}
LAYER_OF_PACKAGE = {"core": 0, "ops": 2, "autodiff": 3, "capture": 3, "nn": 4, "optim": 4,
                    "distributed": 4}
LIBRARY = {"runtime.data": 4, "runtime.checkpoint": 4, "runtime.linalg": 4, "runtime.jit": 5}


def _modules() -> dict:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _group(mod: str) -> str:
    """The package a module belongs to for the package-level check."""
    parts = mod.split(".")
    if mod in APP:
        return "<app>"
    if mod in BASE:
        return "<base>"
    if len(parts) >= 2 and parts[1] in LAYER_OF_PACKAGE:
        return parts[1]
    return mod


def _layer(mod: str) -> int:
    if mod in APP:
        return 5
    if mod in BASE:
        return 1
    if mod in LIBRARY:
        return LIBRARY[mod]
    return LAYER_OF_PACKAGE[mod.split(".")[1]]


def _module_level_imports(mod: str):
    """The runtime modules ``mod`` imports when it is imported (its top-level statements,
    including those inside a top-level ``if``/``try``; not those inside functions)."""
    path = MODULES[mod]
    tree = ast.parse(path.read_text())
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", [])
                         + [s for h in getattr(node, "handlers", []) for s in h.body])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("runtime") and a.name in MODULES:
                    yield a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("runtime"):
                continue
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            if len(subs) == len(node.names):     # "from pkg import module, ...": the modules
                yield from subs
            elif target in MODULES:
                yield target


GRAPH = {m: set(_module_level_imports(m)) for m in MODULES}


def _cycles(graph: dict) -> list:
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer():
    for m in MODULES:
        _layer(m)


def test_no_module_level_import_cycle():
    assert _cycles(GRAPH) == []


def test_no_import_cycle_between_packages():
    packages: dict = {}
    for m, targets in GRAPH.items():
        for t in targets:
            a, b = _group(m), _group(t)
            if a != b:
                packages.setdefault(a, set()).add(b)
    assert _cycles(packages) == []


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_module_level_imports_go_downwards(mod):
    up = [t for t in GRAPH[mod] if _layer(t) > _layer(mod)]
    assert up == [], f"{mod} (layer {_layer(mod)}) imports {up} from above"


def test_core_imports_nothing_above_it():
    for m, targets in GRAPH.items():
        if m.startswith("runtime.core"):
            assert all(t.startswith("runtime.core") for t in targets), (m, targets)


def test_the_checks_see_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert "runtime.tensor" in GRAPH["runtime.device"]


def test_no_runtime_module_imports_the_unpackaged_bench():
    for m, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            assert not any(n == "bench" or n.startswith("bench.") for n in names), m
