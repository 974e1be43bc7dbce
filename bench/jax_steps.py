"""``python -m bench.jax_steps [--rounds N]``: the MLP 784-256-10 training step compiled whole,
in the runtime and in JAX, each in a process of its own.

The runtime's step is ``bench.compile_step_cases``'s (``rt.compile`` of forward, cross
entropy, backward and the optimiser update; batch 128).  JAX's is what a JAX user writes: one
``jax.jit`` function of ``jax.value_and_grad`` of the same loss (log-softmax cross entropy,
mean over the batch) and the same update by hand (PyTorch's SGD with momentum 0.9; Adam with
its bias corrections from a step count passed in, so nothing recompiles), parameters and
optimiser state donated to it, the loss waited for on every call (``block_until_ready``; the
runtime's step returns when it is done).  Each column runs in a fresh process (two thread
pools in one process stall each other on two cores) and reports the median of
``bench.harness.compare``'s rounds.  Prints both times, the ratio JAX ÷ runtime (> 1: the
runtime is faster) and the host CPU; says so and exits when JAX is not installed (it is not a
dependency of the runtime or of its tests).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

BATCH = 128
OPTIMISERS = ("sgd", "adam")

CHILD = r'''
import json, sys
import numpy as np
from bench.harness import compare
which, opt, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(0)
x = rng.random((128, 784), dtype=np.float32)
y = rng.integers(0, 10, 128)
if which == "rt":
    from bench.compile_step_cases import _runtime_step
    step = _runtime_step("mlp", opt, compiled=True)
else:
    import jax
    import jax.numpy as jnp

    def init(shape, fan_in):
        bound = 1.0 / np.sqrt(fan_in)
        return jnp.asarray(rng.uniform(-bound, bound, shape).astype(np.float32))
    params = [init((784, 256), 784), init((256,), 784), init((256, 10), 256), init((10,), 256)]

    def loss_fn(p, xb, yb):
        h = jnp.maximum(xb @ p[0] + p[1], 0.0)
        logp = jax.nn.log_softmax(h @ p[2] + p[3])
        return -jnp.mean(jnp.take_along_axis(logp, yb[:, None], axis=1))

    if opt == "sgd":
        def update(p, state, g, t):
            (bufs,) = state
            bufs = [0.9 * b + gi for b, gi in zip(bufs, g)]
            return [pi - 1e-2 * b for pi, b in zip(p, bufs)], (bufs,)
        state = ([jnp.zeros_like(q) for q in params],)
    else:
        def update(p, state, g, t):
            m, v = state
            m = [0.9 * mi + 0.1 * gi for mi, gi in zip(m, g)]
            v = [0.999 * vi + 0.001 * gi * gi for vi, gi in zip(v, g)]
            c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
            p = [pi - 1e-3 * (mi / c1) / (jnp.sqrt(vi / c2) + 1e-8)
                 for pi, mi, vi in zip(p, m, v)]
            return p, (m, v)
        state = ([jnp.zeros_like(q) for q in params], [jnp.zeros_like(q) for q in params])

    def train_step(p, state, xb, yb, t):
        loss, g = jax.value_and_grad(loss_fn)(p, xb, yb)
        p, state = update(p, state, g, t)
        return p, state, loss

    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    xb, yb = jnp.asarray(x), jnp.asarray(y)
    box = [params, state, 0]

    def step():
        box[2] += 1
        box[0], box[1], loss = train_step(box[0], box[1], xb, yb, jnp.float32(box[2]))
        loss.block_until_ready()
t = compare({"step": step}, rounds=rounds)["step"]
print("RESULT " + json.dumps(t))
'''


def _child(which: str, opt: str, rounds: int) -> float:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", CHILD, which, opt, str(rounds)], env=env,
                       capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"python -m bench.jax_steps: the {which} {opt} step failed:\n"
                     f"{r.stderr[-3000:]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.jax_steps",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7, help="alternating rounds per process")
    args = p.parse_args(argv)
    try:
        import jax
    except ImportError:
        print("python -m bench.jax_steps: JAX is not installed (pip install jax)")
        return 0
    import llvmlite.binding as ll
    print(f"host CPU: {ll.get_host_cpu_name()}, {os.cpu_count()} cores; JAX {jax.__version__}; "
          f"each column in its own process")
    print("| step (MLP 784-256-10, batch 128) | runtime, rt.compile | JAX, jax.jit | JAX/rt |")
    print("| --- | --- | --- | --- |")
    for opt in OPTIMISERS:
        rt_t = _child("rt", opt, args.rounds)
        jax_t = _child("jax", opt, args.rounds)
        print(f"| {opt} | {rt_t * 1e3:.3f} ms | {jax_t * 1e3:.3f} ms | {jax_t / rt_t:.2f}× |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
