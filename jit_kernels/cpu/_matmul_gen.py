"""Source generator for the packed float matmul (``gemm``) used by ``jit_kernels.cpu.matmul``.

``source(cfg)`` returns the text of one module holding, for one float dtype:

- ``uk``: the MR x NR register-blocked micro-kernel, written as MR*NR scalar accumulators
  (``c{i}_{j} += a{i} * b{j}`` over a packed A sliver (k-major, MR wide) and a packed B sliver
  (k-major, NR wide)).  LLVM's SLP vectoriser turns each accumulator row into NR/lanes vector FMAs
  with broadcast A elements.  It is compiled with ``fastmath={'contract'}`` only (FMA, no
  reassociation), so every C element is summed in K order within a KC block, then added to C.
- ``pack_a`` / ``pack_b`` / ``macro``: BLIS-style packing of strided inputs (any strides,
  including transposed and negative views, read in place) and the loop over micro-tiles of one
  MC x NC block; partial tiles at the M/N edges go through a small MR x NR scratch tile.
- ``gemm_rows`` (parallel: B panels packed by ``prange`` over NR slivers, row panels of MC
  rows by ``prange``), ``gemm_batch`` (parallel over batch elements, each serial) and
  ``gemm_serial``.

Only ``uk`` needs ``numba.config.SLP_VECTORIZE`` on: ``jit_kernels.cpu.matmul`` compiles it
eagerly with its one explicit signature inside that window, then disables further compiles of
it.  Callers compiled later (SLP off) link in and inline its already vectorised IR and keep it
vector; but a call with other argument types (a literal ``0``/``True``/``NR`` is typed as a
``Literal``) would make Numba compile a new, scalar specialisation -- hence the single,
variable-typed call site in ``macro`` and the disabled dispatcher.
"""
from __future__ import annotations


def _uk(MR: int, NR: int) -> list:
    L = []
    L.append("@njit(cache=True, error_model='numpy', fastmath={'contract'}, nogil=True)")
    L.append("def uk(kc, Ap, ao, Bp, bo, C, co, ldc, first, zero):")
    for i in range(MR):
        L.append("    " + "; ".join(f"c{i}_{j} = zero" for j in range(NR)))
    L.append("    for k in range(kc):")
    L.append(f"        As = Ap[ao + k * {MR}:ao + k * {MR} + {MR}]")
    L.append(f"        Bs = Bp[bo + k * {NR}:bo + k * {NR} + {NR}]")
    for i in range(MR):
        L.append(f"        a{i} = As[{i}]")
    for j in range(NR):
        L.append(f"        b{j} = Bs[{j}]")
    for i in range(MR):
        for j in range(NR):
            L.append(f"        c{i}_{j} += a{i} * b{j}")
    L.append("    if first:")
    for i in range(MR):
        L.append(f"        Cs = C[co + {i} * ldc:co + {i} * ldc + {NR}]")
        for j in range(NR):
            L.append(f"        Cs[{j}] = c{i}_{j}")
    L.append("    else:")
    for i in range(MR):
        L.append(f"        Cs = C[co + {i} * ldc:co + {i} * ldc + {NR}]")
        for j in range(NR):
            L.append(f"        Cs[{j}] += c{i}_{j}")
    return L


_DRIVER = '''
MR = {MR}
NR = {NR}
MC = {MC}
KC = {KC}
NC = {NC}


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
def pack_a(a, aoff, sam, sak, mc, kc, Ap, dst0):
    """The mc x kc block of a at ``aoff`` as MR-row slivers (k-major, zero-padded rows)."""
    nir = (mc + MR - 1) // MR
    for ir in range(nir):
        r0 = ir * MR
        mv = min(MR, mc - r0)
        dst = dst0 + ir * kc * MR
        if sak == 1:
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
def macro(Ap, aoff, Bp, mc, nc, kc, c, coff, ldc, first, zero, T, jr0, jr1):
    """C[coff: mc x nc, row stride ldc] (+)= packed A block @ packed B block, for the NR-wide
    column slivers jr0 <= jr < jr1."""
    nir = (mc + MR - 1) // MR
    for jr in range(jr0, jr1):
        nv = min(NR, nc - jr * NR)
        for ir in range(nir):
            mv = min(MR, mc - ir * MR)
            co = coff + ir * MR * ldc + jr * NR
            # One call site with non-literal argument types: the caller must hit the one
            # SLP-compiled specialisation of ``uk`` (its dispatcher refuses to compile more).
            if mv == MR and nv == NR:
                D = c
                do = co
                dl = ldc
                f = first
            else:
                D = T
                do = co - co
                dl = ldc - ldc + NR
                f = True
            uk(kc, Ap, aoff + ir * kc * MR, Bp, jr * kc * NR, D, do, dl, f, zero)
            if mv < MR or nv < NR:
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
def gemm_one(a, ao, sam, sak, b, bo, sbk, sbn, c, co, M, N, K, zero, Ap, Bp, T):
    """One (M, K) @ (K, N) product into c[co:] (row stride N), serially."""
    z = M - M  # a non-literal 0: literal arguments would compile extra specialisations
    for jc in range(0, N, NC):
        nc = min(NC, N - jc)
        njr = (nc + NR - 1) // NR
        for pc in range(0, K, KC):
            kc = min(KC, K - pc)
            for jr in range(njr):
                pack_b(b, bo + pc * sbk + jc * sbn, sbk, sbn, kc, nc, Bp, jr)
            for ic in range(0, M, MC):
                mc = min(MC, M - ic)
                pack_a(a, ao + ic * sam + pc * sak, sam, sak, mc, kc, Ap, z)
                macro(Ap, z, Bp, mc, nc, kc, c, co + ic * N + jc, N, pc == 0, zero, T, z, njr)


@njit(cache=True, error_model='numpy', nogil=True)
def gemm_serial(a, ao, sab, sam, sak, b, bo, sbb, sbk, sbn, c, B, M, N, K, zero):
    Ap = np.empty(((min(M, MC) + MR - 1) // MR) * MR * min(K, KC), c.dtype)
    Bp = np.empty(((min(N, NC) + NR - 1) // NR) * NR * min(K, KC), c.dtype)
    T = np.empty(MR * NR, c.dtype)
    for bi in range(B):
        gemm_one(a, ao + bi * sab, sam, sak, b, bo + bi * sbb, sbk, sbn, c, bi * M * N,
                 M, N, K, zero, Ap, Bp, T)


@njit(cache=True, error_model='numpy', nogil=True, parallel=True)
def gemm_batch(a, ao, sab, sam, sak, b, bo, sbb, sbk, sbn, c, B, M, N, K, zero):
    na = ((min(M, MC) + MR - 1) // MR) * MR * min(K, KC)
    nb = ((min(N, NC) + NR - 1) // NR) * NR * min(K, KC)
    for bi in prange(B):
        Ap = np.empty(na, c.dtype)
        Bp = np.empty(nb, c.dtype)
        T = np.empty(MR * NR, c.dtype)
        gemm_one(a, ao + bi * sab, sam, sak, b, bo + bi * sbb, sbk, sbn, c, bi * M * N,
                 M, N, K, zero, Ap, Bp, T)


@njit(cache=True, error_model='numpy', nogil=True, parallel=True)
def gemm_rows(a, ao, sab, sam, sak, b, bo, sbb, sbk, sbn, c, B, M, N, K, zero, ngroups):
    """Per batch element, per (NC, KC) block: B packed by prange over NR slivers, then a prange
    over tasks (row panel of MC rows) x (``ngroups`` groups of column slivers); each task packs
    its own A panel (a panel is packed ``ngroups`` times: use ngroups > 1 only when M has too
    few panels to keep the threads busy)."""
    nic = (M + MC - 1) // MC
    kmax = min(K, KC)
    ncmax = min(N, NC)
    ntask = nic * ngroups
    Ap = np.empty(ntask * MC * kmax, c.dtype)
    Bp = np.empty(((ncmax + NR - 1) // NR) * NR * kmax, c.dtype)
    T = np.empty(ntask * MR * NR, c.dtype)
    for bi in range(B):
        abase = ao + bi * sab
        bbase = bo + bi * sbb
        cbase = bi * M * N
        for jc in range(0, N, NC):
            nc = min(NC, N - jc)
            njr = (nc + NR - 1) // NR
            for pc in range(0, K, KC):
                kc = min(KC, K - pc)
                for jr in prange(njr):
                    pack_b(b, bbase + pc * sbk + jc * sbn, sbk, sbn, kc, nc, Bp, jr)
                for t in prange(ntask):
                    ic = t // ngroups
                    g = t - ic * ngroups
                    i0 = ic * MC
                    mc = min(MC, M - i0)
                    jr0 = (njr * g) // ngroups
                    jr1 = (njr * (g + 1)) // ngroups
                    if jr1 > jr0:
                        pack_a(a, abase + i0 * sam + pc * sak, sam, sak, mc, kc, Ap,
                               t * MC * kmax)
                        macro(Ap, t * MC * kmax, Bp, mc, nc, kc, c, cbase + i0 * N + jc, N,
                              pc == 0, zero, T[t * MR * NR:(t + 1) * MR * NR], jr0, jr1)
'''


def source(MR: int, NR: int, MC: int, KC: int, NC: int) -> str:
    assert MC % MR == 0
    head = ["# Generated by jit_kernels.cpu._matmul_gen: the packed float gemm "
            f"(MR={MR}, NR={NR}, MC={MC}, KC={KC}, NC={NC}).",
            "import numpy as np", "from numba import njit, prange", "", ""]
    return "\n".join(head + _uk(MR, NR)) + "\n\n" + _DRIVER.format(MR=MR, NR=NR, MC=MC, KC=KC,
                                                                     NC=NC)
