"""``python -m runtime demo``: train a small CNN on real handwritten digits, then ship it.

1. data: the 1,797 8×8 digits scikit-learn ships (no download), a fixed 80/20 split;
2. training: conv-relu-pool ×2 then linear, Adam with a one-cycle schedule, a progress bar with
   the loss and accuracy, on ``rt.autodiff(rt.cpu())``, the whole step (forward, backward,
   Adam) compiled with ``rt.compile`` (``--eager``: step by step);
3. evaluation: test accuracy (the demo fails below 97%), PNGs of the curves and of test digits
   with their predictions;
4. the checkpoint: ``rt.save`` of the state dict, loaded into a fresh model: bit-identical outputs;
5. the inference graph: captured, replayed, compiled and exported to ONNX; eager, replay,
   compiled and onnxruntime must agree;
6. a summary table with timings (the training step eager and compiled among them).

Needs the ``demo`` extra (scikit-learn, matplotlib, tqdm, safetensors, onnx, onnxruntime).
"""
from __future__ import annotations

import argparse
import copy
import functools
import os
import time

import numpy as np

import runtime as rt
import runtime.nn as nn
import runtime.nn.functional as F
from runtime.tour import _time as _best       # best of 5 after a warm-up call

EPOCHS = 15
BATCH = 128
MIN_ACCURACY = 0.97


def _require(*mods):
    """Refuse to start without ``mods``: found, not imported (importing scikit-learn, onnx and
    matplotlib up front cost a warm demo about half its run)."""
    import importlib.util
    missing = [m for m in mods if importlib.util.find_spec(m) is None]
    if missing:
        raise SystemExit(f"python -m runtime demo needs {', '.join(missing)}: "
                         f"pip install 'numba-tensor-runtime[demo]' (or pip install '.[demo]')")


class DigitsCNN(nn.Module):
    """conv(1→16) relu pool, conv(16→32) relu pool, linear(128→10) on 8×8 images."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        return self.classifier(rt.flatten(self.features(x), 1))


def _digits():
    """(images (1797, 8, 8) float64, labels): scikit-learn's bundled digits, read from its csv
    file as ``load_digits`` reads it (the same values) but without importing scikit-learn,
    which takes longer than the demo's warm training; through ``load_digits`` where the file
    is not in that place."""
    import gzip
    import importlib.util
    spec = importlib.util.find_spec("sklearn")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, "datasets", "data", "digits.csv.gz")
        if os.path.isfile(path):
            with gzip.open(path, "rt") as f:
                data = np.loadtxt(f, delimiter=",")
            if data.shape == (1797, 65):
                return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(np.int64)
    from sklearn.datasets import load_digits
    d = load_digits()
    return d.images, d.target


def load_data(seed: int = 0):
    """(x_train, y_train, x_test, y_test): images (N, 1, 8, 8) float32 in [0, 1], int64 labels;
    a fixed permutation by ``seed`` splits 80/20."""
    images, target = _digits()
    x = (images.astype(np.float32) / 16.0)[:, None, :, :]
    y = target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_train = int(0.8 * len(y))
    tr, te = order[:n_train], order[n_train:]
    return x[tr], y[tr], x[te], y[te]


def _step_fn(model, opt, compiled: bool):
    """The training step: forward, cross entropy, backward, Adam; returns (loss, correct
    predictions) as tensors.  ``compiled``: the whole step as one graph (``rt.compile``)."""
    def step(xb, yb):
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        opt.step(loss.backward())
        return loss, rt.sum(rt.argmax(logits, axis=1) == yb)
    return rt.compile(step) if compiled else step


def _epoch(step, loader, sched, ad, bar, epoch):
    """One pass over ``loader``: a training step and a schedule step per batch; returns
    (summed loss, correct predictions, samples) of this process's batches."""
    total, correct, loss_sum = 0, 0, 0.0
    for xb, yb in loader:
        loss, right = step(xb.to(ad), yb.to(ad))
        sched.step()
        n = yb.shape[0]
        loss_sum += loss.item() * n
        correct += int(right.item())
        total += n
        bar.set_postfix(epoch=epoch + 1, loss=f"{loss_sum / total:.4f}", acc=f"{correct / total:.3f}")
        bar.update(1)
    return loss_sum, correct, total


def train(model, x_train, y_train, epochs=EPOCHS, progress=True, compiled=True):
    """Train ``model`` (on an autodiff device) with Adam and a one-cycle schedule, the step
    compiled with ``rt.compile`` unless ``compiled=False``; returns the per-epoch (loss,
    accuracy) history and the seconds spent."""
    from tqdm import tqdm
    ad = model.classifier.weight.device
    loader = rt.data.DataLoader(rt.data.TensorDataset(x_train, y_train), batch_size=BATCH,
                                shuffle=True, generator=0)
    opt = rt.optim.Adam(model.parameters(), lr=1e-2)
    sched = rt.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-2, total_steps=epochs * len(loader))
    step = _step_fn(model, opt, compiled)
    history = []
    t0 = time.perf_counter()
    bar = tqdm(total=epochs * len(loader), desc="training", unit="step", disable=not progress,
               dynamic_ncols=True)
    for epoch in range(epochs):
        loss_sum, correct, total = _epoch(step, loader, sched, ad, bar, epoch)
        history.append((loss_sum / total, correct / total))
    bar.close()
    return history, time.perf_counter() - t0


def step_times(model, x_train, y_train) -> list:
    """(label, seconds) of one training step of a batch of ``BATCH``, eager and compiled, on a
    copy of ``model`` with its own optimiser (the trained model is left as it is)."""
    rows = []
    ad = model.classifier.weight.device
    xb = rt.tensor(x_train[:BATCH]).to(ad)
    yb = rt.tensor(y_train[:BATCH]).to(ad)
    for label, compiled in (("train step, eager", False), ("train step, compiled", True)):
        m = DigitsCNN()
        m.load_state_dict(model.state_dict())
        m.to(ad)
        step = _step_fn(m, rt.optim.Adam(m.parameters(), lr=1e-3), compiled)
        step(xb, yb)                      # (a compiled step traces its first two calls)
        rows.append((label, _best(functools.partial(step, xb, yb))))
    return rows


def train_distributed(model, x_train, y_train, epochs=EPOCHS, progress=True):
    """``train`` on every rank of the MPI world (``mpiexec -n N python -m runtime demo
    --distributed``): ``DistributedDataParallel`` averages the gradients, a
    ``DistributedSampler`` gives each rank its shard (reshuffled per epoch) and each rank takes
    ``BATCH // N`` samples a step, so a step sees the single-process batch of ``BATCH`` and the
    schedule is the same.  Returns the history (over all ranks) and the seconds spent."""
    from tqdm import tqdm
    D = rt.distributed
    n, rank = D.world_size(), D.rank()
    ad = model.classifier.weight.device
    ddp = D.DistributedDataParallel(model)
    sampler = D.DistributedSampler(x_train, shuffle=True, seed=0)
    loader = rt.data.DataLoader(rt.data.TensorDataset(x_train, y_train), batch_size=max(1, BATCH // n),
                                sampler=sampler)
    opt = rt.optim.Adam(ddp.parameters(), lr=1e-2)
    sched = rt.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-2, total_steps=epochs * len(loader))
    history = []
    D.barrier()
    t0 = time.perf_counter()
    bar = tqdm(total=epochs * len(loader), desc=f"training ({n} ranks)", unit="step",
               disable=not progress or rank != 0, dynamic_ncols=True)
    step = _step_fn(ddp, opt, compiled=False)   # (the gradients' all-reduce runs in backward)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        loss_sum, correct, total = _epoch(step, loader, sched, ad, bar, epoch)
        s = D.all_reduce(rt.tensor(np.array([loss_sum, correct, total], np.float64))).numpy()
        history.append((s[0] / s[2], s[1] / s[2]))
    bar.close()
    D.barrier()
    return history, time.perf_counter() - t0


def predict(model, x) -> np.ndarray:
    out = model(rt.tensor(x).to(model.classifier.weight.device))
    return (out.inner() if out.device.family == "autodiff" else out).numpy()


def plots(history, test_acc, x_test, y_test, pred, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    epochs = np.arange(1, len(history) + 1)
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
    ax[0].plot(epochs, [h[0] for h in history], marker="o")
    ax[0].set(title="training loss", xlabel="epoch", ylabel="cross entropy")
    ax[1].plot(epochs, [h[1] for h in history], marker="o", label="train")
    ax[1].axhline(test_acc, color="C1", linestyle="--", label=f"test {test_acc:.3f}")
    ax[1].set(title="accuracy", xlabel="epoch", ylim=(0, 1.01))
    ax[1].legend()
    fig.tight_layout()
    curves = os.path.join(out_dir, "digits_cnn_curves.png")
    fig.savefig(curves, dpi=100)
    plt.close(fig)
    # one axes holding a 2 x 8 montage: sixteen axes of their own took a second to lay out
    fig, ax = plt.subplots(figsize=(9, 2.8))
    montage = np.zeros((2 * 11, 8 * 11))     # (white under gray_r)
    for i in range(16):
        r, c = divmod(i, 8)
        montage[r * 11 + 3:r * 11 + 11, c * 11 + 1:c * 11 + 9] = x_test[i, 0]
        ok = pred[i] == y_test[i]
        ax.text(c * 11 + 5, r * 11 + 1.5, f"{pred[i]}" + ("" if ok else f" ({y_test[i]})"),
                ha="center", va="center", color="k" if ok else "r", fontsize=10)
    ax.imshow(montage, cmap="gray_r", vmin=0.0, vmax=1.0)
    ax.axis("off")
    ax.set_title("test digits: prediction (true label when wrong)")
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.9)
    digits = os.path.join(out_dir, "digits_cnn_predictions.png")
    fig.savefig(digits, dpi=100)
    plt.close(fig)
    return curves, digits


def ship(model, x_test, out_dir):
    """Checkpoint round trip, then capture / replay / compile / ONNX of inference; returns
    (all agree, timing rows, file paths)."""
    plain = DigitsCNN()
    plain.load_state_dict(model.state_dict())     # the trained values, off the autodiff device
    plain.eval()
    eager = predict(plain, x_test)
    ckpt = os.path.join(out_dir, "digits_cnn.safetensors")
    rt.save(plain.state_dict(), ckpt)
    fresh = DigitsCNN()
    fresh.load_state_dict(rt.load(ckpt))
    fresh.eval()
    same_ckpt = np.array_equal(predict(fresh, x_test), eager)
    print(f"checkpoint: {ckpt} ({os.path.getsize(ckpt)} bytes); reloaded model bit-identical: {same_ckpt}")

    def infer(x):
        m = copy.deepcopy(plain).to(x.device)       # its parameters: the graph's constants
        return m(x)
    graph = rt.capture(infer, rt.tensor(x_test))
    (replayed,) = graph.run(x_test)
    compiled = graph.compile(rt.cpu())
    (comp,) = compiled(x_test)
    onnx_path = os.path.join(out_dir, "digits_cnn.onnx")
    graph.to_onnx(onnx_path)
    import onnxruntime as ort
    opts = ort.SessionOptions()
    # its worker threads otherwise spin after each run and take the cores from the rows
    # timed next (eager inference right after an onnxruntime call would be the slower for it)
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
    (onnx_out,) = sess.run(None, {sess.get_inputs()[0].name: x_test})
    agree = {"replay": np.allclose(replayed.numpy(), eager, rtol=1e-5, atol=1e-5),
             "compiled": np.allclose(comp.numpy(), eager, rtol=1e-4, atol=1e-4),
             "onnxruntime": np.allclose(onnx_out, eager, rtol=1e-4, atol=1e-4)}
    print(f"graph: {len(graph.operations)} ops captured; {compiled.explain().splitlines()[0]}")
    for k, v in agree.items():
        print(f"  {k:<12} == eager: {v}")
    xt = rt.tensor(x_test)
    rows = [("eager inference", _best(lambda: plain(xt))),
            ("replayed graph", _best(lambda: graph.run(xt))),
            ("compiled graph", _best(lambda: compiled(xt))),
            ("onnxruntime", _best(lambda: sess.run(None, {sess.get_inputs()[0].name: x_test})))]
    return same_ckpt and all(agree.values()), rows, (ckpt, onnx_path)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The demo's options (also on ``python -m runtime demo``'s parser)."""
    p.add_argument("--out", default="demo-output",
                   help="directory for the PNGs, the checkpoint and the ONNX file (default: demo-output)")
    p.add_argument("--epochs", type=int, default=EPOCHS, help=f"training epochs (default: {EPOCHS})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--eager", action="store_true",
                   help="train with the eager step instead of the rt.compile'd one")
    p.add_argument("--distributed", action="store_true",
                   help="train data-parallel on the MPI world: mpiexec -n 2 python -m runtime demo "
                   "--distributed (needs the distributed extra); rank 0 evaluates and ships")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m runtime demo", description=__doc__.split("\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))


def run(args) -> int:
    _require("sklearn", "matplotlib", "tqdm", "safetensors", "onnx", "onnxruntime")
    distributed = getattr(args, "distributed", False)
    rank, n_ranks = 0, 1
    if distributed:
        rt.distributed.init()
        rank, n_ranks = rt.distributed.rank(), rt.distributed.world_size()
    say = print if rank == 0 else (lambda *a, **k: None)
    t_start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    x_train, y_train, x_test, y_test = load_data()
    say(f"digits: {len(y_train)} training and {len(y_test)} test images of 8×8 "
        f"(scikit-learn's bundled copy of the UCI handwritten digits)")
    rt.manual_seed(0)
    model = DigitsCNN().to(rt.autodiff(rt.cpu()))
    say(model)
    if distributed:
        say(f"data-parallel on {n_ranks} rank(s): {rt.distributed.info()['mpi_library']}")
        history, t_train = train_distributed(model, x_train, y_train, args.epochs, not args.no_progress)
    else:
        history, t_train = train(model, x_train, y_train, args.epochs, not args.no_progress,
                                 compiled=not getattr(args, "eager", False))
    model.eval()
    pred = predict(model, x_test).argmax(axis=1)
    test_acc = float((pred == y_test).mean())
    samples = args.epochs * len(y_train)
    say(f"test accuracy: {test_acc:.4f} ({int((pred == y_test).sum())}/{len(y_test)}); "
        f"training took {t_train:.1f} s ({samples / t_train:.0f} samples/s)")
    if rank != 0:                                # rank 0 plots, checkpoints and exports
        return 0 if test_acc >= MIN_ACCURACY else 1
    curves, digits = plots(history, test_acc, x_test, y_test, pred, args.out)
    print(f"plots: {curves}, {digits}")
    rows = [] if distributed else step_times(model, x_train, y_train)
    agree, ship_rows, _ = ship(model, x_test, args.out)
    rows += ship_rows
    steps = args.epochs * -(-len(y_train) // BATCH)
    print("\nsummary (cpu: " + _cpu_name() + ")")
    print(f"  {'training':<20} {t_train:8.2f} s   ({t_train / steps * 1e3:.1f} ms per step of {BATCH}"
          + (f" over {n_ranks} ranks" if distributed else "") + f"; {samples / t_train:.0f} samples/s)")
    for label, t in rows:
        what = f"batch of {BATCH}" if label.startswith("train step") else f"{len(y_test)} images"
        print(f"  {label:<20} {t * 1e3:8.2f} ms  ({what})")
    print(f"  {'test accuracy':<20} {test_acc:8.4f}")
    ok = test_acc >= MIN_ACCURACY and agree
    total = time.perf_counter() - t_start
    print(f"\ndemo finished in {total:.1f} s: {'all checks passed' if ok else 'CHECK FAILED'}")
    return 0 if ok else 1


def _cpu_name() -> str:
    try:
        import llvmlite.binding as llvm
        return llvm.get_host_cpu_name()
    except Exception:  # the name is only for the table
        return "unknown"
