"""``einsum``: any subscripts (``...``, repeated indices for traces and diagonals, outer
products, implicit output), lowered onto catalogue records: a repeated index of one operand is
``diagonal``, an index that only one operand has and the output lacks is summed out first,
and each pair of operands is one batched ``matmul`` (batch indices, the left operand's free
indices, the contracted ones: permutes and reshapes around it), left to right.  The gradient
flows through those parts and captured graphs / ONNX export hold them (MatMul, Transpose,
Reshape, ReduceSum, Gather).  Ellipsis dimensions broadcast (size-1 dims expand) as in
PyTorch; a letter bound to two different sizes raises ``ShapeError``.
"""
from __future__ import annotations

import builtins as _b

from ..core.errors import ArgumentTypeError, ArgumentValueError, ShapeError
from ..tensor import Tensor
from .args import tensor_arg
from ..core.registry import front_end

__all__ = ["einsum"]

_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _err(eq, msg):
    return ArgumentValueError(f"einsum: {msg} (subscripts {eq!r})")


def _parse_term(eq, term, ndim, k):
    """The labels of one operand's term: letters, and ``("...", i)`` for ellipsis dims
    counted from the right (so ellipsis dims of different operands align right)."""
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise _err(eq, f"operand {k}'s term {term!r} has more than one ellipsis or a stray '.'")
    for ch in term.replace("...", ""):
        if ch not in _LETTERS:
            raise _err(eq, f"invalid subscript {ch!r} in operand {k}'s term {term!r}")
    if "..." in term:
        left, right = term.split("...")
        n_ell = ndim - len(left) - len(right)
        if n_ell < 0:
            raise _err(eq, f"operand {k} has {ndim} dims, fewer than its term {term!r} names")
        return list(left) + [("...", n_ell - 1 - i) for i in range(n_ell)] + list(right)
    if len(term) != ndim:
        raise _err(eq, f"operand {k} has {ndim} dims but its term {term!r} names {len(term)}")
    return list(term)


def _parse(eq, ops):
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        if "->" in out:
            raise _err(eq, "more than one '->'")
    else:
        lhs, out = eq, None
    terms = lhs.split(",")
    if len(terms) != len(ops):
        raise _err(eq, f"{len(terms)} terms for {len(ops)} operands")
    labels = [_parse_term(eq, t, x.ndim, k) for k, (t, x) in enumerate(zip(terms, ops))]
    n_ell = _b.max([_b.sum(1 for lab in ls if isinstance(lab, tuple)) for ls in labels] + [0])
    ell = [("...", n_ell - 1 - i) for i in range(n_ell)]
    if out is None:                      # implicit: ellipsis, then letters seen once, sorted
        counts = {}
        for ls in labels:
            for lab in ls:
                if not isinstance(lab, tuple):
                    counts[lab] = counts.get(lab, 0) + 1
        out_labels = ell + sorted(c for c, n in counts.items() if n == 1)
    else:
        if out.count("...") > 1 or out.replace("...", "").count("."):
            raise _err(eq, f"the output term {out!r} has more than one ellipsis or a stray '.'")
        seen_in = {lab for ls in labels for lab in ls}
        left, _, right = out.partition("...") if "..." in out else (out, "", "")
        for ch in left + right:
            if ch not in _LETTERS:
                raise _err(eq, f"invalid subscript {ch!r} in the output term {out!r}")
            if ch not in seen_in:
                raise _err(eq, f"output subscript {ch!r} appears in no input term")
        if len(set(left + right)) != len(left + right):
            raise _err(eq, f"the output term {out!r} repeats a subscript")
        if n_ell and "..." not in out:
            raise _err(eq, "the inputs have ellipsis dims but the output term has no '...' "
                           "(NumPy's rule)")
        out_labels = list(left) + (ell if "..." in out else []) + list(right)
    return labels, out_labels


def _sizes(eq, ops, labels):
    """The size of each label; sizes of one label must match or be 1 (broadcast)."""
    size = {}
    for k, (x, ls) in enumerate(zip(ops, labels)):
        for d, lab in zip(x.shape, ls):
            old = size.get(lab)
            if old is None or old == 1:
                size[lab] = d
            elif d != old and d != 1:
                name = "..." if isinstance(lab, tuple) else lab
                raise ShapeError(f"einsum: subscript {name!r} has size {d} in operand {k} but "
                                 f"{old} elsewhere (shapes {[tuple(o.shape) for o in ops]}, "
                                 f"subscripts {eq!r})")
    return size


def _take_diagonals(x, ls):
    """``x`` with each repeated label reduced to its diagonal (``diagonal`` appends it last)."""
    from .rearrange import diagonal
    ls = list(ls)
    while True:
        dup = next((lab for lab in ls if ls.count(lab) > 1), None)
        if dup is None:
            return x, ls
        i = ls.index(dup)
        j = ls.index(dup, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ShapeError(f"einsum: repeated subscript {dup!r} has sizes {x.shape[i]} and "
                             f"{x.shape[j]} in one operand (shape {tuple(x.shape)})")
        x = diagonal(x, 0, i, j)
        ls = [lab for k, lab in enumerate(ls) if k not in (i, j)] + [dup]


def _sum_out(x, ls, keep):
    from .reduce import sum as sum_
    axes = tuple(i for i, lab in enumerate(ls) if lab not in keep)
    if not axes:
        return x, ls
    return sum_(x, axes), [lab for lab in ls if lab in keep]


def _arrange(x, ls, order, size):
    """``x`` permuted to the labels ``order`` (each in ``ls``) and expanded to ``size``."""
    from .shape import broadcast_to, permute
    perm = tuple(ls.index(lab) for lab in order)
    if perm != tuple(range(len(perm))):
        x = permute(x, perm)
    want = tuple(size[lab] for lab in order)
    if tuple(x.shape) != want:
        x = broadcast_to(x, want)
    return x


def _prod(ds):
    n = 1
    for d in ds:
        n *= d
    return n


def _contract(a, la, b, lb, keep, size):
    """``a`` and ``b`` contracted over the labels both have that ``keep`` lacks, as one
    batched matmul; returns the result and its labels (batch, a's free, b's free)."""
    from .linalg import matmul
    from .shape import reshape
    batch = [lab for lab in la if lab in lb and lab in keep]
    con = [lab for lab in la if lab in lb and lab not in keep]
    left = [lab for lab in la if lab not in lb]
    right = [lab for lab in lb if lab not in la]
    nb, nl, nr, nk = (_prod(size[x] for x in g) for g in (batch, left, right, con))
    am = reshape(_arrange(a, la, batch + left + con, size), (nb, nl, nk))
    bm = reshape(_arrange(b, lb, batch + con + right, size), (nb, nk, nr))
    y = matmul(am, bm)
    labels = batch + left + right
    return reshape(y, tuple(size[x] for x in labels)), labels


@front_end(method=False)
def einsum(equation, *operands) -> Tensor:
    """``torch.einsum(equation, *operands)`` (operands may also be one list): any subscripts,
    with ``...``, repeated indices (traces, diagonals), outer products and the implicit output
    (the ellipsis, then the letters seen once, in alphabetical order).  Contractions run as
    batched ``matmul``s (see the module docstring), so the gradient flows through them; ints
    work (bools do not: ``matmul`` refuses them)."""
    from .shape import broadcast_to, reshape
    if not isinstance(equation, str):
        raise ArgumentTypeError(f"einsum: the first argument must be the subscripts string, "
                                f"got {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise _err(equation, "no operands")
    ops = [tensor_arg("einsum", x) for x in operands]
    labels, out = _parse(equation, ops)
    size = _sizes(equation, ops, labels)
    terms = []
    for k, (x, ls) in enumerate(zip(ops, labels)):
        x, ls = _take_diagonals(x, ls)
        others = set(out)
        for j, lj in enumerate(labels):
            if j != k:
                others.update(lj)
        x, ls = _sum_out(x, ls, others)
        terms.append((x, ls))
    x, ls = terms[0]
    for k in range(1, len(terms)):
        keep = set(out)
        for _, lj in terms[k + 1:]:
            keep.update(lj)
        x, ls = _contract(x, ls, terms[k][0], terms[k][1], keep, size)
    x, ls = _sum_out(x, ls, set(out))
    if not out:
        return reshape(x, ())
    # size-1 ellipsis dims of one operand broadcast against another's: expand to the output
    y = _arrange(x, ls, out, size) if set(ls) == set(out) else x
    if tuple(y.shape) != tuple(size[lab] for lab in out):
        y = broadcast_to(y, tuple(size[lab] for lab in out))
    return y
