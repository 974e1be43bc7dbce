"""An op is one record: its ONNX lowering and its fusion class sit on its ``OpSpec``, and the
ONNX exporter and the fusion pass read the record instead of branching on op names."""
from __future__ import annotations

import ast
import pathlib

import pytest

import runtime  # noqa: F401  (registers every op family)
from runtime.ops.catalogue import CATALOGUE

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORD_READERS = ("runtime/capture/onnx.py", "runtime/capture/fuse.py")
# "init" marks a graph's inputs and constants in the IR: both passes step over it by name
STRUCTURAL = {"init"}
FUSION_CLASSES = {None, "unary", "binary", "select", "clamp", "row_reduce", "row_softmax", "matmul"}


def _builtin():
    return {n: s for n, s in CATALOGUE.items() if s.family != "custom"}


@pytest.mark.parametrize("name", sorted(_builtin()))
def test_every_record_exports_decomposes_or_says_why_not(name):
    s = CATALOGUE[name]
    lowering = s.onnx_lowering
    named = isinstance(s.onnx, str) and bool(s.onnx)
    assert (callable(s.onnx) or (named and s.onnx_lower is not None)
            or s.decompose is not None or s.onnx_skip), \
        f"{name}: no ONNX lowering (OpSpec.onnx_lower with the operator in OpSpec.onnx, or a " \
        f"callable OpSpec.onnx), no decomposition and no onnx_skip reason"
    if lowering is not None:
        # beside the record, in an op family module (below runtime.capture)
        assert lowering.__module__.startswith("runtime.ops."), (name, lowering.__module__)


@pytest.mark.parametrize("name", sorted(_builtin()))
def test_every_record_has_a_known_fusion_class(name):
    assert CATALOGUE[name].fusion in FUSION_CLASSES, (name, CATALOGUE[name].fusion)


def test_row_classes_are_the_kernel_tables_row_ops():
    """Records of class row_reduce/row_softmax are exactly the fused row ops the kernel sets
    generate code for (jit_kernels' op table)."""
    from jit_kernels import optable
    red = {n for n, s in CATALOGUE.items() if s.fusion == "row_reduce"}
    soft = {n for n, s in CATALOGUE.items() if s.fusion == "row_softmax"}
    assert red == set(optable.ROW_REDUCTIONS)
    assert soft == set(optable.ROW_OPS) - set(optable.ROW_REDUCTIONS)


def test_op_families_do_not_import_capture_at_module_level():
    below = ("capture", "autodiff", "nn", "optim")
    bad = []
    for path in sorted((ROOT / "runtime" / "ops").glob("*.py")):
        for node in ast.parse(path.read_text()).body:       # module level only
            if isinstance(node, ast.ImportFrom):      # as absolute module names
                base = ["runtime", "ops"][:max(0, 3 - node.level)] if node.level else []
                mod = base + (node.module.split(".") if node.module else [])
                names = [mod] if node.module else [mod + [a.name] for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name.split(".") for a in node.names]
            else:
                continue
            for parts in names:
                if parts[:1] == ["runtime"] and len(parts) > 1 and parts[1] in below:
                    bad.append(f"{path.name}: {'.'.join(parts)}")
    assert not bad, bad


# --------------------------------------------------------------------------- no name branches
def _strings(node) -> set:
    """The string constants of ``node`` (a constant, or a tuple/list/set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_strings(e) for e in node.elts)) if node.elts else set()
    return set()


def _reads_op_name(node) -> bool:
    """Whether ``node`` reads an op's name: ``<x>.op`` (an IR op), ``<x>.name``, ``name``."""
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr in ("op", "name"):
            return True
        if isinstance(n, ast.Name) and n.id == "name":
            return True
    return False


def name_branches(source: str, op_names) -> list:
    """Comparisons of an op's name with op names or name tables, and lookups of methods by a
    name built from an op's name (``getattr(self, f"op_{...}")``), in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left] + list(node.comparators)
            if not any(_reads_op_name(s) for s in sides):
                continue
            literal = set().union(*(_strings(s) for s in sides)) & set(op_names)
            if literal - STRUCTURAL or any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.JoinedStr):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_detector_finds_name_branches():
    names = {"matmul", "where", "sum", "init"}
    src = '''
def f(self, op, s, name):
    if op.op == "matmul":
        pass
    if name in ("where", "x"):
        pass
    if op.op in ROW_REDUCTIONS:
        pass
    fn = getattr(self, f"op_{s.name}", None)
    if op.op == "init" or s.fusion == "row_reduce" or g.kind == "matmul":
        pass
'''
    got = [line for line, _ in name_branches(src, names)]
    assert got == [3, 5, 7, 9], got


@pytest.mark.parametrize("path", RECORD_READERS)
def test_no_op_name_branches(path):
    found = name_branches((ROOT / path).read_text(), CATALOGUE)
    assert not found, f"{path} branches on op names: {found}"
