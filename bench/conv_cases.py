"""conv2d forward + backward against PyTorch CPU, for the ratio table (``python -m bench``) and
``python -m bench.conv_cases`` (times, GFLOP/s and the PyTorch ratio per layer).

Layers (float32, 3x3, padding 1, bias): the digits CNN's two convolutions (N=128, 8x8, 1->16
with an untracked image input, then 16->32) and an ImageNet-like layer (N=8, 64->64, 56x56).
A step is the forward and ``backward()`` from a ones seed (every gradient the layer's tracked
operands need).  FLOPs counted: 2*N*O*C*kh*kw*oh*ow per product, the forward plus one
product per gradient (weight, and input when tracked); the bias is not counted.
"""
from __future__ import annotations

import numpy as np

import runtime as rt

F = rt.nn.functional

# name, (N, C, O, H), input tracked
LAYERS = (
    ("conv digits 1->16 8x8 N=128", (128, 1, 16, 8), False),
    ("conv digits 16->32 8x8 N=128", (128, 16, 32, 8), True),
    ("conv 64->64 56x56 N=8", (8, 64, 64, 56), True),
)


def layer_data(shape, seed=0):
    n, c, o, h = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    w = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    return x, w, b


def flops(shape, input_tracked) -> float:
    n, c, o, h = shape
    one = 2.0 * n * o * c * 9 * h * h
    return one * (3 if input_tracked else 2)


def runtime_step(shape, input_tracked):
    ad = rt.autodiff(rt.cpu())
    x, w, b = layer_data(shape)
    xt = rt.tensor(x, device=ad)
    if input_tracked:
        xt = xt.require_grad()
    wt, bt = rt.tensor(w, device=ad).require_grad(), rt.tensor(b, device=ad).require_grad()

    def step():
        return F.conv2d(xt, wt, bt, padding=1).backward()
    return step


def torch_step(shape, input_tracked):
    try:
        import torch
    except ImportError:
        return None
    x, w, b = (torch.from_numpy(a) for a in layer_data(shape))
    x.requires_grad_(input_tracked)
    w.requires_grad_()
    b.requires_grad_()
    seed = torch.ones(shape[0], shape[2], shape[3], shape[3])

    def step():
        torch.nn.functional.conv2d(x, w, b, padding=1).backward(seed)
        for t in (x, w, b):
            t.grad = None
    return step


def cases():
    """Rows for ``python -m bench``: (name, runtime, numpy (none), torch)."""
    return [(name, runtime_step(shape, tracked), None, torch_step(shape, tracked))
            for name, shape, tracked in LAYERS]


def main() -> int:
    from jit_kernels import kernel_set_for
    from .harness import compare
    rows = cases()
    for _, f_rt, _, _ in rows:       # compile, and wait for background gemm builds
        f_rt()
    kernel_set_for("cpu").synchronize()
    print(f"{'layer (fwd+bwd)':<32}{'runtime':>10}{'GFLOP/s':>9}{'torch':>10}{'GFLOP/s':>9}"
          f"{'torch/rt':>10}")
    for (name, f_rt, _, f_t), (_, shape, tracked) in zip(rows, LAYERS):
        fns = {"rt": f_rt} if f_t is None else {"rt": f_rt, "torch": f_t}
        t = compare(fns, rounds=7, min_time=0.05)
        fl = flops(shape, tracked)
        tt = t.get("torch")
        torch_cols = (f"{tt * 1e3:8.2f}ms{fl / tt / 1e9:9.1f}{tt / t['rt']:9.2f}x" if tt
                      else f"{'-':>10}{'-':>9}{'-':>10}")
        print(f"{name:<32}{t['rt'] * 1e3:8.2f}ms{fl / t['rt'] / 1e9:9.1f}{torch_cols}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
