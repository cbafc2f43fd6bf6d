"""Shadow models for membership inference trained together against a loop over the same models.

16 shadow models of ``core.models.nn.ImageMLP`` (hidden 64) on a 1,000-row shadow pool drawn from
``mnist5k``'s training split, the paired LiRA split (:func:`core.engine.shadow_training.shadow_splits`,
every pool row in exactly 8 models, about 500 rows per model), 30 epochs of batch 32:

- **batched**: :func:`core.engine.shadow_training.train_shadows` (``batched=True``): all 16 models in
  one computation over stacked weights (``vmap(functional_call)``, per-model SGD / Adam);
- **loop**: the same call with ``batched=False``: ``core.engine.noisy_training.train_central``
  on one plain module after another (the targets' own loop, ``torch.optim`` optimiser), same
  process, same thread count, same seeds, so both give the same weights up to float rounding
  (``max_weight_diff``).

Each way runs once after a short warm-up of both (first-call overheads of vmap / kernels); the
machine may be shared. Rows: SGD (lr 0.1, the headline) and Adam (lr 1e-3), with the mean
test accuracy of the 16 models as a sanity check. ``headline``: ``shadow_speedup_16`` = loop
seconds / batched seconds with SGD. 1 CPU thread (the 2 cores are shared).

Device: ``PRIVLAB_BENCH_DEVICE=cuda`` (or ``python benchmarks/shadow_speed.py --device cuda``).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np
import torch

MODELS = 16
POOL = 1000
EPOCHS = 30
BATCH = 32
SPEEDUP_TARGET = 2.0
THREADS = 1
CASES = (("sgd", 0.1), ("adam", 1e-3))


def _setup(device: torch.device) -> dict[str, Any]:
    from core.config.schema import DataSpec
    from core.data import load_dataset
    from core.engine.shadow_training import shadow_splits

    ds = load_dataset(DataSpec(name="mnist5k"), 0)
    pool = np.random.default_rng([0, 9001]).choice(ds.split("train"), POOL, replace=False)
    test = ds.split("test")
    as_t = lambda rows: (torch.tensor(ds.X[rows], dtype=torch.float32).to(device),
                         torch.tensor(ds.y[rows], dtype=torch.long).to(device))
    X, y = as_t(pool)
    Xt, yt = as_t(test)
    return {"X": X, "y": y, "X_test": Xt, "y_test": yt, "shape": tuple(ds.image_shape),
            "mask": shadow_splits(POOL, MODELS, seed=0)}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _train(s: dict[str, Any], optimizer: str, lr: float, epochs: int, batched: bool,
           device: torch.device):
    from core.engine.shadow_training import train_shadows
    from core.models.nn import ImageMLP

    _sync(device)
    t0 = time.perf_counter()
    out = train_shadows(lambda: ImageMLP(s["shape"], 10), s["X"], s["y"], s["mask"],
                        image_shape=s["shape"], epochs=epochs, batch_size=BATCH, lr=lr,
                        optimizer=optimizer, seed=0, batched=batched)
    _sync(device)
    return out, time.perf_counter() - t0


def _test_acc(shadows, s: dict[str, Any]) -> float:
    logits = shadows.outputs(s["X_test"])
    return float((logits.argmax(-1) == s["y_test"]).float().mean())


def main(quick: bool = False, device: str | None = None) -> dict[str, Any]:
    dev = torch.device(device or os.environ.get("PRIVLAB_BENCH_DEVICE", "cpu"))
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device cuda: CUDA is not available here")
    epochs = 5 if quick else EPOCHS
    before = torch.get_num_threads()
    rows: list[dict[str, Any]] = []
    speedup: dict[str, float] = {}
    diffs: dict[str, float] = {}
    secs: dict[str, dict[str, float]] = {}
    try:
        torch.set_num_threads(THREADS)
        s = _setup(dev)
        for opt, lr in CASES:
            _train(s, opt, lr, 1, True, dev)  # warm-up
            _train(s, opt, lr, 1, False, dev)
            b, tb = _train(s, opt, lr, epochs, True, dev)
            lp, tl = _train(s, opt, lr, epochs, False, dev)
            diff = max(float((b.params[n] - lp.params[n]).abs().max()) for n in b.params)
            speedup[opt], diffs[opt] = tl / tb, diff
            secs[opt] = {"batched": round(tb, 3), "loop": round(tl, 3)}
            rows.append({"case": f"batched, {MODELS} models", "optimizer": opt, "seconds": round(tb, 3),
                         "mean_test_acc": round(_test_acc(b, s), 4), "max_weight_diff": None,
                         "speedup": None})
            rows.append({"case": "loop (train_central per model)", "optimizer": opt,
                         "seconds": round(tl, 3), "mean_test_acc": round(_test_acc(lp, s), 4),
                         "max_weight_diff": diff, "speedup": round(tl / tb, 2)})
    finally:
        torch.set_num_threads(before)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else None
    sizes = s["mask"].sum(1)
    notes = (f"device {dev.type}{f' ({name})' if name else ''}; {THREADS} thread; {MODELS} ImageMLP "
             f"shadows, pool {POOL} (rows per model {int(sizes.min())}-{int(sizes.max())}), "
             f"{epochs} epochs, batch {BATCH}. Speedup loop/batched: "
             + ", ".join(f"{k} {v:.2f}x" for k, v in speedup.items())
             + f" (target >= {SPEEDUP_TARGET:.0f}x); max weight difference "
             + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items()) + ".")
    return {
        "name": "shadow_speed",
        "headline": {"shadow_speedup_16": round(speedup["sgd"], 2)},
        "rows": rows,
        "targets": {"shadow_speedup_16": f">= {SPEEDUP_TARGET:.0f}"},
        "details": {"device": dev.type, "device_name": name, "threads": THREADS,
                    "epochs": epochs, "batch_size": BATCH, "pool": POOL, "models": MODELS,
                    "seconds": secs, "max_weight_diff": diffs,
                    "speedup_by_optimizer": {k: round(v, 2) for k, v in speedup.items()}},
        "notes": notes,
    }


if __name__ == "__main__":
    dev = None
    if "--device" in sys.argv:
        dev = sys.argv[sys.argv.index("--device") + 1]
    out = main(quick="--quick" in sys.argv, device=dev)
    for row in out["rows"]:
        print(row)
    print(out["headline"], out["notes"])
