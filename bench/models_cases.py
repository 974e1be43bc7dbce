"""Model workloads for the ratio table (``python -m bench --only models``):

- a one-layer LSTM (input 256, hidden 256), sequence 64, batch 32, float32, forward and
  backward (loss: the sum of the outputs; every parameter's gradient) on
  ``rt.autodiff(rt.cpu())``: ``rt.nn.LSTM`` eager, and the same step under ``rt.compile``,
  each against ``torch.nn.LSTM`` with the same weights (its state dict loaded);
- ``rt.linalg.solve`` of 64 systems of 64×64 (one right-hand side each), float32 and float64,
  against ``torch.linalg.solve`` and ``np.linalg.solve``.

The first call of every row (tracing and building kernels) is made before timing;
``python -m bench.models_cases`` prints the first-call times of a fresh process and checks the
LSTM rows' losses and gradients (compiled against eager, eager against PyTorch).
"""
from __future__ import annotations

import time

import numpy as np

import runtime as rt

SEQ, BATCH, INPUT, HIDDEN = 64, 32, 256, 256
SYSTEMS, N = 64, 64

#: seconds taken by the first call of each row built so far (row name -> column -> seconds)
FIRST_CALLS: dict = {}


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _first(row, column, fn):
    """``fn`` after one timed call (recorded in ``FIRST_CALLS``); the call's result too."""
    t0 = time.perf_counter()
    out = fn()
    FIRST_CALLS.setdefault(row, {})[column] = time.perf_counter() - t0
    return fn, out


# --------------------------------------------------------------------------- LSTM
def _lstm_input():
    return np.random.default_rng(0).standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)


def _runtime_lstm():
    """(the LSTM on the autodiff device, its input, ``step(x) -> (loss, gradients)``)."""
    ad = rt.autodiff(rt.cpu())
    rt.manual_seed(0)
    model = rt.nn.LSTM(INPUT, HIDDEN).to(ad)
    params = list(model.parameters())

    def step(xb):
        out, _ = model(xb)
        loss = rt.sum(out)
        grads = loss.backward()
        return loss, tuple(p.grad(grads) for p in params)
    return model, rt.tensor(_lstm_input()).to(ad), step


def _lstm_row(row, compiled):
    _, xt, step = _runtime_lstm()
    fn = rt.compile(step) if compiled else step
    return _first(row, "rt", lambda: fn(xt))


def _torch_lstm(row):
    torch = _torch()
    if torch is None:
        return None, None
    model, _, _ = _runtime_lstm()
    m = torch.nn.LSTM(INPUT, HIDDEN)
    m.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                       for k, v in model.state_dict().items()})
    tx = torch.from_numpy(_lstm_input())

    def step():
        m.zero_grad(set_to_none=True)
        out, _ = m(tx)
        loss = out.sum()
        loss.backward()
        return loss, tuple(p.grad for p in m.parameters())
    return _first(row, "torch", step)


# --------------------------------------------------------------------------- solve
def _systems(dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((SYSTEMS, N, N)) + N * np.eye(N)    # well conditioned
    b = rng.standard_normal((SYSTEMS, N, 1))
    return a.astype(dtype), b.astype(dtype)


def _solve_rows(row, dtype):
    a, b = _systems(dtype)
    ra, rb = rt.tensor(a), rt.tensor(b)
    f_rt = _first(row, "rt", lambda: rt.linalg.solve(ra, rb))[0]
    f_np = _first(row, "np", lambda: np.linalg.solve(a, b))[0]
    torch = _torch()
    f_t = None
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        f_t = _first(row, "torch", lambda: torch.linalg.solve(ta, tb))[0]
    return f_rt, f_np, f_t


EAGER = f"lstm {INPUT}-{HIDDEN} T{SEQ} b{BATCH} fwd+bwd, eager"
COMPILED = f"lstm {INPUT}-{HIDDEN} T{SEQ} b{BATCH} fwd+bwd, compiled"


def cases():
    """Rows for ``python -m bench``."""
    rows = []
    torch_lstm = _torch_lstm(EAGER)[0]
    for name, compiled in ((EAGER, False), (COMPILED, True)):
        rows.append((name, _lstm_row(name, compiled)[0], None, torch_lstm))
    for dtype in (np.float32, np.float64):
        name = f"linalg.solve {SYSTEMS}×{N}² {np.dtype(dtype).name}"
        rows.append((name, *_solve_rows(name, dtype)))
    return rows


def _max_rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def main() -> int:
    """First-call times of a fresh process and the LSTM rows' agreement."""
    _, eager = _lstm_row(EAGER, False)
    _, compiled = _lstm_row(COMPILED, True)
    _, ref = _torch_lstm(EAGER)
    for dtype in (np.float32, np.float64):
        _solve_rows(f"linalg.solve {SYSTEMS}×{N}² {np.dtype(dtype).name}", dtype)
    print(f"{'workload':<45}{'column':<8}{'first call':>12}")
    for row, cols in FIRST_CALLS.items():
        for col, t in cols.items():
            print(f"{row:<45}{col:<8}{t:>10.3f} s")
    names = [n for n, _ in _runtime_lstm()[0].named_parameters()]
    print("LSTM loss: eager", float(eager[0].numpy()), "compiled", float(compiled[0].numpy()),
          "torch" if ref else "", float(ref[0].detach()) if ref else "")
    worst = 0.0
    for i, n in enumerate(names):
        ge, gc = eager[1][i].numpy(), compiled[1][i].numpy()
        line = f"  d/d {n}: compiled vs eager {_max_rel(gc, ge):.2e}"
        worst = max(worst, _max_rel(gc, ge))
        if ref:
            line += f", eager vs torch {_max_rel(ge, ref[1][i].numpy()):.2e}"
        print(line + " (max |difference| / max |reference|)")
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    raise SystemExit(main())
