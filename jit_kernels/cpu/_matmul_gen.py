"""Source generator for the packed float matmul (``gemm``) used by ``jit_kernels.cpu.matmul``.

``source(cfg)`` returns the text of one module holding, for one float dtype:

- ``uk``: the MR x NR register-blocked micro-kernel over a packed A sliver (k-major, MR wide)
  and a packed B sliver (k-major, NR wide): MR x 2 vector accumulators of NR/2 lanes, written
  as explicit vector IR (``jit_kernels.cpu._simd.tile_kernel``).  Its multiply-adds are FMAs
  without reassociation, so every C element is summed in K order within a KC block, then added
  to C.  ``ukn`` and ``ukd`` are the narrow path's one-vector-wide forms.
- ``pack_a`` / ``pack_b`` / ``macro``: BLIS-style packing of strided inputs (any strides,
  including transposed and negative views, read in place) and the loop over micro-tiles of one
  MC x NC block; partial tiles at the M/N edges go through a small MR x NR scratch tile.
  ``macro`` runs each sliver's k loop in L1-sized parts (KI steps) chained through parked
  accumulators (the same FMA chain); a full sliver is packed by the register-transposing
  vector kernels of ``_simd.pack_kernel``.
- ``gemm_rows`` (parallel: every KC block of a column block of B packed by ``prange``, then
  row panels of MC rows by ``prange``, each running its KC blocks in order so that its part
  of C stays in cache), ``gemm_batch`` (parallel over batch elements, each serial) and
  ``gemm_serial``.

- ``ukx`` / ``macrox``: ``uk`` reading B straight from the row-shifted planes of a stride-1
  conv (``conv_fwd``'s row-shifted form) through a per-k offset table: no packed B sliver.
- ``udot`` / ``conv_wdot``: the stride-1 conv weight gradient as dot products of rows that
  are contiguous along the reduction (``jit_kernels.cpu.conv._wdot``).

The explicit micro-kernels compile in milliseconds and are not inlined into their callers
(``_simd``); the SLP-compiled scalar form they replace took seconds to compile, and again in
every driver that inlined it.  So are ``udot`` (the conv weight gradient's dot-product
block), ``copy_run`` (the implicit-gemm packers' vector-block copy) and the Winograd
transforms: nothing here needs LLVM's SLP vectoriser (off in Numba by default: a known
miscompile).  The generated code indexes with unsigned offsets, element by element: a slice
per operand and step (Python's wrap of a negative start and clamping, about eight scalar
instructions each) left the scalar ``udot`` front-end bound at ~70 scalar instructions per 16
FMAs.
"""
from __future__ import annotations

import re


def _uk(name: str, tile: str, chained: bool = False) -> list:
    """``uk`` (``ukn``): the packed A sliver times the packed B sliver, the explicit vector
    micro-kernel ``tile`` (``jit_kernels.cpu._simd``) on the arrays' elements; ``uk`` is the
    chained form (its accumulators start from, or are parked in, the tile at ``Pk[po:]``)."""
    park = ", Pk, po, cont, park" if chained else ""
    return ["@njit(cache=True, error_model='numpy', nogil=True)",
            f"def {name}(kc, Ap, ao, Bp, bo, C, co, ldc, first{park}, zero):",
            f"    {tile}(kc, Ap, ao, Bp, bo, C, co, ldc, first{park})"]


def _ukd() -> list:
    """``ukd``: the narrow path's ``ukn`` reading A in place (rows ``sam`` apart, columns
    ``sak``) instead of a packed sliver: a product at most one vector wide uses each A element
    N times, so packing A cost as much as the multiply-adds.  Whole MR-row panels only."""
    return ["@njit(cache=True, error_model='numpy', nogil=True)",
            "def ukd(kc, A, ao, sam, sak, Bp, bo, C, co, ldc, first, zero):",
            "    tile_ukd(kc, A, ao, sam, sak, Bp, bo, C, co, ldc, first)"]


def _ukx() -> list:
    """``ukx``: ``uk`` with B read straight from the row-shifted planes ``x`` instead of a
    packed sliver: row k of the sliver is ``x[offs[oo + k] + xb0 + j]`` for its first NR/2
    columns and ``x[offs[oo + k] + xb1 + j]`` for the others (each half inside one sample).
    Used by ``conv_fwd`` in the row-shifted form, where packing a 16-row product's slivers cost
    about as much as its multiply-adds."""
    return ["@njit(cache=True, error_model='numpy', nogil=True)",
            "def ukx(kc, Ap, ao, x, offs, oo, xb0, xb1, C, co, ldc, first, zero):",
            "    tile_ukx(kc, Ap, ao, x, offs, oo, xb0, xb1, C, co, ldc, first)"]


def _copy_run() -> list:
    """``copy_run(dst, d, src, s, n)``: dst[d:d+n] = src[s:s+n] (uint64 offsets) in vector
    blocks, the last overlapping the one before (``_simd.copy_kernel``)."""
    return ["@njit(cache=True, error_model='numpy', nogil=True)",
            "def copy_run(dst, d, src, s, n):",
            "    vcopy(dst, d, src, s, n)"]


#: the dot-product micro-kernel's block (``conv_wdot`` passes its 4 + 4 row offsets by name)
DOT_MO = DOT_MK = 4


def _udot(MO: int, MK: int) -> list:
    """``udot``: the dot-product micro-kernel of the conv weight gradient (``conv_wdot``): an
    MO x MK block of one-vector accumulators (loaded from and stored back to ``acc[ao:]``)
    summing ``g`` row a times ``x`` row b lane by lane, over ``nch`` vectors of each of ``nb``
    samples (row offsets ``g{a}``/``x{b}``, sample strides ``sg``/``sx``): the explicit vector
    kernel ``_simd.dot_kernel`` (one FMA per vector, each lane summed in order).  Both
    operands are contiguous along the positions, so nothing is packed."""
    gs = ", ".join(f"g{a}" for a in range(MO))
    xs = ", ".join(f"x{b}" for b in range(MK))
    return ["@njit(cache=True, error_model='numpy', nogil=True)",
            f"def udot(g, {gs}, sg, x, {xs}, sx, nb, nch, acc, ao):",
            f"    vdot(g, {gs}, sg, x, {xs}, sx, nb, nch, acc, ao)"]


_DRIVER = '''
MR = {MR}
NR = {NR}
MC = {MC}
KC = {KC}
NC = {NC}
KI = {KI}
KA = 32         # k steps of a transposed A packed for every sliver before the next ones
BMAX = 1 << 21  # elements of gemm_rows' packed B scratch (a column block's KC blocks)


@njit(cache=True, error_model='numpy', nogil=True)
def pack_b(b, boff, sbk, sbn, kc, nc, Bp, jr):
    """Sliver ``jr`` (NR columns) of the kc x nc block of b at ``boff``, k-major, zero-padded."""
    j0 = jr * NR
    nv = min(NR, nc - j0)
    dst = jr * kc * NR
    base = boff + j0 * sbn
    if nv == NR and sbn == 1:
        for k in range(kc):
            s = b[base + k * sbk:base + k * sbk + NR]
            d = Bp[dst + k * NR:dst + k * NR + NR]
            for j in range(NR):
                d[j] = s[j]
    elif nv == NR and sbk == 1:
        for h in range(0, NR, NR // 2):
            vpack_brows(kc, b, base + h * sbn, sbn, Bp, dst + h, NR)
    elif sbk == 1:
        for j in range(nv):
            s = b[base + j * sbn:base + j * sbn + kc]
            d = Bp[dst + j:dst + kc * NR]
            for k in range(kc):
                d[k * NR] = s[k]
        for k in range(kc):
            d = Bp[dst + k * NR:dst + k * NR + NR]
            for j in range(nv, NR):
                d[j] = 0
    else:
        for k in range(kc):
            d = Bp[dst + k * NR:dst + k * NR + NR]
            p = base + k * sbk
            for j in range(nv):
                d[j] = b[p + j * sbn]
            for j in range(nv, NR):
                d[j] = 0


@njit(cache=True, error_model='numpy', nogil=True)
def pack_b_rows(b, boff, sbk, kc, nc, Bp, k0, k1):
    """Rows k0 <= k < k1 of the kc x nc block of b at ``boff`` (unit column stride) into
    every NR-wide sliver: each row of b read once, in order.  Packing sliver by sliver reads
    kc rows NR elements at a time, a row stride apart (a new page each for wide b): on a
    32-row product that cost as much as the multiply-adds."""
    nfull = nc // NR
    nv = nc - nfull * NR
    unr = uint64(NR)
    for k in range(k0, k1):
        src = boff + k * sbk
        for jr in range(nfull):
            copy_run(Bp, uint64((jr * kc + k) * NR), b, uint64(src + jr * NR), unr)
        if nv:
            d = (nfull * kc + k) * NR
            for j in range(nv):
                Bp[d + j] = b[src + nfull * NR + j]
            for j in range(nv, NR):
                Bp[d + j] = 0


@njit(cache=True, error_model='numpy', nogil=True)
def pack_a(a, aoff, sam, sak, mc, kc, Ap, dst0):
    """The mc x kc block of a at ``aoff`` as MR-row slivers (k-major, zero-padded rows)."""
    nir = (mc + MR - 1) // MR
    first = 0
    if sam == 1 and sak != 1 and mc >= MR:
        # columns contiguous (a transposed view), k steps a row stride apart: the full slivers
        # in runs of KA k steps, each run for every sliver while its rows (one page each for a
        # wide a) are in L1 and the TLB (sliver by sliver, each row came back once per sliver)
        first = mc // MR
        for k0 in range(0, kc, KA):
            kb = min(KA, kc - k0)
            for ir in range(first):
                vpack_cols(kb, a, aoff + ir * MR + k0 * sak, sak, Ap, dst0 + (ir * kc + k0) * MR,
                           MR)
    for ir in range(first, nir):
        r0 = ir * MR
        mv = min(MR, mc - r0)
        dst = dst0 + ir * kc * MR
        if mv == MR and sak == 1:
            vpack_rows(kc, a, aoff + r0 * sam, sam, Ap, dst, MR)
        elif mv == MR and sam == 1:
            vpack_cols(kc, a, aoff + r0, sak, Ap, dst, MR)
        elif sak == 1:
            for i in range(mv):
                p = aoff + (r0 + i) * sam
                s = a[p:p + kc]
                d = Ap[dst + i:dst + kc * MR]
                for k in range(kc):
                    d[k * MR] = s[k]
        else:
            for k in range(kc):
                d = Ap[dst + k * MR:dst + k * MR + MR]
                p = aoff + r0 * sam + k * sak
                for i in range(mv):
                    d[i] = a[p + i * sam]
        if mv < MR:
            for k in range(kc):
                d = Ap[dst + k * MR:dst + k * MR + MR]
                for i in range(mv, MR):
                    d[i] = 0


@njit(cache=True, error_model='numpy', nogil=True)
def tile_dest(c, co, ldc, first, T, full):
    """Where a micro-kernel writes its tile: (C, co, ldc, first) when the tile is full, else
    the scratch tile (T, 0, NR, True); non-literal values either way (see ``macro``)."""
    if full:
        return c, co, ldc, first
    return T, co - co, ldc - ldc + NR, first or True


@njit(cache=True, error_model='numpy', nogil=True)
def tile_out(c, co, ldc, T, mv, nv, first):
    """The mv x nv corner of the scratch tile T (row stride NR) into (``first``) or onto C."""
    for i in range(mv):
        d = c[co + i * ldc:co + i * ldc + nv]
        s = T[i * NR:i * NR + nv]
        if first:
            for j in range(nv):
                d[j] = s[j]
        else:
            for j in range(nv):
                d[j] += s[j]


@njit(cache=True, error_model='numpy', nogil=True)
def macro(Ap, aoff, Bp, mc, nc, kc, c, coff, ldc, first, zero, T, jr0, jr1, Pk):
    """C[coff: mc x nc, row stride ldc] (+)= packed A block @ packed B block, for the NR-wide
    column slivers jr0 <= jr < jr1.  A sliver's k loop runs in parts of KI steps, each part
    of the B sliver used by every row sliver in turn while it is in L1 (a whole KC x NR
    sliver is larger than L1); between parts each tile's accumulators are parked in Pk (MR x
    NR per row sliver: ``mc`` rounded up to MR, times NR), and the next part goes on from
    them: each C element is the same FMA chain over the block as in one call."""
    nir = (mc + MR - 1) // MR
    for jr in range(jr0, jr1):
        nv = min(NR, nc - jr * NR)
        for k0 in range(0, kc, KI):
            ki = min(KI, kc - k0)
            cont = k0 > 0
            park = k0 + ki < kc
            for ir in range(nir):
                mv = min(MR, mc - ir * MR)
                co = coff + ir * MR * ldc + jr * NR
                # One call site with non-literal argument types: one specialisation of ``uk``.
                D, do, dl, f = tile_dest(c, co, ldc, first, T, mv == MR and nv == NR)
                uk(ki, Ap, aoff + ir * kc * MR + k0 * MR, Bp, jr * kc * NR + k0 * NR, D, do, dl,
                   f, Pk, ir * MR * NR, cont, park, zero)
                if not park and (mv < MR or nv < NR):
                    tile_out(c, co, ldc, T, mv, nv, first)


# inlined into conv_fwd's loop: a call increfs and decrefs each of its six arrays (12 atomic
# operations per sliver)
@njit(cache=True, error_model='numpy', nogil=True, inline='always')
def macrox(Ap, aoff, x, offs, oo, xb0, xb1, mc, kc, c, S, direct, coff, ldc, first, zero, T):
    """``macro`` for one full NR-wide sliver read straight from the row-shifted planes
    (``ukx``) instead of a packed B: into C (``direct``) or into the scratch sliver S (rows
    padded to whole tiles)."""
    nir = (mc + MR - 1) // MR
    z = mc - mc   # non-literal values (see ``macro``)
    for ir in range(nir):
        mv = min(MR, mc - ir * MR)
        co = coff + ir * MR * ldc
        a0 = aoff + ir * kc * MR
        # each destination array at its own call (an array-valued choice cost a reference
        # count pair per tile)
        if not direct:
            ukx(kc, Ap, a0, x, offs, oo, xb0, xb1, S, co, ldc, first, zero)
        elif mv == MR:
            ukx(kc, Ap, a0, x, offs, oo, xb0, xb1, c, co, ldc, first, zero)
        else:
            ukx(kc, Ap, a0, x, offs, oo, xb0, xb1, T, z, z + NR, first or True, zero)
            tile_out(c, co, ldc, T, mv, z + NR, first)


@njit(cache=True, error_model='numpy', nogil=True)
def gemm_one(a, ao, sam, sak, b, bo, sbk, sbn, c, co, M, N, K, zero, Ap, Bp, T, Pk):
    """One (M, K) @ (K, N) product into c[co:] (row stride N), serially."""
    z = M - M  # a non-literal 0: literal arguments would compile extra specialisations
    for jc in range(0, N, NC):
        nc = min(NC, N - jc)
        njr = (nc + NR - 1) // NR
        for pc in range(0, K, KC):
            kc = min(KC, K - pc)
            if sbn == 1:
                pack_b_rows(b, bo + pc * sbk + jc, sbk, kc, nc, Bp, z, kc)
            else:
                for jr in range(njr):
                    pack_b(b, bo + pc * sbk + jc * sbn, sbk, sbn, kc, nc, Bp, jr)
            for ic in range(0, M, MC):
                mc = min(MC, M - ic)
                pack_a(a, ao + ic * sam + pc * sak, sam, sak, mc, kc, Ap, z)
                macro(Ap, z, Bp, mc, nc, kc, c, co + ic * N + jc, N, pc == 0, zero, T, z, njr,
                      Pk)


@njit(cache=True, error_model='numpy', nogil=True)
def gemm_serial(a, ao, sab, sam, sak, b, bo, sbb, sbk, sbn, c, B, M, N, K, zero):
    Ap = np.empty(((min(M, MC) + MR - 1) // MR) * MR * min(K, KC), c.dtype)
    Bp = np.empty(((min(N, NC) + NR - 1) // NR) * NR * min(K, KC), c.dtype)
    T = np.empty(MR * NR, c.dtype)
    Pk = np.empty(MC * NR, c.dtype)
    for bi in range(B):
        gemm_one(a, ao + bi * sab, sam, sak, b, bo + bi * sbb, sbk, sbn, c, bi * M * N,
                 M, N, K, zero, Ap, Bp, T, Pk)


@njit(cache=True, error_model='numpy', nogil=True, parallel=True)
def gemm_batch(a, ao, sab, sam, sak, b, bo, sbb, sbk, sbn, c, B, M, N, K, zero):
    na = ((min(M, MC) + MR - 1) // MR) * MR * min(K, KC)
    nb = ((min(N, NC) + NR - 1) // NR) * NR * min(K, KC)
    for bi in prange(B):
        Ap = np.empty(na, c.dtype)
        Bp = np.empty(nb, c.dtype)
        T = np.empty(MR * NR, c.dtype)
        Pk = np.empty(MC * NR, c.dtype)
        gemm_one(a, ao + bi * sab, sam, sak, b, bo + bi * sbb, sbk, sbn, c, bi * M * N,
                 M, N, K, zero, Ap, Bp, T, Pk)


@njit(cache=True, error_model='numpy', nogil=True, parallel=True)
def gemm_rows(a, ao, sab, sam, sak, b, bo, sbb, sbk, sbn, c, B, M, N, K, zero, ngroups, Bk, pk):
    """Per batch element, per block of columns: every KC block of B for those columns packed
    (by prange over pieces of rows or over NR slivers), then a prange over tasks (row panel of
    MC rows) x (``ngroups`` groups of column slivers); each task runs the KC blocks of its
    panel in order, packing its own A panel per block, so its part of C stays in cache from
    one block to the next (a block at a time for all panels read and wrote the whole of C
    again per block).  A panel is packed ``ngroups`` times: use ngroups > 1 only when M has
    too few panels to keep the threads busy.  The column block is NC wide, narrower where K
    is so deep that all of its KC blocks would pass ``BMAX`` elements.  ``pk`` (one B: ``sbb``
    0 or B 1): 0 packs into scratch; 1 packs every block into ``Bk`` (``packed_size(K, N)``
    elements, the (jc, pc) block at ``jc * K + pc * njr * NR``) and 2 reads them from there,
    as packed by an earlier call with pk 1 (``b`` is not read): a caller multiplying many A by
    one B packs it once.  The packed values, and so the sums, are the same either way."""
    nic = (M + MC - 1) // MC
    kmax = min(K, KC)
    ncb = min(NC, max(NR, (BMAX // K) // NR * NR))
    ncmax = min(N, ncb)
    ntask = nic * ngroups
    npc = (K + KC - 1) // KC
    Ap = np.empty(ntask * MC * kmax, c.dtype)
    Bp = np.empty(((ncmax + NR - 1) // NR) * NR * K if pk == 0 else 0, c.dtype)
    T = np.empty(ntask * MR * NR, c.dtype)
    Pk = np.empty(ntask * MC * NR, c.dtype)
    z = M - M   # a non-literal 0
    for bi in range(B):
        abase = ao + bi * sab
        bbase = bo + bi * sbb
        cbase = bi * M * N
        for jc in range(0, N, ncb):
            nc = min(ncb, N - jc)
            njr = (nc + NR - 1) // NR
            D = Bp if pk == 0 else Bk[jc * K:]
            # one panel: each task packs the slivers of its own column group itself (no
            # separate parallel pass, and they are packed on the core that reads them)
            own = nic == 1 and pk != 2
            if pk == 2 or own:
                pass
            elif sbn == 1:
                nkq = min(kmax, 2 * ntask)
                for q in prange(npc * nkq):
                    pc = (q // nkq) * KC
                    kq = q % nkq
                    kc = min(KC, K - pc)
                    pack_b_rows(b, bbase + pc * sbk + jc, sbk, kc, nc, D[pc * njr * NR:],
                                (kc * kq) // nkq, (kc * (kq + 1)) // nkq)
            else:
                for q in prange(npc * njr):
                    pc = (q // njr) * KC
                    pack_b(b, bbase + pc * sbk + jc * sbn, sbk, sbn, min(KC, K - pc), nc,
                           D[pc * njr * NR:], q % njr)
            for t in prange(ntask):
                g = t // nic
                ic = t - g * nic
                i0 = ic * MC
                mc = min(MC, M - i0)
                jr0 = (njr * g) // ngroups
                jr1 = (njr * (g + 1)) // ngroups
                if jr1 > jr0:
                    for pc in range(0, K, KC):
                        kc = min(KC, K - pc)
                        if own:
                            Dg = D[pc * njr * NR + jr0 * kc * NR:]
                            if sbn == 1:
                                pack_b_rows(b, bbase + pc * sbk + jc + jr0 * NR, sbk, kc,
                                            min(nc - jr0 * NR, (jr1 - jr0) * NR), Dg, z, kc)
                            else:
                                for jr in range(jr1 - jr0):
                                    pack_b(b, bbase + pc * sbk + (jc + jr0 * NR) * sbn, sbk,
                                           sbn, kc, nc - jr0 * NR, Dg, jr)
                        pack_a(a, abase + i0 * sam + pc * sak, sam, sak, mc, kc, Ap,
                               t * MC * kmax)
                        macro(Ap, t * MC * kmax, D[pc * njr * NR:], mc, nc, kc, c,
                              cbase + i0 * N + jc, N, pc == 0, zero,
                              T[t * MR * NR:(t + 1) * MR * NR], jr0, jr1,
                              Pk[t * MC * NR:(t + 1) * MC * NR])


# -- implicit-gemm convolution (``jit_kernels.cpu.conv``) ----------------------------------
# The im2col columns (row k = (c, i, j), column = (n, oy, ox)) are never materialised: the B
# packers read each NR-wide sliver straight from the image.  The sums are the gemm's (an FMA
# chain per KC block from zero, the blocks added in order), so the results have the bits of
# im2col + gemm, which stands in while these build.


@njit(cache=True, error_model='numpy', nogil=True)
def conv_runs(j0, nv, L, ow, R):
    # Output positions j0 <= j < j0 + nv (j = n*L + oy*ow + ox) in runs along one output row:
    # R[0, r] the run's offset from j0, R[1, r] its length, R[2..4, r] its (n, oy, ox).
    nr = 0
    t = 0
    j = j0
    while t < nv:
        n = j // L
        lr = j - n * L
        oy = lr // ow
        ox = lr - oy * ow
        m = min(ow - ox, nv - t)
        R[0, nr] = t
        R[1, nr] = m
        R[2, nr] = n
        R[3, nr] = oy
        R[4, nr] = ox
        nr += 1
        t += m
        j += m
    return nr


@njit(cache=True, error_model='numpy', nogil=True)
def xspan(xoff, sw, W, ow):
    # [lo, hi): the output columns ox with 0 <= ox*sw + xoff < W (no division at stride 1)
    if sw == 1:
        lo = min(ow, max(0, -xoff))
        return lo, max(lo, min(ow, W - xoff))
    return _span(xoff, sw, W, ow)


@njit(cache=True, error_model='numpy', nogil=True)
def zero_run(dst, d, n):
    for f in range(n):
        dst[d + f] = 0


@njit(cache=True, error_model='numpy', nogil=True)
def pack_b_cols(x, R, nr, nv, pc, kc, Bp, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, ow):
    # Rows pc <= k < pc + kc of the implicit columns of the sliver described by R (nv <= NR
    # columns), k-major into Bp[:kc*NR]; zero outside the image and past nv.  Indices are
    # unsigned (a signed one gets a negative-index test that stops the copies vectorising).
    # At unit strides with ow == W, the runs of one sample whose rows are in the image read
    # one contiguous stretch of it: one copy, then the columns outside the image zeroed.
    HW = H * W
    khw = kh * kw
    c = pc // khw
    r = pc - c * khw
    i = r // kw
    j = r - i * kw
    unr = uint64(NR)
    usw = uint64(sw)
    rows = sw == 1 and sh == 1 and ow == W
    for kk in range(kc):
        d0 = uint64(kk) * unr
        xoff = j * dw - pl
        lo, hi = xspan(xoff, sw, W, ow)
        q = 0
        while q < nr:
            t0 = uint64(R[0, q])
            m = uint64(R[1, q])
            ox0 = R[4, q]
            iy = R[3, q] * sh - pt + i * dh
            dt0 = d0 + t0
            if rows and iy >= 0 and iy < H and lo < hi:
                # runs q..q2 of one sample, every row in the image: one contiguous stretch
                q2 = q + 1
                n = R[2, q]
                while q2 < nr and R[2, q2] == n and iy + (q2 - q) < H:
                    q2 += 1
                a = max(lo, ox0)
                b = min(hi, R[4, q2 - 1] + R[1, q2 - 1])
                first = R[0, q] + a - ox0
                last = R[0, q2 - 1] + b - R[4, q2 - 1]  # (below first: nothing in the image)
                if last > first:
                    copy_run(Bp, d0 + uint64(first), x,
                             uint64((n * C + c) * HW + iy * W + xoff + a), uint64(last - first))
                for qq in range(q, q2 if lo > 0 or hi < ow else q):  # columns outside
                    o0 = R[4, qq]
                    mm = R[1, qq]
                    ua = uint64(min(mm, max(0, lo - o0)))
                    ub = uint64(max(0, min(mm, hi - o0)))
                    tq = d0 + uint64(R[0, qq])
                    zero_run(Bp, tq, ua)
                    if ub > ua:
                        zero_run(Bp, tq + ub, uint64(mm) - ub)
                    else:
                        zero_run(Bp, tq + ua, uint64(mm) - ua)
                q = q2
                continue
            q += 1
            a = max(lo, ox0)
            b = min(hi, ox0 + R[1, q - 1])
            if iy < 0 or iy >= H or b <= a:
                zero_run(Bp, dt0, m)
                continue
            ua = uint64(a - ox0)
            ub = uint64(b - ox0)
            zero_run(Bp, dt0, ua)
            src = uint64((R[2, q - 1] * C + c) * HW + iy * W + xoff + a * sw)
            dd = dt0 + ua
            if sw == 1:
                copy_run(Bp, dd, x, src, ub - ua)
            else:
                for e in range(ub - ua):
                    Bp[dd + e] = x[src + e * usw]
            zero_run(Bp, dt0 + ub, m - ub)
        zero_run(Bp, d0 + uint64(nv), unr - uint64(nv))
        j += 1
        if j == kw:
            j = 0
            i += 1
            if i == kh:
                i = 0
                c += 1


@njit(cache=True, error_model='numpy', nogil=True)
def row_segments(R, nr, L, ow, sx, S, merge):
    # The runs R of a sliver as segments of the output: S[0, s] the offset in the sliver,
    # S[1, s] the start relative to the plane row of sample 0, S[2, s] the length, S[3, s]
    # the sample, S[4, s] the first output position in the sample.  ``merge`` (over the
    # row-shifted planes: width ow, no padding): the runs of one sample are one contiguous
    # stretch of each plane and of the output, one segment.
    ns = 0
    q = 0
    while q < nr:
        n = R[2, q]
        q2 = q + 1
        m = R[1, q]
        while merge and q2 < nr and R[2, q2] == n:
            m += R[1, q2]
            q2 += 1
        S[0, ns] = R[0, q]
        S[1, ns] = n * sx + R[3, q] * ow + R[4, q]
        S[2, ns] = m
        S[3, ns] = n
        S[4, ns] = R[3, q] * ow + R[4, q]
        ns += 1
        q = q2
    return ns


@njit(cache=True, error_model='numpy', nogil=True)
def pack_b_segs(x, S, ns, nv, pc, kc, Bp, hp, ow, kh, dh):
    # Rows pc <= k < pc + kc (k = c*kh + i) of the implicit columns of a (kh, 1)-kernel,
    # unpadded, stride-1 conv over the row-shifted planes x: per row one copy per segment.
    c = pc // kh
    i = pc - c * kh
    unr = uint64(NR)
    for kk in range(kc):
        d0 = uint64(kk) * unr
        base = (c * hp + i * dh) * ow
        for s in range(ns):
            copy_run(Bp, d0 + uint64(S[0, s]), x, uint64(S[1, s] + base), uint64(S[2, s]))
        zero_run(Bp, d0 + uint64(nv), unr - uint64(nv))
        i += 1
        if i == kh:
            i = 0
            c += 1


@njit(cache=True, error_model='numpy', nogil=True, parallel=True)
def conv_fwd(a, x, y, bias, hasb, rows, N, C, H, W, O, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow,
             ntask, zero):
    # y (N, O, oh, ow) = a (O, C*kh*kw) @ the implicit columns of x (N, C, H, W) (+ bias[o]
    # after the sum), written as NCHW: the gemm's row o of sample n lands at y[n, o].  Tasks
    # of consecutive NR-wide column slivers; a sliver inside one sample's row block is
    # written in place (row stride L), others through a scratch tile.  ``rows``: x holds the
    # row-shifted planes (``jit_kernels.cpu.conv._shift_rows``) of a (kh, 1) kernel without
    # padding at stride 1, packed by segments (one copy per sample and row of the columns).
    K = C * kh * kw
    L = oh * ow
    NL = N * L
    nir = (O + MR - 1) // MR
    Mp = nir * MR
    z = O - O
    Ap = np.empty(Mp * K, y.dtype)
    for pc in range(0, K, KC):
        pack_a(a, pc, K, z + 1, O, min(KC, K - pc), Ap, pc * Mp)
    ns = (NL + NR - 1) // NR
    kmax = min(K, KC)
    V = NR // 2
    # the row-shifted form with whole NR/2-wide halves in one sample each: full slivers are
    # read straight from x (``macrox``), rows k = c*kh + i at offs[k]
    xread = rows and L % V == 0
    offs = np.empty(K, np.int64)
    for k in range(K):
        cc = k // kh
        offs[k] = (cc * H + (k - cc * kh) * dh) * W
    sxn = C * H * W
    for t in prange(ntask):
        s0 = (ns * t) // ntask
        s1 = (ns * (t + 1)) // ntask
        Bp = np.empty(kmax * NR, y.dtype)
        T = np.empty(MR * NR, y.dtype)
        S = np.empty(Mp * NR, y.dtype)
        Pk = np.empty(Mp * NR, y.dtype)
        R = np.empty((5, NR), np.int64)
        Sg = np.empty((5, NR), np.int64)
        for s in range(s0, s1):
            j0 = s * NR
            nv = min(NR, NL - j0)
            n0 = j0 // L
            l0 = j0 - n0 * L
            direct = nv == NR and l0 + NR <= L
            xr = xread and nv == NR
            # the runs and segments serve the packing and the scatter of a scratch tile only
            # (a tenth of a 1->16 8x8 conv's time when computed for every sliver)
            nr = 0
            nsg = 0
            if not (xr and direct):
                nr = conv_runs(j0, nv, L, ow, R)
                nsg = row_segments(R, nr, L, ow, C * H * W, Sg, rows)
            if direct:
                do = n0 * O * L + l0
                dl = L
            else:
                do = z
                dl = NR + z
            if xr:
                # y or the scratch sliver S chosen inside (an array-valued variable here cost
                # a reference count pair per sliver)
                n1 = (j0 + V) // L
                xb0 = n0 * sxn + l0
                xb1 = n1 * sxn + (j0 + V - n1 * L)
                for pc in range(0, K, KC):
                    macrox(Ap, pc * Mp, x, offs, pc, xb0, xb1, O, min(KC, K - pc), y, S, direct,
                           do, dl, pc == 0, zero, T)
            else:
                D = y if direct else S
                for pc in range(0, K, KC):
                    kc = min(KC, K - pc)
                    if rows:
                        pack_b_segs(x, Sg, nsg, nv, pc, kc, Bp, H, W, kh, dh)
                    else:
                        pack_b_cols(x, R, nr, nv, pc, kc, Bp, C, H, W, kh, kw, sh, sw, pt, pl,
                                    dh, dw, ow)
                    # one call site: each inlines the whole micro-kernel (compile time)
                    macro(Ap, pc * Mp, Bp, O, nv, kc, D, do, dl, pc == 0, zero, T, z, z + 1,
                          Pk)
            if direct:
                if hasb:
                    # offsets, not a view per row (a reference count pair each), and nv (= NR)
                    # as the bound: at the constant NR the loop was unrolled into scalar adds
                    # before the loop vectoriser saw it (a quarter of a 1->16 conv's time)
                    for o in range(O):
                        v = bias[o]
                        p = uint64((n0 * O + o) * L + l0)
                        for e in range(uint64(nv)):
                            y[p + e] += v
            else:  # one copy per segment (per sample in the row-shifted form)
                # unsigned offsets: with signed ones (a negative index wraps) the vectorised
                # copy gathered element by element (a fifth of a 16->32 4x4 conv's time)
                for o in range(O):
                    v = bias[o] if hasb else zero
                    for q in range(nsg):
                        t0 = uint64(o * NR + Sg[0, q])
                        m = uint64(Sg[2, q])
                        p = uint64((Sg[3, q] * O + o) * L + Sg[4, q])
                        if hasb:
                            for e in range(m):
                                y[p + e] = S[t0 + e] + v
                        else:
                            for e in range(m):
                                y[p + e] = S[t0 + e]


@njit(cache=True, error_model='numpy', nogil=True)
def pack_a_grad(g, R, nr, kc, O, L, ow, Ap, dst0):
    # The gradient g (N, O, L) as gemm rows A[o, p] (p = n*L + l) for the kc positions of the
    # runs R: MR-row slivers, k-major, at Ap[dst0:] (zero rows past O).
    nir = (O + MR - 1) // MR
    umr = uint64(MR)
    for ir in range(nir):
        dst = dst0 + ir * kc * MR
        mv = min(MR, O - ir * MR)
        for i in range(mv):
            o = ir * MR + i
            for q in range(nr):
                src = uint64((R[2, q] * O + o) * L + R[3, q] * ow + R[4, q])
                d = uint64(dst + R[0, q] * MR + i)
                for e in range(uint64(R[1, q])):
                    Ap[d + e * umr] = g[src + e]
        for i in range(mv, MR):
            for k in range(kc):
                Ap[dst + k * MR + i] = 0


@njit(cache=True, error_model='numpy', nogil=True)
def copy_strided(dst, d, step, src, s, n):
    for f in range(n):
        dst[d + f * step] = src[s + f]


@njit(cache=True, error_model='numpy', nogil=True)
def zero_strided(dst, d, step, n):
    for f in range(n):
        dst[d + f * step] = 0


@njit(cache=True, error_model='numpy', nogil=True)
def pack_b_colsT(x, R, nr, kc, j0, nv, Bp, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, ow):
    # The kc x nv block (rows: the positions of the runs R; columns j0 <= j < j0 + nv, j =
    # (c, i, jj)) of the transposed implicit columns, k-major NR-wide into Bp[:kc*NR]; at unit
    # strides with ow == W the runs of one sample in the image as one stretch (as pack_b_cols).
    HW = H * W
    khw = kh * kw
    unr = uint64(NR)
    usw = uint64(sw)
    rows = sw == 1 and sh == 1 and ow == W
    for t in range(nv):
        col = j0 + t
        c = col // khw
        r = col - c * khw
        i = r // kw
        j = r - i * kw
        xoff = j * dw - pl
        lo, hi = xspan(xoff, sw, W, ow)
        q = 0
        while q < nr:
            m = uint64(R[1, q])
            ox0 = R[4, q]
            iy = R[3, q] * sh - pt + i * dh
            d = uint64(R[0, q] * NR + t)
            if rows and iy >= 0 and iy < H and lo < hi:
                q2 = q + 1
                n = R[2, q]
                while q2 < nr and R[2, q2] == n and iy + (q2 - q) < H:
                    q2 += 1
                a = max(lo, ox0)
                b = min(hi, R[4, q2 - 1] + R[1, q2 - 1])
                first = R[0, q] + a - ox0
                last = R[0, q2 - 1] + b - R[4, q2 - 1]
                if last > first:
                    copy_strided(Bp, uint64(first * NR + t), unr, x,
                                 uint64((n * C + c) * HW + iy * W + xoff + a),
                                 uint64(last - first))
                for qq in range(q, q2 if lo > 0 or hi < ow else q):
                    o0 = R[4, qq]
                    mq = R[1, qq]
                    ua = min(mq, max(0, lo - o0))
                    ub = max(ua, min(mq, hi - o0))
                    tq = uint64(R[0, qq] * NR + t)
                    zero_strided(Bp, tq, unr, uint64(ua))
                    zero_strided(Bp, tq + uint64(ub) * unr, unr, uint64(mq - ub))
                q = q2
                continue
            q += 1
            a = max(lo, ox0)
            b = min(hi, ox0 + R[1, q - 1])
            if iy < 0 or iy >= H or b <= a:
                zero_strided(Bp, d, unr, m)
                continue
            ua = uint64(a - ox0)
            ub = uint64(b - ox0)
            zero_strided(Bp, d, unr, ua)
            src = uint64((R[2, q - 1] * C + c) * HW + iy * W + xoff + a * sw)
            dd = d + ua * unr
            for e in range(ub - ua):
                Bp[dd + e * unr] = x[src + e * usw]
            zero_strided(Bp, d + ub * unr, unr, m - ub)
    for k in range(kc):
        for t in range(nv, NR):
            Bp[k * NR + t] = 0


@njit(cache=True, error_model='numpy', nogil=True, parallel=True)
def conv_wgrad(g, x, c, Ap, N, C, H, W, O, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, ngroups,
               zero):
    # c (O, C*kh*kw) = g (N, O, oh*ow) as rows (O, N*L) @ the transposed implicit columns of x
    # (N*L, C*kh*kw): the reduction runs over the batch and the grid.  A is packed once into
    # the scratch Ap (prange over KC blocks); then tasks (column sliver) x (``ngroups`` groups
    # of row slivers) each pack their B sliver per KC block.
    Kc = C * kh * kw
    L = oh * ow
    P = N * L
    nir = (O + MR - 1) // MR
    Mp = nir * MR
    z = O - O
    nb = (P + KC - 1) // KC
    for bk in prange(nb):
        pc = bk * KC
        kc = min(KC, P - pc)
        R = np.empty((5, KC), np.int64)
        nr = conv_runs(pc, kc, L, ow, R)
        pack_a_grad(g, R, nr, kc, O, L, ow, Ap, pc * Mp)
    njr = (Kc + NR - 1) // NR
    for t in prange(njr * ngroups):
        jr = t // ngroups
        gi = t - jr * ngroups
        ir0 = (nir * gi) // ngroups
        ir1 = (nir * (gi + 1)) // ngroups
        if ir1 > ir0:
            r0 = ir0 * MR
            mc = min(O, ir1 * MR) - r0
            j0 = jr * NR
            nv = min(NR, Kc - j0)
            Bp = np.empty(KC * NR, c.dtype)
            T = np.empty(MR * NR, c.dtype)
            Pk = np.empty(Mp * NR, c.dtype)
            R = np.empty((5, KC), np.int64)
            for pc in range(0, P, KC):
                kc = min(KC, P - pc)
                nr = conv_runs(pc, kc, L, ow, R)
                pack_b_colsT(x, R, nr, kc, j0, nv, Bp, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw,
                             ow)
                macro(Ap, pc * Mp + ir0 * kc * MR, Bp, mc, nv, kc, c, r0 * Kc + j0, Kc, pc == 0,
                      zero, T, z, z + 1, Pk)
'''


_WDOT = '''
# -- the weight gradient as dot products (``jit_kernels.cpu.conv``, stride 1) -------------
# c[o, k] (k = c'*kh + i) = sum over samples n and positions p of g[n, o, p] times
# x[n, c', i*dh*ow + p], with x the row-shifted planes (N, Cp, hp, ow): both rows contiguous.

DMO = {DMO}
DMK = {DMK}
DV = {DV}
'''

# The driver, rendered twice: ``conv_wdot`` (parallel) and ``conv_wdot_loop`` (serial): the
# stand-in while the first builds in the background (``matmul.dot_now``).  A task's sums do
# not depend on how many tasks there are, so the two give the same bits.
_WDOT_DRIVER = '''

@njit(cache=True, error_model='numpy', nogil=True, parallel={PAR})
def {NAME}(g, x, c, acc, N, O, Cp, kh, dh, hp, ow, nbmax, ntask):
    # ``ntask`` tasks, each over a range of blocks of DMK rows k; per block of nbmax samples,
    # ``udot`` for each of its k blocks and each block of DMO rows o: the samples' g rows stay
    # in cache across the task's k blocks (k blocks as the outer loop re-read all of g from
    # memory once per block: at 8x8, 36 times).  Rows past O or K at the edges repeat the last
    # one and are not stored.  Each sum: the DV lanes as a fixed pairwise tree (a shorter
    # dependency chain than DV - 1 adds in a row), then the positions past the last whole
    # vector, in sample order (deterministic).
    L = (hp - dh * (kh - 1)) * ow
    K = Cp * kh
    nko = (K + DMK - 1) // DMK
    noo = (O + DMO - 1) // DMO
    nch = L // DV
    p1 = nch * DV
    sg = O * L
    sx = Cp * hp * ow
    T = DMO * DMK * DV
    for t in prange(ntask):
        kt0 = (nko * t) // ntask
        kt1 = (nko * (t + 1)) // ntask
        xs = np.empty((max(1, kt1 - kt0), DMK), np.int64)
        gs = np.empty(DMO, np.int64)
        for kt in range(kt0, kt1):
            for b in range(DMK):
                k = min(kt * DMK + b, K - 1)
                cc = k // kh
                xs[kt - kt0, b] = (cc * hp + (k - cc * kh) * dh) * ow
        for e in range(kt0 * noo * T, kt1 * noo * T):
            acc[e] = 0
        for n0 in range(0, N, nbmax):
            nb = min(nbmax, N - n0)
            for kt in range(kt0, kt1):
                q = kt - kt0
                for ot in range(noo):
                    for a in range(DMO):
                        gs[a] = n0 * sg + min(ot * DMO + a, O - 1) * L
                    udot(g, gs[0], gs[1], gs[2], gs[3], sg, x, xs[q, 0] + n0 * sx,
                         xs[q, 1] + n0 * sx, xs[q, 2] + n0 * sx, xs[q, 3] + n0 * sx, sx, nb, nch,
                         acc, (kt * noo + ot) * T)
        for kt in range(kt0, kt1):
            k0 = kt * DMK
            for ot in range(noo):
                for a in range(DMO):
                    o = ot * DMO + a
                    for b in range(DMK):
                        k = k0 + b
                        if o < O and k < K:
                            q = (kt * noo + ot) * T + (a * DMK + b) * DV
                            s = {LANESUM}
                            if p1 < L:
                                xo = xs[kt - kt0, b]
                                for n in range(N):
                                    gp = n * sg + o * L
                                    xp = n * sx + xo
                                    for p in range(p1, L):
                                        s += g[gp + p] * x[xp + p]
                            c[o * K + k] = s
'''


def _tree_sum(terms: list) -> str:
    """The sum of ``terms`` as a fixed pairwise tree (``((t0 + t1) + (t2 + t3))``...)."""
    if len(terms) == 1:
        return terms[0]
    h = (len(terms) + 1) // 2
    return f"({_tree_sum(terms[:h])} + {_tree_sum(terms[h:])})"


def _wino() -> list:
    """``win_in``, ``win_out`` and ``win_pool``: the Winograd F(2x2, 3x3) transforms of V tiles
    at once (``_simd.wino_kernels``; their call forms are documented there)."""
    L = []
    for name, args in (("win_in", "Xt, qs, l0, Vb, vo, cn"),
                       ("win_out", "Mb, q, mn, Yt, y0, y1, bv, two_r, two_c"),
                       ("win_pool", "Mb, q, mn, Yt, y0, bv, zero")):
        L += ["@njit(cache=True, error_model='numpy', nogil=True)",
              f"def {name}({args}):", f"    v{name}({args})", "", ""]
    return L


_NARROW = """
# -- products at most one vector wide (N <= NR/2, K <= KC): ``matmul``'s narrow path --------
@njit(cache=True, error_model='numpy', nogil=True)
def narrow_pack_b(b, bo, sbk, sbn, K, N, Bp, dst):
    # B (K x N at bo, strides sbk, sbn) as one V-wide sliver at Bp[dst:] (k-major, zero
    # columns past N)
    V = NR // 2
    for k in range(K):
        d = dst + k * V
        for j in range(N):
            Bp[d + j] = b[bo + k * sbk + j * sbn]
        for j in range(N, V):
            Bp[d + j] = 0


@njit(cache=True, error_model='numpy', nogil=True)
def narrow_rows(a, ao, sam, sak, Bp, bp0, c, co, M, N, K, zero, ir0, ir1, Ap, T):
    # row panels ir0 <= ir < ir1 (MR rows each) of c[co:] (M x N, row stride N) = A @ B with
    # B packed at Bp[bp0:] (``narrow_pack_b``): each element summed in K order from zero, as
    # ``uk`` sums it (the same bits as the packed gemm for K <= KC)
    V = NR // 2
    z = M - M
    for ir in range(ir0, ir1):
        r0 = ir * MR
        mv = min(MR, M - r0)
        # one call site each with non-literal arguments (one specialisation each)
        if mv == MR:      # A read in place
            ukd(K, a, ao + r0 * sam, sam, sak, Bp, bp0, T, z, V + z, z == z, zero)
        else:             # the last, partial panel: packed (zero rows past M)
            pack_a(a, ao + r0 * sam, sam, sak, mv, K, Ap, z)
            ukn(K, Ap, z, Bp, bp0, T, z, V + z, z == z, zero)
        for i in range(mv):
            d = co + (r0 + i) * N
            for j in range(N):
                c[d + j] = T[i * V + j]


@njit(cache=True, error_model='numpy', nogil=True)
def gemm_narrow(a, ao, sab, sam, sak, b, bo, sbb, sbk, sbn, c, B, M, N, K, zero):
    V = NR // 2
    z = M - M
    Ap = np.empty(MR * K, c.dtype)
    Bp = np.empty(V * K, c.dtype)
    T = np.empty(MR * V, c.dtype)
    nir = (M + MR - 1) // MR
    for bi in range(B):
        narrow_pack_b(b, bo + bi * sbb, sbk, sbn, K, N, Bp, z)
        narrow_rows(a, ao + bi * sab, sam, sak, Bp, z, c, bi * M * N, M, N, K, zero, z, nir,
                    Ap, T)


@njit(cache=True, error_model='numpy', nogil=True, parallel=True)
def gemm_narrow_par(a, ao, sab, sam, sak, b, bo, sbb, sbk, sbn, c, B, M, N, K, zero, ntask):
    # tasks of consecutive row panels over all batch elements (B packed once per element)
    V = NR // 2
    nir = (M + MR - 1) // MR
    Bp = np.empty(B * V * K, c.dtype)
    for bi in range(B):
        narrow_pack_b(b, bo + bi * sbb, sbk, sbn, K, N, Bp, bi * V * K)
    npan = B * nir
    for t in prange(ntask):
        Ap = np.empty(MR * K, c.dtype)
        T = np.empty(MR * V, c.dtype)
        p = (npan * t) // ntask
        p1 = (npan * (t + 1)) // ntask
        while p < p1:
            bi = p // nir
            ir = p - bi * nir
            ie = min(nir, ir + p1 - p)
            narrow_rows(a, ao + bi * sab, sam, sak, Bp, bi * V * K, c, bi * M * N, M, N, K,
                        zero, ir, ie, Ap, T)
            p += ie - ir
"""

_WINO = '''
# -- the stride-1 3x3 convolution as Winograd F(2x2, 3x3) (``jit_kernels.cpu.winograd``) -------
@njit(cache=True, error_model='numpy', nogil=True, parallel=True)
def wino_fwd(u, x, y, bias, hasb, pool, N, C, H, W, O, pt, pl, oh, ow, ntask, zero):
    # y (N, O, oh, ow) = the stride-1 3x3 convolution of x (N, C, H, W) with leading pads pt,
    # pl (+ bias[o]), as Winograd F(2x2, 3x3).  u (16, O, C): the transformed weight G g G^T
    # of each (o, c), element xi = 4a + b.  The lanes are samples: per block of NR samples
    # the images are transposed to (c, iy, ix, lane); per 2x2 output tile the input transform
    # B^T d B of the tile's 4x4 patch, all lanes at once, gives V[xi] (C, NR), which is the
    # micro-kernel's packed B sliver; the 16 products M[xi] (O, NR) = U[xi] @ V[xi]; the
    # output transform A^T m A (+ bias) into the block's (o, oy, ox, lane) result, transposed
    # back into y.  Patch elements outside the image read a zero row (Xt's last NR).
    # ``pool`` (oh, ow even): y (N, O, oh/2, ow/2) is max_pool2d_relu of that result, its 2x2
    # windows being the tiles (``win_pool``).
    HW = H * W
    L = (oh // 2) * (ow // 2) if pool else oh * ow
    OW = ow // 2 if pool else ow
    nir = (O + MR - 1) // MR
    Mp = nir * MR
    z = O - O
    Ap = np.empty(16 * Mp * C, y.dtype)
    for xi in range(16):
        for pc in range(0, C, KC):
            pack_a(u, xi * O * C + pc, C, z + 1, O, min(KC, C - pc), Ap, xi * Mp * C + pc * Mp)
    nsb = (N + NR - 1) // NR
    un = uint64(NR)
    CN = C * NR
    MN = Mp * NR
    ZOFF = C * HW * NR
    V = NR // 2
    cn = uint64(CN)
    mn = uint64(MN)
    for task in prange(ntask):
        s0 = (nsb * task) // ntask
        s1 = (nsb * (task + 1)) // ntask
        Xt = np.empty(ZOFF + NR, y.dtype)
        Vb = np.empty(16 * CN, y.dtype)
        Mb = np.empty(16 * MN, y.dtype)
        Yt = np.empty(O * L * NR, y.dtype)
        offs = np.empty(16, np.int64)
        qs = np.empty(16, np.int64)
        for e in range(NR):
            Xt[ZOFF + e] = zero
        for sb in range(s0, s1):
            n0 = sb * NR
            nl = min(NR, N - n0)
            for ln in range(nl):
                src = uint64((n0 + ln) * C * HW)
                for e in range(uint64(C * HW)):
                    Xt[e * un + uint64(ln)] = x[src + e]
            for ln in range(nl, NR):
                for e in range(uint64(C * HW)):
                    Xt[e * un + uint64(ln)] = zero
            for ty in range(0, oh, 2):
                for tx in range(0, ow, 2):
                    for i in range(4):
                        iy = ty - pt + i
                        for j in range(4):
                            ix = tx - pl + j
                            if iy >= 0 and iy < H and ix >= 0 and ix < W:
                                offs[4 * i + j] = (iy * W + ix) * NR
                            else:
                                offs[4 * i + j] = -1
                    for c in range(C):
                        cb = c * HW * NR
                        # (a patch element outside the image reads the zero row)
                        for k in range(16):
                            qs[k] = ZOFF if offs[k] < 0 else cb + offs[k]
                        for h in range(NR // V):
                            win_in(Xt, qs, uint64(h * V), Vb, uint64(c * NR + h * V), cn)
                    for xi in range(16):
                        for ir in range(nir):
                            for pc in range(0, C, KC):
                                kc = min(KC, C - pc)
                                uk(kc, Ap, xi * Mp * C + pc * Mp + ir * kc * MR, Vb,
                                   xi * CN + pc * NR, Mb, xi * MN + ir * MR * NR, NR + z,
                                   pc == 0, Mb, z, z < z, z < z, zero)
                    two_r = ty + 1 < oh
                    two_c = tx + 1 < ow
                    for oc in range(O):
                        bv = bias[oc] if hasb else zero
                        if pool:
                            y0 = (oc * L + (ty // 2) * OW + tx // 2) * NR
                            for h in range(NR // V):
                                win_pool(Mb, uint64(oc * NR + h * V), mn, Yt,
                                         uint64(y0 + h * V), bv, zero)
                            continue
                        y0 = (oc * L + ty * OW + tx) * NR
                        for h in range(NR // V):
                            win_out(Mb, uint64(oc * NR + h * V), mn, Yt, uint64(y0 + h * V),
                                    uint64(y0 + OW * NR + h * V), bv, two_r, two_c)
            for ln in range(nl):
                dst = uint64((n0 + ln) * O * L)
                for e in range(uint64(O * L)):
                    y[dst + e] = Yt[e * un + uint64(ln)]
'''



#: the module's functions called from Python (``matmul``, ``conv``, ``winograd``, the background
#: builds): kernels; every other function is a ``helper`` only they call (no Python entry point
#: and no machine code of its own: each driver's LLVM module gets the code it inlines)
ENTRY_POINTS = frozenset(("gemm_serial", "gemm_batch", "gemm_rows", "gemm_narrow",
                          "gemm_narrow_par", "conv_fwd", "conv_wgrad", "conv_wdot",
                          "conv_wdot_loop", "wino_fwd", "wino_fwd_serial"))
_KERNEL_DECORATOR = re.compile(r"@njit\(cache=True, error_model='numpy', nogil=True"
                               r"(?P<rest>(?:, inline='always')?)\)\ndef (?P<name>\w+)\(")


def _as_helper(m) -> str:
    if m["name"] in ENTRY_POINTS:
        return m[0]
    return f"@helper(error_model='numpy'{m['rest']})\ndef {m['name']}("


def source(MR: int, NR: int, MC: int, KC: int, NC: int, KI: int) -> str:
    assert MC % MR == 0 and 0 < KI <= KC
    head = ["# Generated by jit_kernels.cpu._matmul_gen: the packed float gemm "
            f"(MR={MR}, NR={NR}, MC={MC}, KC={KC}, NC={NC}, KI={KI}).",
            "import numpy as np", "from numba import prange, uint64",
            "from jit_kernels.cpu._jit import helper, njit",
            "from jit_kernels.cpu.conv import _span  # im2col's in-image column range",
            "from jit_kernels.cpu.scalar_math import fmax_nan  # NaN-propagating max"]
    V = NR // 2  # one vector register (matmul.gemm_config)
    head += ["from jit_kernels.cpu._simd import tile_kernel",
             f"tile_uk = tile_kernel({MR}, 2, {V}, chained=True)",
             f"tile_ukn = tile_kernel({MR}, 1, {V})  # (the narrow path's: one vector wide)",
             f"tile_ukd = tile_kernel({MR}, 1, {V}, 'strided')",
             f"tile_ukx = tile_kernel({MR}, 2, {V}, 'packed', 'shifted')",
             "from jit_kernels.cpu._simd import copy_kernel, dot_kernel",
             f"vcopy = copy_kernel({V})",
             "from jit_kernels.cpu._simd import pack_kernel",
             f"vpack_rows = pack_kernel({MR}, 'rows')",
             f"vpack_cols = pack_kernel({MR}, 'cols')",
             f"vpack_brows = pack_kernel({V}, 'rows')",
             f"vdot = dot_kernel({DOT_MO}, {DOT_MK}, {V})",
             "from jit_kernels.cpu._simd import wino_kernels",
             f"vwin_in, vwin_out, vwin_pool = wino_kernels({V}, {NR})", "", ""]
    ukn = _uk("ukn", "tile_ukn")
    lanesum = _tree_sum([f"acc[q + {e}]" for e in range(V)])
    body = (head + _uk("uk", "tile_uk", chained=True) + ["", ""] + ukn + ["", ""] + _ukd() + ["", ""]
            + _ukx() + ["", ""]
            + _copy_run() + ["", ""]
            + _udot(DOT_MO, DOT_MK) + ["", ""] + _wino())
    text = ("\n".join(body) + "\n\n" + _DRIVER.format(MR=MR, NR=NR, MC=MC, KC=KC, NC=NC, KI=KI)
            + _WDOT.format(DMO=DOT_MO, DMK=DOT_MK, DV=V)
            + "".join(_WDOT_DRIVER.format(NAME=name, PAR=par, LANESUM=lanesum)
                      for name, par in (("conv_wdot", True), ("conv_wdot_loop", False)))
            + _NARROW + _WINO
            # the serial twin: the same tasks in order (the same bits), the stand-in while
            # wino_fwd builds in the background
            + _WINO.replace("parallel=True", "parallel=False")
                   .replace("def wino_fwd(", "def wino_fwd_serial(")
                   .replace("for task in prange(ntask):", "for task in range(ntask):"))
    return _KERNEL_DECORATOR.sub(_as_helper, text)
