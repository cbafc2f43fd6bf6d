"""DP-SGD images per second through the engine against a bare Opacus loop
(``python -m benchmarks.engine_dpsgd`` prints the JSON; :func:`measure` returns it).

- **engine**: :func:`core.defenses.dpsgd.train_dpsgd`, i.e. :func:`core.engine.loop.fit` with
  the :class:`~core.defenses.dpsgd.OpacusStep` hook and the engine's Poisson order;
- **bare**: plain Opacus written out, no engine: ``PrivacyEngine.make_private`` on the same
  model, optimiser (SGD, lr 0.1), clipping mode (ghost clipping, train_dpsgd's default), noise
  generator and a loop over the same Poisson index draws (each row with probability q per
  step, drawn for the epoch on the host from the same seeded generator, one transfer), then
  forward, the two-pass ghost loss's backward and the DPOptimizer's step; Opacus' backward-hook
  warnings filtered once around the loop, as the engine path does.

Both train the same architecture (:func:`core.models.build_model`, same seed) on the same
synthetic rows at batch 64 (q = 1/steps, the expected step 64 rows) with z = 1, S = 1, so they
end with the same weights bit for bit (``same_weights``, checked on the first pair: the two
did the same work). Each timing is a whole call (setup, the steps, Opacus' cleanup; the engine
path's ε readout is memoised after the warm-up), in the process's CPU time on the CPU (one
thread; the cores are shared, and other processes' load inflates wall time, not CPU time;
wall times are kept in the details) and in wall time on CUDA; images are the rows the steps
took. Same
process, one CPU thread, a warm-up pair, then ``REPEATS`` pairs, which of the two runs first
alternating;
``dpsgd_vs_bare_opacus`` = the median over pairs of engine images/s / bare images/s (≥ 0.95
wanted). Device: ``PRIVLAB_BENCH_DEVICE=cuda`` or ``--device cuda``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import warnings
from typing import Any

import torch

BATCH = 64
REPEATS = 5
THREADS = 1
SEED = 0
LR = 0.1
#: (name, registered architecture, width, input shape, Poisson steps of one epoch)
ARCHS: tuple[tuple[str, str, float, tuple[int, ...], int], ...] = (
    ("mlp", "mlp", 1.0, (1, 28, 28), 40),
    ("lenet5", "lenet5", 1.0, (1, 28, 28), 16),
    ("resnet18_x0.25", "resnet18", 0.25, (3, 32, 32), 6),
)
TARGET = 0.95


def _data(shape: tuple[int, ...], steps: int, device: torch.device):
    g = torch.Generator().manual_seed(SEED)
    n = BATCH * steps
    d = 1
    for s in shape:
        d *= s
    return (torch.rand(n, d, generator=g).to(device),
            torch.randint(0, 10, (n,), generator=g).to(device))


def _model(arch: str, width: float, shape: tuple[int, ...], device: torch.device):
    from core.defenses.dpsgd import dp_compatible
    from core.models import build_model

    net = build_model(arch, shape, 10, width, seed=SEED).to(device)
    return dp_compatible(net)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _engine(model, X, y, shape) -> int:
    """DP-SGD through the engine; returns -1 (the rows are the bare loop's: the same draws)."""
    from core.defenses.dpsgd import train_dpsgd

    train_dpsgd(model, X, y, image_shape=shape, epochs=1, lr=LR, max_grad_norm=1.0,
                delta=1e-5, batch_size=BATCH, noise_multiplier=1.0, seed=SEED)
    return -1


def _bare(model, X, y, shape) -> int:
    """Plain Opacus over the same draws; returns the rows the steps took."""
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    from core.foundation.seeds import torch_stream

    n, dev = len(X), X.device
    images = X.reshape(n, *shape)
    loader = DataLoader(TensorDataset(images, y), batch_size=BATCH)
    q = 1.0 / len(loader)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]ecure RNG.*")
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        warnings.filterwarnings("ignore", message="Using a non-full backward hook")
        dp_model, opt, loss_fn, _ = PrivacyEngine(accountant="prv").make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=LR),
            data_loader=loader, noise_multiplier=1.0, max_grad_norm=1.0,
            noise_generator=torch_stream(SEED, "dpsgd", "noise", device=dev),
            poisson_sampling=True, grad_sample_mode="ghost",
            criterion=torch.nn.CrossEntropyLoss())
        g = torch_stream(SEED, "dpsgd", "batches")
        torch.empty((), dtype=torch.int64).random_(generator=g)  # the loader's base seed
        mask = torch.rand(int(1 / q), n, generator=g) < q
        counts = mask.sum(1).tolist()
        rows = mask.nonzero()[:, 1].to(dev)
        dp_model.train()
        for idx in rows.split(counts):
            loss = loss_fn(dp_model(images[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    dp_model._close()
    return int(sum(counts))


def _pair(arch: str, width: float, shape, steps: int, device, *, check: bool,
          bare_first: bool) -> dict[str, Any]:
    """One timed call of each way (whole calls, the device synchronised at the end)."""
    X, y = _data(shape, steps, device)
    out: dict[str, Any] = {}
    models = {}
    ways = (("bare", _bare), ("engine", _engine))
    for way, fn in (ways if bare_first else ways[::-1]):
        models[way] = _model(arch, width, shape, device)
        _sync(device)
        t0, c0 = time.perf_counter(), time.process_time()
        rows = fn(models[way], X, y, shape)
        _sync(device)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        # on the (shared) CPU the process's CPU time: other processes' load does not inflate
        # it as it inflates wall time; on CUDA the wall time
        out[way] = cpu if device.type == "cpu" else wall
        out[f"{way}_wall"] = wall
        if rows >= 0:
            out["rows"] = rows
    if check:
        a, b = models["engine"].state_dict(), models["bare"].state_dict()
        out["same_weights"] = all(torch.equal(a[k], b[k]) for k in a)
    return out


def measure(device: str | None = None, repeats: int = REPEATS) -> dict[str, Any]:
    """{"dpsgd_vs_bare_opacus": {arch: ratio}, "images_per_s": {arch: {"engine", "bare"}},
    "details": {...}}; see the module docstring."""
    dev = torch.device(device or os.environ.get("PRIVLAB_BENCH_DEVICE", "cpu"))
    threads = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    ratios: dict[str, float] = {}
    rates: dict[str, dict[str, float]] = {}
    details: dict[str, Any] = {"device": str(dev), "threads": THREADS, "batch": BATCH,
                               "clock": "process_time" if dev.type == "cpu" else "wall",
                               "repeats": repeats, "grad_sample_mode": "ghost",
                               "noise_multiplier": 1.0, "max_grad_norm": 1.0, "archs": {}}
    try:
        for name, arch, width, shape, steps in ARCHS:
            # a warm-up pair that also checks both ways end with the same weights
            first = _pair(arch, width, shape, steps, dev, check=True, bare_first=False)
            pairs = [_pair(arch, width, shape, steps, dev, check=False, bare_first=r % 2 == 0)
                     for r in range(repeats)]
            rows = first["rows"]
            ratios[name] = round(statistics.median(p["bare"] / p["engine"] for p in pairs), 4)
            rates[name] = {w: round(rows / statistics.median(p[w] for p in pairs), 1)
                           for w in ("engine", "bare")}
            details["archs"][name] = {
                "arch": arch, "width": width, "input": list(shape), "steps": steps,
                "rows_taken": rows, "same_weights": first["same_weights"],
                "engine_s": [round(p["engine"], 4) for p in pairs],
                "bare_s": [round(p["bare"], 4) for p in pairs],
                "engine_wall_s": [round(p["engine_wall"], 4) for p in pairs],
                "bare_wall_s": [round(p["bare_wall"], 4) for p in pairs]}
    finally:
        torch.set_num_threads(threads)
    details["loadavg"] = _loadavg()
    return {"dpsgd_vs_bare_opacus": ratios, "images_per_s": rates, "target": TARGET,
            "details": details}


def _loadavg() -> list[float] | None:
    try:
        return [float(v) for v in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return None


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    device = args[args.index("--device") + 1] if "--device" in args else None
    print(json.dumps(measure(device), indent=2))


if __name__ == "__main__":
    main()
