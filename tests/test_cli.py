"""The command line: ``python -m runtime`` subcommands print help instead of running, ``devices``
says why no GPU is listed, ``python -m bench --only`` rejects an unknown group by name."""
import os
import subprocess
import sys

import pytest

import runtime as rt
from runtime.__main__ import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("cmd", ["demo", "tour", "warmup", "devices"])
def test_subcommand_help_prints_usage_and_runs_nothing(cmd, capsys, monkeypatch):
    import runtime.demo
    import runtime.tour
    import runtime.warmup
    monkeypatch.setattr(runtime.demo, "run", lambda args: pytest.fail("demo ran"))
    monkeypatch.setattr(runtime.tour, "main", lambda argv=None: pytest.fail("tour ran"))
    monkeypatch.setattr(runtime.warmup, "main", lambda argv=None: pytest.fail("warmup ran"))
    with pytest.raises(SystemExit) as e:
        main([cmd, "--help"])
    assert e.value.code == 0
    assert f"usage: python -m runtime {cmd}" in capsys.readouterr().out


def test_no_subcommand_prints_help_and_fails(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    assert "usage: python -m runtime" in out and "warmup" in out and "demo" in out


def test_unknown_subcommand_is_an_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["nosuch"])
    assert e.value.code == 2
    assert "invalid choice: 'nosuch'" in capsys.readouterr().err


def test_devices_lists_cpu_and_says_why_no_gpu(capsys):
    assert main(["devices"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "cpu"
    why = rt.cuda_unavailable_reason()
    if len(rt.devices()) == 1:
        assert why is not None and lines[-1] == f"(no cuda device: {why})"
    else:
        assert why is None and lines[1] == "cuda:0"


def test_cuda_reason_names_missing_numba_cuda(monkeypatch):
    device = sys.modules["runtime.device"]      # (rt.device is the function of that name)

    def missing(kind):
        raise ImportError("No module named 'numba_cuda'")
    monkeypatch.setattr(device, "_kernels_for_kind", missing)
    assert rt.cuda_unavailable_reason() == (
        "numba-cuda is not installed (pip install '.[cuda]'): No module named 'numba_cuda'")


def test_bench_unknown_group_names_the_groups():
    r = subprocess.run([sys.executable, "-m", "bench", "--only", "nosuch"], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert "python -m bench: no group 'nosuch'; the groups are" in r.stderr
    assert "matmul" in r.stderr and "Traceback" not in r.stderr


def test_bench_core_rows_are_in_the_core_groups():
    """Every core row's group is one ``--only`` accepts (the start-up row, built only without
    ``--quick``, once was not, and ``python -m bench`` stopped on its check)."""
    from bench.cases import CORE_GROUPS, core_cases
    groups = {r[0] for r in core_cases(quick=True, startup=True)}
    assert "start-up" in groups and groups <= set(CORE_GROUPS)


def test_bench_isolate_runs_each_column_in_its_own_process_and_merges_the_rows(monkeypatch, capsys):
    """``--isolate`` asks one child per (group, column) for that column's times and joins them
    by row name; a failing child stops the table with its command and stderr."""
    import json
    import types

    import bench.__main__ as bm
    calls = []

    def fake_run(cmd, capture_output, text):
        calls.append(cmd)
        col = cmd[cmd.index("--column") + 1]
        rows = {"rt": [["a", 1e-3], ["b", 2e-3]], "np": [["a", 2e-3], ["b", 1e-3]],
                "torch": [["a", None], ["b", 4e-3]]}[col]
        return types.SimpleNamespace(returncode=0, stdout="noise\n" + json.dumps(rows), stderr="")
    monkeypatch.setattr(bm.subprocess, "run", fake_run)
    assert bm.main(["--only", "sort", "--isolate", "--quick"]) == 0
    assert [c[c.index("--column") + 1] for c in calls] == ["rt", "np", "torch"]
    assert all(c[1:4] == ["-m", "bench", "--only"] and "--json" in c and "--quick" in c for c in calls)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "each column in its own process (--isolate)"
    a, b = (next(line for line in out if line.startswith(f"sort           {n} ")) for n in "ab")
    assert a.split()[-2:] == ["2.00×", "-"] and b.split()[-2:] == ["0.50×", "2.00×"]

    monkeypatch.setattr(bm.subprocess, "run", lambda cmd, capture_output, text: types.SimpleNamespace(
        returncode=1, stdout="", stderr="Traceback: boom"))
    with pytest.raises(SystemExit, match="--only sort --column rt --json.*failed:\nTraceback: boom"):
        bm.main(["--only", "sort", "--isolate", "--quick"])
