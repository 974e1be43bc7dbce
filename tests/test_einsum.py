"""einsum: any subscripts against np.einsum in float64, torch as the second oracle,
gradients by finite differences through the lowered parts (diagonal, sum, batched matmul),
capture and ONNX export of the parts, and exact error messages.  Float64 throughout: the
contractions reuse the matmul kernels the rest of the suite compiles."""
import re

import numpy as np
import pytest

import runtime as rt
from autodiff.gradcheck import check_grad
from oracle import needs_torch, onnx_run, torch

R = np.random.default_rng(0)
A, B, C = R.standard_normal((2, 3, 4)), R.standard_normal((2, 4, 5)), R.standard_normal((2, 5, 2))
M, V = R.standard_normal((4, 4)), R.standard_normal(4)
CASES = [
    ("bij,bjk->bik", (A, B)),           # batched matmul
    ("bij,bjk", (A, B)),                # implicit output
    ("ij,jk->ik", (M, M)),
    ("ij,j->i", (M, V)),
    ("i,i->", (V, V)),                  # dot
    ("i,j->ij", (V, V[:3])),            # outer product
    ("ii->", (M,)),                     # trace
    ("ii->i", (M,)),                    # diagonal
    ("iij->j", (R.standard_normal((3, 3, 2)),)),
    ("ij->ji", (M,)),
    ("abc->ca", (A,)),
    ("bij->", (A,)),
    ("ij,ij->ij", (M, M)),              # elementwise
    ("...ij,...jk->...ik", (A, B)),
    ("...jk,...kl", (R.standard_normal((1, 3, 4)), B)),   # ellipsis broadcast
    ("bij,bjk,bkl->bil", (A, B, C)),    # three operands
    ("bij,bkj->bik", (A, R.standard_normal((2, 6, 4)))),
    ("i j , j k -> i k", (M, M)),        # spaces
    ("ab,cd->abcd", (M[:2, :3], M[:3, :2])),
]


@pytest.mark.parametrize("eq,ops", CASES, ids=[c[0] for c in CASES])
def test_einsum_matches_numpy(eq, ops):
    got = rt.einsum(eq, *[rt.tensor(o) for o in ops])
    want = np.einsum(eq.replace(" ", ""), *ops)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_list_form_ints_and_promotion():
    a = rt.tensor(np.arange(6).reshape(2, 3))
    b = rt.tensor(np.arange(12).reshape(3, 4))
    got = rt.einsum("ij,jk->ik", [a, b])
    assert got.dtype is rt.int64 and got.tolist() == (np.arange(6).reshape(2, 3) @
                                                       np.arange(12).reshape(3, 4)).tolist()


@pytest.mark.parametrize("eq,idx", [("bij,bjk->bik", (0, 1)), ("ii->i", (6,)),
                                    ("i,j->ij", (4, 5)), ("bij,bjk,bkl->bil", (0, 1, 2)),
                                    ("...ij,...jk->...ik", (0, 1))])
def test_einsum_gradients(eq, idx):
    table = {0: A, 1: B, 2: C, 4: V, 5: V[:3], 6: M}
    ops = [table[i] for i in idx]
    check_grad(lambda *ts: rt.einsum(eq, *ts), *ops)


@needs_torch
def test_einsum_agrees_with_torch():
    for eq, ops in CASES[:17]:
        tops = [torch.tensor(o, requires_grad=True) for o in ops]
        want = torch.einsum(eq, *tops)
        ad = rt.autodiff(rt.cpu())
        ours = [rt.tensor(o, device=ad).require_grad() for o in ops]
        y = rt.einsum(eq, *ours)
        np.testing.assert_allclose(y.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
        w = R.standard_normal(tuple(want.shape))
        g = (y * rt.tensor(w, device=ad)).sum().backward()
        tg = torch.autograd.grad((want * torch.tensor(w)).sum(), tops)
        for o, t in zip(ours, tg):
            np.testing.assert_allclose(o.grad(g).numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_capture_and_onnx(tmp_path):
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        a, b = rt.tensor(A, device=scope.device), rt.tensor(B, device=scope.device)
        scope.complete(inputs=[a, b], outputs=[rt.einsum("bij,bjk->bki", a, b)])
    assert "matmul" in {o.op for o in scope.graph.operations}
    want = np.einsum("bij,bjk->bki", A, B)
    np.testing.assert_allclose(scope.graph.run(A, B)[0].numpy(), want, rtol=1e-12)
    (got,) = onnx_run(scope.graph, tmp_path / "einsum.onnx", A, B)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_error_messages():
    m = rt.tensor(M)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "einsum: 2 terms for 1 operands (subscripts 'ij,jk->ik')")):
        rt.einsum("ij,jk->ik", m)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "einsum: output subscript 'k' appears in no input term (subscripts 'ij->k')")):
        rt.einsum("ij->k", m)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "einsum: operand 0 has 2 dims but its term 'ijk' names 3 (subscripts 'ijk->')")):
        rt.einsum("ijk->", m)
    with pytest.raises(rt.ShapeError, match=re.escape(
            "einsum: subscript 'j' has size 3 in operand 1 but 4 elsewhere (shapes [(4, 4), "
            "(3, 4)], subscripts 'ij,jk->ik')")):
        rt.einsum("ij,jk->ik", m, rt.tensor(A[0]))
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "einsum: the output term 'ii' repeats a subscript")):
        rt.einsum("ij->ii", m)
    with pytest.raises(rt.ArgumentValueError, match="invalid subscript '1'"):
        rt.einsum("i1->i", m)
    with pytest.raises(rt.ArgumentTypeError, match="einsum: the first argument must be the "
                                                   "subscripts string"):
        rt.einsum(m, m)
    with pytest.raises(rt.ShapeError, match=re.escape(
            "einsum: repeated subscript 'i' has sizes 1 and 4 in one operand (shape (1, 4))")):
        rt.einsum("ii->i", rt.tensor(A[0, :1]))
