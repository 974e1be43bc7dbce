"""A second process reuses the generated-module cache: compiling and first-calling the same
graph compiles nothing (Numba fires no ``numba:compile`` event: every kernel is a cache hit),
and no new cache file is written.  Counted, not timed: timings depend on the machine."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import numpy as np, runtime as rt
from numba.core import event
compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
x = np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32)
g = rt.capture(lambda t: (rt.softmax(rt.tanh(t * 0.5) + 1.0, axis=-1), rt.relu(t - 0.5) * t), x)
rt.relu(rt.tensor(x))
exe = g.compile()
out = exe(x)
ref = g.run(x)
assert all(np.allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6) for a, b in zip(out, ref))
print(" ".join(sorted(set(compiled))) or "-")
print(len(compiled))
"""


def _files(d):
    return {p.relative_to(d) for p in Path(d).rglob("*") if p.is_file()}


def test_second_process_reuses_compiled_kernels(tmp_path):
    env = dict(os.environ, JIT_KERNELS_CACHE_DIR=str(tmp_path),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def run():
        out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.strip().splitlines()
        return int(out[-1]), out[-2]

    cold, _ = run()
    files = _files(tmp_path)
    assert any(str(f).startswith("_jkgen_fused_") for f in files)
    assert cold > 0  # the counter sees compiles (the empty cache dir forces the fused ones)
    warm, names = run()
    assert _files(tmp_path) == files, "the second process wrote new cache files"
    assert warm == 0, f"the second process compiled {warm} specialisations: {names}"


def test_programs_differing_only_in_rank_share_one_kernel_module():
    """The same elementwise chain on a vector and on a matrix are two fused programs (their
    keys name the ranks) but one generated source: one module, so one compile."""
    import numpy as np
    import runtime as rt
    from jit_kernels.cpu import fused

    def chain(t):
        return rt.relu(t * 0.25 - 1.5) * t

    mods = []
    for shape in ((12,), (3, 4)):
        x = np.arange(12, dtype=np.float64).reshape(shape)
        exe = rt.capture(chain, x).compile()
        np.testing.assert_allclose(exe(x)[0].numpy(), np.maximum(x * 0.25 - 1.5, 0) * x)
        keys = [k for k in fused._MODS if "|r%d|" % len(shape) in k[0] and "relu" in k[0]
                and "float64" in k[0]]
        mods.append({fused._MODS[k] for k in keys})
    assert mods[0] and mods[0] == mods[1]
