"""A second process reuses the generated-module cache: compiling and first-calling the same
graph costs (almost) no compile time, and no new cache file is written."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import time, numpy as np, runtime as rt
x = np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32)
g = rt.capture(lambda t: (rt.softmax(rt.tanh(t * 0.5) + 1.0, axis=-1), rt.relu(t - 0.5) * t), x)
rt.relu(rt.tensor(x))                    # warm numba itself (first njit call in a process)
t0 = time.perf_counter()
exe = g.compile()
out = exe(x)
dt = time.perf_counter() - t0
ref = g.run(x)
assert all(np.allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6) for a, b in zip(out, ref))
print(dt)
"""


def _files(d):
    return {p.relative_to(d) for p in Path(d).rglob("*") if p.is_file()}


def test_second_process_reuses_compiled_kernels(tmp_path):
    env = dict(os.environ, JIT_KERNELS_CACHE_DIR=str(tmp_path),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = lambda: float(subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT,  # noqa: E731
                                       check=True, capture_output=True, text=True)
                        .stdout.strip().splitlines()[-1])
    cold = run()
    files = _files(tmp_path)
    assert any(str(f).startswith("_jkgen_fused_") for f in files)
    warm = run()
    print(f"compile + first call: cold process {cold:.3f} s, second process {warm:.3f} s")
    assert _files(tmp_path) == files, "the second process compiled something again"
    assert warm < 0.25 * cold and warm < 1.0
