"""The device-neutral part of the fused-kernel generators (plain Python: nothing compiles).

Both kernel sets turn a fused program (``runtime.capture.fuse.FusedProgram``, read as plain
data) into source the same way: each elementwise op is lowered exactly as the eager
``unary/binary/where/cast`` entry points lower it (``lower_op``), gets one scalar function whose
body is the op table's (``jit_kernels.optable``, rendered by the set: ``FusedGen.body``), and its
value is that function called on converted operands (``FusedGen.expr``).  A matmul program's
elementwise part is rewritten as an elementwise program reading the matmul result
(``Epilogue``).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

import numpy as np

from jit_kernels.optable import ROW_OPS, compute_dtype, result_dtype
from jit_kernels._source import NP_NAME, conv_expr

BOOL = np.dtype(np.bool_)
#: ops computed by their own kernels or passes (their values are precomputed operands of the
#: elementwise ops around them)
NOT_ELEMENTWISE = ROW_OPS + ("matmul",)


def lower_op(fop):
    """(eager op name, conversion dtypes, out dtype, arg refs) of a fused elementwise op,
    chosen exactly as the eager ``unary/binary/where/cast`` choose them."""
    od = np.dtype(fop.dtype)
    cd = np.dtype(fop.compute)
    op = fop.op
    if op == "cast":
        return "ident", (od,), od, fop.args[:1]
    if op == "where":
        return "where", (BOOL, od, od), od, fop.args
    if op == "logical_not":
        return "logical_not", (BOOL,), BOOL, fop.args
    if op == "clamp":
        x, lo, hi = fop.args
        if lo is None and hi is None:
            return "ident", (od,), od, (x,)
        if hi is None:
            return "clamp_lo", (od, od), od, (x, lo)
        if lo is None:
            return "clamp_hi", (od, od), od, (x, hi)
        return "clamp", (od, od, od), od, (x, lo, hi)
    if len(fop.args) == 2:
        return op, (cd, cd), od, fop.args
    return op, (od,), od, fop.args


def closure(prog, targets, level="elem", through_softmax=False):
    """Op indices (sorted) of ``level`` needed to compute ``targets``; stops at other levels,
    at matmul and at row ops (at softmax/log_softmax too unless ``through_softmax``), whose
    values are precomputed."""
    need = set()
    stack = list(targets)
    while stack:
        j = stack.pop()
        if j in need:
            continue
        need.add(j)
        fop = prog.ops[j]
        if fop.op == "matmul" or (fop.op in ROW_OPS and not (
                through_softmax and fop.op in ("softmax", "log_softmax"))):
            continue
        for r in fop.args:
            if r is not None and r[0] == "op" and prog.ops[r[1]].level == level:
                stack.append(r[1])
    return sorted(need)


class FusedGen:
    """Source builder of a program's elementwise ops: one scalar function per op and the
    expression of each op's value.  A kernel set subclasses it with its decorator, imports and
    rendering of the table's bodies (``body``); everything else is shared."""

    #: decorator of the per-op scalar functions
    DECORATOR = ""
    #: import lines of the generated module
    IMPORTS = ""
    SKIP = NOT_ELEMENTWISE

    def body(self, name: str, cdt: np.dtype) -> str:
        """Source of op ``name``'s scalar function body computing in ``cdt``."""
        raise NotImplementedError

    def __init__(self, prog):
        self.prog = prog
        self.funcs: list = []
        self.lowered = {}
        for j, fop in enumerate(prog.ops):
            if fop.op in self.SKIP:
                continue
            name, cv, od, args = lower_op(fop)
            cdt = compute_dtype(name, cv)
            body = self.body(name, cdt).replace("C(", f"C{j}(")
            xs = ", ".join(f"x{i}" for i in range(len(cv)))
            self.funcs.append(f"C{j} = {NP_NAME[cdt.name]}\n\n\n"
                              f"{self.DECORATOR}\n"
                              f"def f{j}({xs}):\n    {body}\n")
            self.lowered[j] = (name, cv, od, args)

    def dtype_of(self, r) -> np.dtype:
        kind, k = r
        if kind == "in":
            return np.dtype(self.prog.inputs[k].dtype)
        if kind == "sc":
            return np.dtype(self.prog.scalars[k][1])
        return np.dtype(self.prog.ops[k].dtype)

    def expr(self, j, read) -> str:
        """Source of op j's value; ``read(ref)`` gives the source of an operand."""
        name, cv, od, args = self.lowered[j]
        res = result_dtype(name, cv)
        xs = ", ".join(conv_expr(read(r), self.dtype_of(r), cv[i]) for i, r in enumerate(args))
        call = f"f{j}({xs})"
        return conv_expr(call, res, od) if (res != od or od.kind != "f") else call

    def header(self) -> str:
        return self.IMPORTS + "\n\n" + "\n\n".join(self.funcs)


class Epilogue:
    """The elementwise part of a matmul program: op 0 (the matmul) becomes input 0."""

    def __init__(self, prog):
        ops = prog.ops
        used = []
        for o in ops[1:]:
            for r in o.args:
                if r is not None and r[0] == "in" and r[1] not in used:
                    used.append(r[1])
        in_map = {k: q + 1 for q, k in enumerate(used)}

        def remap(r):
            if r is None or r[0] == "sc":
                return r
            if r[0] == "in":
                return ("in", in_map[r[1]])
            return ("in", 0) if r[1] == 0 else ("op", r[1] - 1)

        new_ops = tuple(replace(o, args=tuple(remap(r) for r in o.args)) for o in ops[1:])
        # the product's operands (one input twice for ``x @ x``)
        self.operands = tuple(r[1] for r in ops[0].args)
        self.used = used
        self.mm_is_output = 0 in prog.outputs
        outs = [j - 1 for j in prog.outputs if j != 0]
        shapes = [s for j, s in zip(prog.outputs, prog.output_shapes) if j != 0]
        mm = ops[0]
        mm_in = type(prog.inputs[0])(tuple(prog.shape), mm.dtype)
        self.prog = replace(prog, kind="elementwise",
                            inputs=(mm_in,) + tuple(prog.inputs[k] for k in used),
                            ops=new_ops, outputs=tuple(outs), output_shapes=tuple(shapes))

    #: program -> its epilogue, least recently used first; at most ``CACHE_MAX`` entries
    _CACHE: OrderedDict = OrderedDict()
    CACHE_MAX = 256

    @classmethod
    def of(cls, prog) -> "Epilogue":
        """The (cached, LRU-bounded) epilogue of matmul program ``prog``."""
        cache = cls._CACHE
        epi = cache.get(prog)
        if epi is None:
            epi = cache[prog] = cls(prog)
            while len(cache) > cls.CACHE_MAX:
                try:
                    cache.popitem(last=False)
                except KeyError:      # emptied by another thread meanwhile
                    break
        else:
            try:
                cache.move_to_end(prog)
            except KeyError:          # evicted by another thread meanwhile
                pass
        return epi

    @classmethod
    def clear_cache(cls) -> None:
        """Forget every cached epilogue."""
        cls._CACHE.clear()

    def outputs(self, prog, c, arrays, run_elementwise) -> list:
        """``prog``'s outputs from its matmul result ``c``: the epilogue run by the kernel
        set's ``run_elementwise`` into fresh (pooled) arrays, and ``c`` where it is an output,
        in the program's order.  Not into ``c`` itself: an output aliasing an input keeps
        LLVM from vectorising the epilogue loop."""
        ins = [c] + [arrays[k] for k in self.used]
        res = run_elementwise(self.prog, ins) if self.prog.outputs else []
        if self.mm_is_output:
            k0 = list(prog.outputs).index(0)
            res = list(res[:k0]) + [c] + list(res[k0:])
        return res
