"""rt.save / rt.load: safetensors checkpoints, a fresh-process round trip and untrusted files."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import runtime as rt
import runtime.nn as nn
from runtime.errors import CheckpointError

pytest.importorskip("safetensors")


def _model():
    rt.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))


def test_nested_round_trip_keeps_values_types_and_structure(tmp_path):
    m = _model()
    opt = rt.optim.Adam(m.parameters(), lr=0.01)
    obj = {"model": m.state_dict(), "opt": opt.state_dict(), "epoch": 3, "note": "x", "best": float("inf"),
           "flags": (True, None), 7: [rt.tensor([1, 2], dtype=rt.int32), rt.tensor([True, False])]}
    rt.save(obj, tmp_path / "ck.safetensors")
    back = rt.load(tmp_path / "ck.safetensors")
    assert back["epoch"] == 3 and back["note"] == "x" and back["best"] == float("inf")
    assert back["flags"] == (True, None) and back["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert back[7][0].dtype == rt.int32 and back[7][1].numpy().tolist() == [True, False]
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(back["model"][k].numpy(), v.numpy())
    t = rt.randn(2, 3, dtype=rt.float64)
    rt.save(t, tmp_path / "t.safetensors")
    np.testing.assert_array_equal(rt.load(tmp_path / "t.safetensors").numpy(), t.numpy())


def test_a_model_reloaded_in_a_fresh_process_gives_bit_identical_outputs(tmp_path):
    m = _model().to(rt.autodiff(rt.cpu()))
    x = np.random.default_rng(0).normal(size=(4, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    rt.save(m.state_dict(), tmp_path / "m.safetensors")
    expected = m(rt.tensor(x).to(rt.autodiff(rt.cpu()))).inner().numpy()
    code = textwrap.dedent(f"""
        import numpy as np, runtime as rt, runtime.nn as nn
        m = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
        m.load_state_dict(rt.load({str(tmp_path / 'm.safetensors')!r}))
        np.save({str(tmp_path / 'y.npy')!r}, m(rt.tensor(np.load({str(tmp_path / 'x.npy')!r}))).numpy())
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.getcwd())
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), expected)


def _edit_header(path, fn):
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    fn(header)
    h = json.dumps(header).encode()
    path.write_bytes(len(h).to_bytes(8, "little") + h + raw[8 + n:])


def test_untrusted_files_raise_checkpoint_error(tmp_path):
    p = tmp_path / "ck.safetensors"
    with pytest.raises(CheckpointError, match="rt.load: no such file"):
        rt.load(tmp_path / "missing")
    p.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="is not a readable checkpoint: SafetensorError"):
        rt.load(p)
    rt.save({"w": rt.ones(3)}, p)
    p.write_bytes(p.read_bytes()[:-4])                               # truncated data
    with pytest.raises(CheckpointError, match="is not a readable checkpoint"):
        rt.load(p)
    from safetensors.numpy import save_file
    save_file({"w": np.ones(2, np.float32)}, str(p))
    with pytest.raises(CheckpointError, match="without the runtime's structure metadata"):
        rt.load(p)
    save_file({"w": np.ones(2, np.uint16)}, str(p), metadata={"numba-tensor-runtime": json.dumps(
        {"format": 1, "tree": {"dict": [["w", {"tensor": "w"}]]}})})
    with pytest.raises(CheckpointError, match="tensor 'w' has dtype uint16, which the runtime does not support"):
        rt.load(p)
    for tree, why in [({"tensor": "nope"}, "names a tensor 'nope' the file does not hold"),
                      ({"dict": [["a"]]}, "bad dict item"),
                      ({"pickle": "x"}, "unknown structure entry 'pickle'"),
                      ([1, 2], "malformed structure entry")]:
        rt.save({"w": rt.ones(2)}, p)
        _edit_header(p, lambda h, tree=tree: h["__metadata__"].update(
            {"numba-tensor-runtime": json.dumps({"format": 1, "tree": tree})}))
        with pytest.raises(CheckpointError, match=why):
            rt.load(p)


def test_save_refuses_what_it_cannot_store(tmp_path):
    with pytest.raises(rt.errors.ArgumentTypeError, match="rt.save: cannot store a set"):
        rt.save({"s": {1, 2}}, tmp_path / "x")
    with pytest.raises(rt.errors.ArgumentTypeError, match="rt.save: dict keys must be str or int, got tuple"):
        rt.save({(1, 2): rt.ones(1)}, tmp_path / "x")
