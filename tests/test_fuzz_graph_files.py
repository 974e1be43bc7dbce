"""Saved graph files, damaged on purpose: bit flips, truncations, insertions, and
header edits re-signed with a valid checksum (tests/fuzz_graph_files.py has the mutations and
the check).  CI runs a quick seeded batch in-process (10 mutations per hypothesis example of the
profile: 150 under ``ci``); the nightly run is ``python -m tests.fuzz_nightly files --n 5000``
(child processes: a segfault is a recorded crash, see CONTRIBUTING.md, Development)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import settings

import fuzz_graph_files as F
import runtime as rt


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    return F.saved_graphs(tmp_path_factory.mktemp("orig"))


def test_the_originals_load_and_run(originals, tmp_path):
    p = tmp_path / "g.rtg"
    for name, data in originals:
        p.write_bytes(data)
        # compile builds fused kernels of its own (seconds each, cold): only the graphs without
        # fused elementwise groups here; the nightly run compiles every graph that loads
        assert F.check_mutant(p, compile=name in ("_scatter", "_gather")) == "ran", name
        header, body = F.split(data)
        p.write_bytes(F.sign(F._dump(header), body))        # re-signing alone changes nothing
        assert F.check_mutant(p, compile=False) == "ran", name


def test_a_broken_promise_is_a_failure(originals, tmp_path, monkeypatch):
    """The check can fail: a graph whose replay returns a wrong-shaped result is reported."""
    p = tmp_path / "g.rtg"
    p.write_bytes(dict(originals)["_gather"])
    real = rt.load_graph

    def lying(path):
        g = real(path)
        g.run = lambda *xs: [rt.tensor(np.zeros((1, 1), np.float32))]
        return g
    monkeypatch.setattr(rt, "load_graph", lying)
    with pytest.raises(F.Failure, match=r"run: \.shape \(1, 1\)"):
        F.check_mutant(p, compile=False)


def test_mutated_files_never_crash():
    n = 10 * settings().max_examples
    # replay only (compile_every=0: no fused kernels to build in CI); raises Failure
    c = F.run_mutations(n, seed=20261201, compile_every=0)
    assert c["mutations"] == n and c["failures"] == 0
    assert c["load-error"] and c["ran"]                     # both sides of the check were reached


def test_the_nightly_driver_isolates_each_shard(tmp_path):
    log = tmp_path / "files.log"
    p = subprocess.run([sys.executable, "-m", "tests.fuzz_nightly", "files", "--n", "6",
                        "--shards", "2", "--log", str(log), "--every", "3",
                        "--compile-every", "0"],
                       capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(__file__)),
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    total = json.loads(p.stdout.strip().split("TOTAL: ")[1].split(" (")[0])
    assert total["mutations"] == 6 and total["crashes"] == 0 and total["failures"] == 0
    assert log.read_text().count("progress:") == 2


# ---- what the mutation fuzz found (each was a raw exception) ---------------------------------
def _resigned(tmp_path, data, edit):
    header, body = F.split(data)
    edit(header)
    p = tmp_path / "m.rtg"
    p.write_bytes(F.sign(F._dump(header), body))
    return p


def _first_op(name):
    return lambda h: next(o for o in h["operations"] if o["op"] == name)


@pytest.mark.parametrize("graph, edit, error, match", [
    # a dtype name NumPy parses as Python: was SyntaxError from np.dtype("float32,")
    ("_gather", lambda h: h["tensors"][0].__setitem__(2, "float32,"), rt.GraphFileError,
     r"malformed header \(DTypeError: unsupported dtype 'float32,'"),
    # flag and axis attrs of the wrong type: were TypeErrors in the kernels at run
    ("_reduce", lambda h: _first_op("sum")(h)["attrs"].__setitem__("keepdims", {"tuple": [[1]]}),
     rt.CaptureError, r"operation \d+ \('sum'\) has a malformed attr 'keepdims' \(\(\[1\],\)\)"),
    ("_scatter", lambda h: _first_op("scatter_add")(h)["attrs"].__setitem__(
        "axis", {"slice": [None, 2, None]}), rt.CaptureError,
     r"operation \d+ \('scatter_add'\) has a malformed attr 'axis' \(slice\(None, 2, None\)\)"),
    # a declared tensor of more elements than any tensor can have: refused at load (was loaded,
    # then an OutOfMemoryError at run at best)
    ("_gather", lambda h: h["tensors"][0].__setitem__(1, [2 ** 40, 2 ** 40]), rt.CaptureError,
     r"invalid graph: tensor 1 is declared as TensorIr\(id=1, shape=\(1099511627776, 1099511627776\)"),
])
def test_mutations_that_were_raw_errors(originals, tmp_path, graph, edit, error, match):
    p = _resigned(tmp_path, dict(originals)[graph], edit)
    with pytest.raises(error, match=match) as e:
        rt.load_graph(p)
    assert e.value.kind in ("BadGraphFile", "InvalidGraph")
    assert F.check_mutant(p) == "load-error"
