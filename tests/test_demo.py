"""``python -m runtime demo`` end to end (needs the demo extra; skipped without it): the CNN
reaches 97% on the held-out digits, the PNGs, checkpoint and ONNX file are written, and eager,
replay, compiled and onnxruntime agree (the demo's own checks, which set its exit status)."""
import argparse
import os

import pytest

for mod in ("sklearn", "matplotlib", "tqdm", "safetensors", "onnx", "onnxruntime"):
    pytest.importorskip(mod)


def test_demo_trains_checks_and_writes_its_files(tmp_path, capsys):
    from runtime import demo
    args = argparse.Namespace(out=str(tmp_path), epochs=demo.EPOCHS, no_progress=True)
    assert demo.run(args) == 0
    out = capsys.readouterr().out
    assert "all checks passed" in out
    acc = float(out.split("test accuracy: ")[1].split()[0])
    assert acc >= demo.MIN_ACCURACY
    for name in ("digits_cnn_curves.png", "digits_cnn_predictions.png", "digits_cnn.safetensors",
                 "digits_cnn.onnx"):
        assert os.path.getsize(tmp_path / name) > 0, name
    assert "reloaded model bit-identical: True" in out


def test_the_split_is_fixed():
    from runtime import demo
    a = demo.load_data()
    b = demo.load_data()
    assert a[0].shape == (1437, 1, 8, 8) and a[2].shape == (360, 1, 8, 8)
    assert (a[1] == b[1]).all() and (a[3] == b[3]).all()
