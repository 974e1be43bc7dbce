"""Register-tile micro-kernels written as explicit vector IR (Numba intrinsics through llvmlite).

``tile_kernel(MR, NV, LANES, a_mode, b_mode)`` returns an intrinsic that multiplies an
``MR``-row sliver of A by an ``NV * LANES``-wide sliver of B over ``kc`` steps of k and writes
(``first``) or adds the MR x NR tile into C.  Its body is one LLVM function per module:
``MR * NV`` ``<LANES x T>`` accumulators, each step ``MR`` scalar A loads broadcast to a vector,
``NV`` unaligned vector loads of B and ``MR * NV`` multiply-adds.  Written by hand, the loop
needs none of LLVM's SLP vectoriser (which took seconds per micro-kernel over the scalar
accumulator form, and more again in every caller that inlined its output), and it comes out the
same on every CPU whose vector unit holds ``LANES`` elements.

``tile_kernel(..., chained=True)`` runs a k loop in parts: each call starts from the
accumulators the call before parked in a scratch tile, and only the last writes C (the gemm's
``macro`` keeps each part of a B sliver in L1).  ``pack_kernel`` packs whole slivers of an
operand, transposing MR x MR blocks in registers.

The multiply and the add carry only the ``contract`` flag, as Numba's code for
``c += a * b`` under ``fastmath={'contract'}`` does: the backend fuses them into one FMA
exactly where it fuses the scalar form, so every C element is the same in-order FMA chain over
k as ``matmul._mm_task`` (which the tests compare bit for bit).  The function is ``noinline``:
a caller links a call to it, not another copy of the loop to optimise.

A modes: ``"packed"`` (A sliver k-major, MR wide: element i of step k at ``A[k * MR + i]``) or
``"strided"`` (A read in place: ``A[k * sak + i * sam]``).  B modes: ``"packed"`` (k-major,
NR wide) or ``"shifted"`` (two vectors per step from the row-shifted planes of a stride-1
conv: ``x[offs[k] + xb0 + j]`` and ``x[offs[k] + xb1 + j]``, NV == 2).  Every offset is
unsigned and unchecked; the callers keep them inside their arrays.
"""
from __future__ import annotations

import functools

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_I64 = ir.IntType(64)
_CONTRACT = ("contract",)


def _elem_ptr(context, builder, aty, arr, off):
    """Pointer to element ``off`` (an int value of any width) of the 1-d array ``arr``."""
    data = context.make_array(aty)(context, builder, arr).data
    return builder.gep(data, [builder.zext(off, _I64) if off.type.width < 64 else off])


def _new_fn(module, name, params):
    """(function, builder at its entry) of a new internal ``noinline`` void function ``name``
    in ``module``; (the existing function, None) when the module already defines it."""
    fn = module.globals.get(name)
    if fn is not None:
        return fn, None
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), params), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("nounwind")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _align(T):
    """The element alignment the vector loads and stores assume (they are unaligned)."""
    return 8 if isinstance(T, ir.DoubleType) else 4


def _vload(b, P, off, VP, align):
    return b.load(b.bitcast(b.gep(P, [off]), VP), align=align)


def _vstore(b, v, P, off, VP, align):
    b.store(v, b.bitcast(b.gep(P, [off]), VP), align=align)


def _prefetch_tile(b, C, ldc, MR, width, T):
    """Hint the MR rows of ``width`` elements at C (rows ``ldc`` apart) into L1 for writing:
    the tile's lines are cold after its k loop, and loading them then stalled the store."""
    module = b.module
    fn = module.globals.get("llvm.prefetch.p0")
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()]
                                                 + [ir.IntType(32)] * 3), "llvm.prefetch.p0")
    step = 64 // (8 if isinstance(T, ir.DoubleType) else 4)     # elements per cache line
    i32 = ir.IntType(32)
    for i in range(MR):
        row = b.gep(C, [b.mul(ir.Constant(_I64, i), ldc)])
        for e in range(0, width, step):
            p = b.bitcast(b.gep(row, [ir.Constant(_I64, e)]), ir.IntType(8).as_pointer())
            b.call(fn, [p, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])


def _splat(b, x, V, LANES):
    undef = ir.Constant(V, ir.Undefined)
    mask = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
    return b.shuffle_vector(b.insert_element(undef, x, ir.Constant(ir.IntType(32), 0)),
                            undef, mask)


def _arg_i64(context, builder, sig, args, k):
    """Intrinsic argument ``k`` (an int of any width) as an int64 value."""
    return context.cast(builder, args[k], sig.args[k], types.int64)


def _arg_ptr(context, builder, sig, args, k, off=None):
    """Pointer to element ``off`` (default 0) of the 1-d array that is intrinsic argument k."""
    return _elem_ptr(context, builder, sig.args[k], args[k],
                     ir.Constant(_I64, 0) if off is None else off)


def _define(module, name, T, MR, NV, LANES, a_mode, b_mode, chained=False):
    """The tile function ``name`` in ``module`` (defined once per module)."""
    P = T.as_pointer()
    params = [_I64, P]                       # kc, A
    if a_mode == "strided":
        params += [_I64, _I64]               # sam, sak
    params.append(P)                         # B (or the conv planes x)
    if b_mode == "shifted":
        params += [_I64.as_pointer(), _I64, _I64]   # offs, xb0, xb1
    params += [P, _I64, ir.IntType(1)]      # C, ldc, first
    if chained:
        params += [P, ir.IntType(1), ir.IntType(1)]   # S, cont, park
    fn, b = _new_fn(module, name, params)
    if b is None:
        return fn
    args = list(fn.args)
    kc, A = args[0], args[1]
    rest = args[2:]
    if a_mode == "strided":
        sam, sak = rest[0], rest[1]
        rest = rest[2:]
    B = rest[0]
    rest = rest[1:]
    if b_mode == "shifted":
        offs, xb0, xb1 = rest[0], rest[1], rest[2]
        rest = rest[3:]
    C, ldc, first = rest[:3]
    if chained:
        S, cont, park = rest[3:]

    V = ir.VectorType(T, LANES)
    VP = V.as_pointer()
    align = _align(T)
    zero = ir.Constant(V, [ir.Constant(T, 0.0)] * LANES)

    init = [[zero] * NV for _ in range(MR)]
    if chained:
        # only the last part writes C (a short one would wait on the hint); the accumulators
        # start from the tile parked in S by the call before
        with b.if_then(b.and_(b.not_(park), b.icmp_unsigned(">=", kc, ir.Constant(_I64, 64)))):
            _prefetch_tile(b, C, ldc, MR, NV * LANES, T)
        start = b.block
        resume = fn.append_basic_block("resume")
        begin = fn.append_basic_block("begin")
        b.cbranch(cont, resume, begin)
        b.position_at_end(resume)
        parked = [[_vload(b, S, ir.Constant(_I64, (i * NV + v) * LANES), VP, align)
                   for v in range(NV)] for i in range(MR)]
        b.branch(begin)
        b.position_at_end(begin)
        phis = [[b.phi(V) for _ in range(NV)] for _ in range(MR)]
        for i in range(MR):
            for v in range(NV):
                phis[i][v].add_incoming(parked[i][v], resume)
                phis[i][v].add_incoming(zero, start)
        init = phis
    entry = b.block
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    zero64 = ir.Constant(_I64, 0)
    b.cbranch(b.icmp_unsigned("!=", kc, zero64), loop, done)

    b.position_at_end(loop)
    k = b.phi(_I64, "k")
    accs = [[b.phi(V) for _ in range(NV)] for _ in range(MR)]
    # A elements, broadcast
    avs = []
    for i in range(MR):
        if a_mode == "packed":
            off = b.add(b.mul(k, ir.Constant(_I64, MR)), ir.Constant(_I64, i))
        else:
            off = b.add(b.mul(k, sak), b.mul(ir.Constant(_I64, i), sam))
        avs.append(_splat(b, b.load(b.gep(A, [off]), align=align), V, LANES))
    # B vectors
    bvs = []
    if b_mode == "packed":
        base = b.mul(k, ir.Constant(_I64, NV * LANES))
        bvs = [_vload(b, B, b.add(base, ir.Constant(_I64, v * LANES)), VP, align)
               for v in range(NV)]
    else:
        q = b.load(b.gep(offs, [k]), align=8)
        bvs = [_vload(b, B, b.add(q, xb), VP, align) for xb in (xb0, xb1)]
    new = [[b.fadd(b.fmul(avs[i], bvs[v], flags=_CONTRACT), accs[i][v], flags=_CONTRACT)
            for v in range(NV)] for i in range(MR)]
    k1 = b.add(k, ir.Constant(_I64, 1))
    k.add_incoming(zero64, entry)
    k.add_incoming(k1, loop)
    for i in range(MR):
        for v in range(NV):
            accs[i][v].add_incoming(init[i][v], entry)
            accs[i][v].add_incoming(new[i][v], loop)
    b.cbranch(b.icmp_unsigned("<", k1, kc), loop, done)

    b.position_at_end(done)
    fin = [[b.phi(V) for _ in range(NV)] for _ in range(MR)]
    for i in range(MR):
        for v in range(NV):
            fin[i][v].add_incoming(init[i][v], entry)
            fin[i][v].add_incoming(new[i][v], loop)
    if chained:   # park the accumulators in S for the next call to go on from
        parking = fn.append_basic_block("parking")
        out = fn.append_basic_block("out")
        b.cbranch(park, parking, out)
        b.position_at_end(parking)
        for i in range(MR):
            for v in range(NV):
                _vstore(b, fin[i][v], S, ir.Constant(_I64, (i * NV + v) * LANES), VP, align)
        b.ret_void()
        b.position_at_end(out)
    ptrs = []
    for i in range(MR):
        row = b.gep(C, [b.mul(ir.Constant(_I64, i), ldc)])
        ptrs.append([b.bitcast(b.gep(row, [ir.Constant(_I64, v * LANES)]), VP)
                     for v in range(NV)])
    with b.if_else(first) as (then, otherwise):
        with then:
            for i in range(MR):
                for v in range(NV):
                    b.store(fin[i][v], ptrs[i][v], align=align)
        with otherwise:
            for i in range(MR):
                for v in range(NV):
                    old = b.load(ptrs[i][v], align=align)
                    b.store(b.fadd(old, fin[i][v], flags=_CONTRACT), ptrs[i][v], align=align)
    b.ret_void()
    return fn


@functools.lru_cache(maxsize=None)
def tile_kernel(MR: int, NV: int, LANES: int, a_mode: str = "packed", b_mode: str = "packed",
                chained: bool = False):
    """The micro-kernel intrinsic for one tile shape and operand layout (see the module doc).

    Call forms (ints of any width, arrays 1-d of one float dtype, offsets in elements):

    - packed A: ``t(kc, A, ao, B, bo, C, co, ldc, first)``
    - strided A: ``t(kc, A, ao, sam, sak, B, bo, C, co, ldc, first)``
    - shifted B: ``..., x, offs, oo, xb0, xb1, C, co, ldc, first`` in place of ``B, bo``.
    - ``chained`` (packed A and B): ``t(kc, A, ao, B, bo, C, co, ldc, first, S, so, cont,
      park)``: the accumulators start from the MR x NR tile at ``S[so:]`` when ``cont`` (else
      from zero) and are parked there instead of written to C when ``park``: a k loop run in
      parts is the one FMA chain of a single call.
    """
    assert a_mode in ("packed", "strided") and b_mode in ("packed", "shifted")
    assert not chained or (a_mode, b_mode) == ("packed", "packed")
    if b_mode == "shifted":
        assert NV == 2

    def impl(argtys):
        arrs = [t for t in argtys if isinstance(t, types.Array)]
        if not arrs or any(t.ndim != 1 for t in arrs):
            return None
        fl = [t for t in arrs if isinstance(t.dtype, types.Float)]
        dt = fl[0].dtype
        sig = types.none(*argtys)

        def codegen(context, builder, signature, args):
            T = context.get_value_type(dt)
            name = (f"jk_tile_{dt}_{MR}x{NV}x{LANES}_{a_mode}_{b_mode}"
                    + ("_chained" if chained else ""))
            c = (context, builder, signature, args)
            call = [_arg_i64(*c, 0), _arg_ptr(*c, 1, _arg_i64(*c, 2))]     # kc, A at ao
            k = 3
            if a_mode == "strided":                                       # sam, sak
                call += [_arg_i64(*c, 3), _arg_i64(*c, 4)]
                k = 5
            if b_mode == "shifted":                        # x, offs at oo, xb0, xb1
                call += [_arg_ptr(*c, k), _arg_ptr(*c, k + 1, _arg_i64(*c, k + 2)),
                         _arg_i64(*c, k + 3), _arg_i64(*c, k + 4)]
                k += 5
            else:                                          # B at bo
                call.append(_arg_ptr(*c, k, _arg_i64(*c, k + 1)))
                k += 2
            call += [_arg_ptr(*c, k, _arg_i64(*c, k + 1)), _arg_i64(*c, k + 2),   # C at co, ldc
                     context.cast(builder, args[k + 3], signature.args[k + 3], types.boolean)]
            if chained:                                    # S at so, cont, park
                call += [_arg_ptr(*c, k + 4, _arg_i64(*c, k + 5))] + [
                    context.cast(builder, args[q], signature.args[q], types.boolean)
                    for q in (k + 6, k + 7)]
            fn = _define(builder.module, name, T, MR, NV, LANES, a_mode, b_mode, chained)
            builder.call(fn, call)
            return context.get_dummy_value()

        return sig, codegen

    # (Numba's intrinsics take a fixed parameter list: one typer per call form)
    if b_mode == "shifted":
        def tile(typingctx, kc, A, ao, x, offs, oo, xb0, xb1, C, co, ldc, first):
            return impl((kc, A, ao, x, offs, oo, xb0, xb1, C, co, ldc, first))
    elif chained:
        def tile(typingctx, kc, A, ao, B, bo, C, co, ldc, first, S, so, cont, park):
            return impl((kc, A, ao, B, bo, C, co, ldc, first, S, so, cont, park))
    elif a_mode == "strided":
        def tile(typingctx, kc, A, ao, sam, sak, B, bo, C, co, ldc, first):
            return impl((kc, A, ao, sam, sak, B, bo, C, co, ldc, first))
    else:
        def tile(typingctx, kc, A, ao, B, bo, C, co, ldc, first):
            return impl((kc, A, ao, B, bo, C, co, ldc, first))
    return intrinsic(tile)



def _define_dot(module, name, T, MO, MK, LANES):
    """The dot-block function ``name``: ``acc[(a*MK + b)*LANES + e] += sum over n < nb and
    q < nch of g[ga + n*sg + q*LANES + e] * x[xb + n*sx + q*LANES + e]`` for the MO g rows and
    MK x rows, each lane summed in (n, q) order with one FMA per step."""
    P = T.as_pointer()
    fn, b = _new_fn(module, name, [P] + [_I64] * MO + [_I64, P] + [_I64] * MK
                    + [_I64, _I64, _I64, P])
    if b is None:
        return fn
    args = list(fn.args)
    g, goffs, sg = args[0], args[1:1 + MO], args[1 + MO]
    x, xoffs, sx = args[2 + MO], args[3 + MO:3 + MO + MK], args[3 + MO + MK]
    nb, nch, acc = args[4 + MO + MK], args[5 + MO + MK], args[6 + MO + MK]
    V = ir.VectorType(T, LANES)
    VP = V.as_pointer()
    align = _align(T)
    cells = []   # the accumulators in stack slots (promoted to registers by LLVM's mem2reg)
    for a in range(MO):
        for c in range(MK):
            p = b.bitcast(b.gep(acc, [ir.Constant(_I64, (a * MK + c) * LANES)]), VP)
            slot = b.alloca(V)
            b.store(b.load(p, align=align), slot)
            cells.append((slot, p))
    with cgutils.for_range(b, nb) as outer:
        n = outer.index
        gr = [b.add(o, b.mul(n, sg)) for o in goffs]
        xr = [b.add(o, b.mul(n, sx)) for o in xoffs]
        with cgutils.for_range(b, nch) as inner:
            p = b.mul(inner.index, ir.Constant(_I64, LANES))
            us = [_vload(b, g, b.add(r, p), VP, align) for r in gr]
            vs = [_vload(b, x, b.add(r, p), VP, align) for r in xr]
            for a in range(MO):
                for c in range(MK):
                    slot = cells[a * MK + c][0]
                    prod = b.fmul(us[a], vs[c], flags=_CONTRACT)
                    b.store(b.fadd(prod, b.load(slot), flags=_CONTRACT), slot)
    for slot, p in cells:
        b.store(b.load(slot), p, align=align)
    b.ret_void()
    return fn


@functools.lru_cache(maxsize=None)
def dot_kernel(MO: int, MK: int, LANES: int):
    """The conv weight gradient's dot-block micro-kernel (``_matmul_gen``'s ``udot``) as an
    intrinsic: ``d(g, g0, .., g{MO-1}, sg, x, x0, .., x{MK-1}, sx, nb, nch, acc, ao)`` adds to
    each of the MO x MK LANES-wide accumulators at ``acc[ao:]`` the lane-wise products of g
    row a and x row b (rows at ``g{a} + n*sg`` and ``x{b} + n*sx`` for sample n < nb, nch
    vectors each), one FMA per vector, in (sample, vector) order."""
    assert MO == 4 and MK == 4, "the call form below names four g rows and four x rows"

    @intrinsic
    def dot(typingctx, g, g0, g1, g2, g3, sg, x, x0, x1, x2, x3, sx, nb, nch, acc, ao):
        if not (isinstance(g, types.Array) and isinstance(g.dtype, types.Float)):
            return None
        dt = g.dtype
        sig = types.none(g, g0, g1, g2, g3, sg, x, x0, x1, x2, x3, sx, nb, nch, acc, ao)

        def codegen(context, builder, signature, args):
            c = (context, builder, signature, args)
            call = ([_arg_ptr(*c, 0)] + [_arg_i64(*c, k) for k in range(1, 6)]
                    + [_arg_ptr(*c, 6)] + [_arg_i64(*c, k) for k in range(7, 14)]
                    + [_arg_ptr(*c, 14, _arg_i64(*c, 15))])
            fn = _define_dot(builder.module, f"jk_dot_{dt}_{MO}x{MK}x{LANES}",
                             context.get_value_type(dt), MO, MK, LANES)
            builder.call(fn, call)
            return context.get_dummy_value()

        return sig, codegen

    return dot


def _define_copy(module, name, T, LANES):
    """``dst[0:n] = src[0:n]``: LANES-wide vector blocks (the last overlapping the one before,
    so a run of at least LANES has no scalar tail), element by element below LANES."""
    P = T.as_pointer()
    fn, b = _new_fn(module, name, [P, P, _I64])
    if b is None:
        return fn
    dst, src, n = fn.args
    V = ir.VectorType(T, LANES)
    VP = V.as_pointer()
    align = _align(T)
    uv = ir.Constant(_I64, LANES)
    with b.if_else(b.icmp_unsigned("<", n, uv)) as (short, long):
        with short:
            with cgutils.for_range(b, n) as loop:
                b.store(b.load(b.gep(src, [loop.index]), align=align),
                        b.gep(dst, [loop.index]), align=align)
        with long:
            nblk = b.udiv(b.add(n, ir.Constant(_I64, LANES - 1)), uv)
            last = b.sub(n, uv)
            with cgutils.for_range(b, nblk) as loop:
                e = b.mul(loop.index, uv)
                e = b.select(b.icmp_unsigned(">", e, last), last, e)
                _vstore(b, _vload(b, src, e, VP, align), dst, e, VP, align)
    b.ret_void()
    return fn


@functools.lru_cache(maxsize=None)
def copy_kernel(LANES: int):
    """``c(dst, d, src, s, n)``: ``dst[d:d+n] = src[s:s+n]`` (unchecked offsets) in LANES-wide
    vector blocks, the last one overlapping the block before (the implicit-gemm packers' copy:
    their runs are mostly a few vectors long).  The arrays must not overlap."""

    @intrinsic
    def copy(typingctx, dst, d, src, s, n):
        if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
                and dst.dtype == src.dtype):
            return None
        dt = dst.dtype
        sig = types.none(dst, d, src, s, n)

        def codegen(context, builder, signature, args):
            c = (context, builder, signature, args)
            fn = _define_copy(builder.module, f"jk_copy_{dt}_{LANES}",
                              context.get_value_type(dt), LANES)
            builder.call(fn, [_arg_ptr(*c, 0, _arg_i64(*c, 1)), _arg_ptr(*c, 2, _arg_i64(*c, 3)),
                              _arg_i64(*c, 4)])
            return context.get_dummy_value()

        return sig, codegen

    return copy


def _transpose(b, rows):
    """The columns of the square matrix whose rows are the ``n`` vectors ``rows`` (n a power
    of two): log2(n) rounds of interleaving row i with row i + n/2 (the perfect shuffle)."""
    n = len(rows)
    half = n // 2
    lo = ir.Constant(ir.VectorType(ir.IntType(32), n), [e for j in range(half) for e in (j, n + j)])
    hi = ir.Constant(ir.VectorType(ir.IntType(32), n),
                     [e for j in range(half, n) for e in (j, n + j)])
    for _ in range(n.bit_length() - 1):
        nxt = []
        for i in range(half):
            nxt += [b.shuffle_vector(rows[i], rows[i + half], lo),
                    b.shuffle_vector(rows[i], rows[i + half], hi)]
        rows = nxt
    return rows


def _define_pack(module, name, T, MR, mode):
    """``dst[k * sd + i] = src[i * st + k]`` (``"rows"``: each row contiguous along k) or
    ``dst[k * sd + i] = src[k * st + i]`` (``"cols"``: each k step's MR elements contiguous)
    for k < n and i < MR: MR rows of an operand into the gemm's k-major packed form."""
    P = T.as_pointer()
    fn, b = _new_fn(module, name, [_I64, P, _I64, P, _I64])
    if b is None:
        return fn
    n, src, st, dst, sd = fn.args
    V = ir.VectorType(T, MR)
    VP = V.as_pointer()
    align = _align(T)
    umr = ir.Constant(_I64, MR)
    if mode == "cols":
        with cgutils.for_range(b, n) as loop:
            k = loop.index
            _vstore(b, _vload(b, src, b.mul(k, st), VP, align), dst, b.mul(k, sd), VP, align)
        b.ret_void()
        return fn
    # MR x MR blocks: MR row vectors in, transposed, MR k-step vectors out
    nblk = b.udiv(n, umr)
    with cgutils.for_range(b, nblk) as loop:
        k0 = b.mul(loop.index, umr)
        rows = [_vload(b, src, b.add(b.mul(ir.Constant(_I64, i), st), k0), VP, align)
                for i in range(MR)]
        for j, col in enumerate(_transpose(b, rows)):
            _vstore(b, col, dst, b.mul(b.add(k0, ir.Constant(_I64, j)), sd), VP, align)
    with cgutils.for_range(b, b.sub(n, b.mul(nblk, umr))) as loop:   # the last k < MR steps
        k = b.add(b.mul(nblk, umr), loop.index)
        for i in range(MR):
            x = b.load(b.gep(src, [b.add(b.mul(ir.Constant(_I64, i), st), k)]), align=align)
            b.store(x, b.gep(dst, [b.add(b.mul(k, sd), ir.Constant(_I64, i))]), align=align)
    b.ret_void()
    return fn


@functools.lru_cache(maxsize=None)
def pack_kernel(MR: int, mode: str):
    """``p(n, src, s, st, dst, d, sd)``: MR rows of an operand from ``src[s:]`` into the
    packed form at ``dst[d:]``, k steps ``sd`` apart (``_define_pack``; MR a power of two;
    unchecked offsets).  ``"rows"`` (rows contiguous along k, ``st`` their stride) transposes
    MR x MR blocks in registers; ``"cols"`` (``st`` the k stride) copies one MR-element vector
    per k step.  Element by element, the gemm's packers stored every element alone."""
    assert mode in ("rows", "cols") and MR & (MR - 1) == 0

    @intrinsic
    def pack(typingctx, n, src, s, st, dst, d, sd):
        if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
                and dst.dtype == src.dtype):
            return None
        dt = dst.dtype
        sig = types.none(n, src, s, st, dst, d, sd)

        def codegen(context, builder, signature, args):
            c = (context, builder, signature, args)
            fn = _define_pack(builder.module, f"jk_pack_{mode}_{dt}_{MR}",
                              context.get_value_type(dt), MR, mode)
            builder.call(fn, [_arg_i64(*c, 0), _arg_ptr(*c, 1, _arg_i64(*c, 2)),
                              _arg_i64(*c, 3), _arg_ptr(*c, 4, _arg_i64(*c, 5)),
                              _arg_i64(*c, 6)])
            return context.get_dummy_value()

        return sig, codegen

    return pack


# -- the Winograd F(2x2, 3x3) transforms (``_matmul_gen``'s ``wino_fwd``), LANES tiles at once --
# Each scalar operation of the scalar form becomes one vector operation, in the same order and
# without fast-math flags, so each lane has the bits the scalar code gave it.

_WIN_ROWS = ((0, "-", 2), (1, "+", 2), (2, "-", 1), (1, "-", 3))   # B^T's rows


def _op(b, op, x, y):
    return b.fadd(x, y) if op == "+" else b.fsub(x, y)





def _win_tiles(b, m, bv):
    """A^T m A + bv of the 4 x 4 vectors ``m``: the 2 x 2 vectors r[i][j]."""
    s = [[None] * 4 for _ in range(2)]
    for j in range(4):
        s[0][j] = b.fadd(b.fadd(m[0][j], m[1][j]), m[2][j])
        s[1][j] = b.fsub(b.fsub(m[1][j], m[2][j]), m[3][j])
    return [[b.fadd(b.fadd(b.fadd(s[i][0], s[i][1]), s[i][2]), bv),
             b.fadd(b.fsub(b.fsub(s[i][1], s[i][2]), s[i][3]), bv)] for i in range(2)]



def _define_win(module, which, T, LANES, NR):
    name = f"jk_win_{which}_{T}_{LANES}_{NR}".replace(" ", "")
    P = T.as_pointer()
    V = ir.VectorType(T, LANES)
    VP = V.as_pointer()
    align = _align(T)
    if which == "in":      # Xt, qs (16 offsets), Vb, cn
        fn, b = _new_fn(module, name, [P, _I64.as_pointer(), P, _I64])
        if b is None:
            return fn
        Xt, qs, Vb, cn = fn.args
        d = [[_vload(b, Xt, b.load(b.gep(qs, [ir.Constant(_I64, 4 * i + j)]), align=8), VP, align)
              for j in range(4)] for i in range(4)]
        e = [[_op(b, op, d[p][j], d[q][j]) for j in range(4)] for (p, op, q) in _WIN_ROWS]
        for i in range(4):
            for j, (p, op, q) in enumerate(_WIN_ROWS):
                _vstore(b, _op(b, op, e[i][p], e[i][q]), Vb,
                        b.mul(ir.Constant(_I64, 4 * i + j), cn), VP, align)
        b.ret_void()
        return fn
    # out / pool: Mb (at q), mn, Yt, ...
    if which == "out":     # Mb, mn, Yt (at y0), y1 - y0, bv, two_r, two_c
        fn, b = _new_fn(module, name, [P, _I64, P, _I64, T, ir.IntType(1), ir.IntType(1)])
    else:                  # Mb, mn, Yt (at y0), bv, zero
        fn, b = _new_fn(module, name, [P, _I64, P, T, T])
    if b is None:
        return fn
    Mb, mn = fn.args[0], fn.args[1]
    m = [[_vload(b, Mb, b.mul(ir.Constant(_I64, 4 * i + j), mn), VP, align) for j in range(4)]
         for i in range(4)]
    if which == "out":
        Yt, dy, bv, two_r, two_c = fn.args[2:]
        r = _win_tiles(b, m, _splat(b, bv, V, LANES))
        nr = ir.Constant(_I64, NR)
        _vstore(b, r[0][0], Yt, ir.Constant(_I64, 0), VP, align)
        with b.if_then(two_c):
            _vstore(b, r[0][1], Yt, nr, VP, align)
        with b.if_then(two_r):
            _vstore(b, r[1][0], Yt, dy, VP, align)
            with b.if_then(two_c):
                _vstore(b, r[1][1], Yt, b.add(dy, nr), VP, align)
    else:
        Yt, bv, zero = fn.args[2:]
        r = _win_tiles(b, m, _splat(b, bv, V, LANES))
        mx = cgutils.get_or_insert_function(
            module, ir.FunctionType(V, [V, V]), f"llvm.maximum.v{LANES}f{T.intrinsic_name[1:]}")
        h = b.call(mx, [b.call(mx, [r[0][0], r[0][1]]), b.call(mx, [r[1][0], r[1][1]])])
        z = _splat(b, zero, V, LANES)
        _vstore(b, b.select(b.fcmp_ordered("<", h, z), z, h), Yt, ir.Constant(_I64, 0), VP,
                align)
    b.ret_void()
    return fn


@functools.lru_cache(maxsize=None)
def wino_kernels(LANES: int, NR: int):
    """The Winograd transforms of LANES tiles at once, as intrinsics (call forms as the
    scalar ``win_in``/``win_out``/``win_pool`` of ``_matmul_gen``; offsets in elements):

    - ``win_in(Xt, qs, l0, Vb, vo, cn)``: B^T d B, patch element k of lane l at
      ``Xt[qs[k] + l0 + l]``, transformed element xi at ``Vb[vo + xi*cn + l]``;
    - ``win_out(Mb, q, mn, Yt, y0, y1, bv, two_r, two_c)``: A^T m A + bv, element xi at
      ``Mb[q + xi*mn + l]``, the tile's rows at ``Yt[y0 + l]`` / ``Yt[y0 + NR + l]`` and at
      ``y1`` likewise (the second row/column only where ``two_r``/``two_c``);
    - ``win_pool(Mb, q, mn, Yt, y0, bv, zero)``: the 2x2 outputs reduced as ``max_pool2d_relu``
      reduces a window (NaN-propagating maxima of the rows, then of those, then relu).
    """

    def floats(*arrs):
        return all(isinstance(a, types.Array) and isinstance(a.dtype, types.Float) for a in arrs)

    @intrinsic
    def win_in(typingctx, Xt, qs, l0, Vb, vo, cn):
        if not floats(Xt, Vb):
            return None

        def codegen(context, builder, sig, args):
            c = (context, builder, sig, args)
            fn = _define_win(builder.module, "in", context.get_value_type(Xt.dtype), LANES, NR)
            builder.call(fn, [_arg_ptr(*c, 0, _arg_i64(*c, 2)), _arg_ptr(*c, 1),
                              _arg_ptr(*c, 3, _arg_i64(*c, 4)), _arg_i64(*c, 5)])
            return context.get_dummy_value()

        return types.none(Xt, qs, l0, Vb, vo, cn), codegen

    @intrinsic
    def win_out(typingctx, Mb, q, mn, Yt, y0, y1, bv, two_r, two_c):
        if not floats(Mb, Yt):
            return None
        dt = Mb.dtype

        def codegen(context, builder, sig, args):
            c, t = (context, builder, sig, args), sig.args
            fn = _define_win(builder.module, "out", context.get_value_type(dt), LANES, NR)
            y0v = _arg_i64(*c, 4)
            builder.call(fn, [_arg_ptr(*c, 0, _arg_i64(*c, 1)), _arg_i64(*c, 2),
                              _arg_ptr(*c, 3, y0v), builder.sub(_arg_i64(*c, 5), y0v),
                              context.cast(builder, args[6], t[6], dt),
                              context.cast(builder, args[7], t[7], types.boolean),
                              context.cast(builder, args[8], t[8], types.boolean)])
            return context.get_dummy_value()

        return types.none(Mb, q, mn, Yt, y0, y1, bv, two_r, two_c), codegen

    @intrinsic
    def win_pool(typingctx, Mb, q, mn, Yt, y0, bv, zero):
        if not floats(Mb, Yt):
            return None
        dt = Mb.dtype

        def codegen(context, builder, sig, args):
            c, t = (context, builder, sig, args), sig.args
            fn = _define_win(builder.module, "pool", context.get_value_type(dt), LANES, NR)
            builder.call(fn, [_arg_ptr(*c, 0, _arg_i64(*c, 1)), _arg_i64(*c, 2),
                              _arg_ptr(*c, 3, _arg_i64(*c, 4)),
                              context.cast(builder, args[5], t[5], dt),
                              context.cast(builder, args[6], t[6], dt)])
            return context.get_dummy_value()

        return types.none(Mb, q, mn, Yt, y0, bv, zero), codegen

    return win_in, win_out, win_pool
