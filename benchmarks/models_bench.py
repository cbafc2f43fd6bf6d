"""Registered architectures: parameter counts against the papers, K conv shadows trained
together against one by one, and training throughput per architecture.

- **Parameter counts**: LeNet-5 (62,006 for RGB 32×32, 61,706 for one channel), ResNet-10
  (4,903,242) and ResNet-18 (11,173,962), 10 classes, as built by
  :func:`core.models.build_model` (spec 001 §5.3 and the issue); Inf2Guard's Table 15 counts of
  its MIA encoder, membership and utility networks as extra rows (not in the headline count).
- **conv_shadow_speedup_8**: 8 LeNet-5 shadow models on ``mnist5k`` (a 1,000-row pool, the
  paired split: about 500 rows each), the membership runner's default training (Adam 1e-3,
  batch 64), trained by :func:`core.shadow_training.train_stacked` together
  (``batched=True``) and one by one (``batched=False``: ``train_central`` per model, the same
  seeds and batches, hence the same steps; ``max_weight_diff`` checks they agree). Both run in
  one process, interleaved (together, alone, together, ...) after a warm-up of each, and the
  headline is the median of the per-pair ratios; the load average is recorded beside every
  timed run because the 2 cores are shared. A batch-16 pair is run too (``rows``).
- **cpu_images_per_s**: one training step (forward, cross-entropy, backward, SGD) of each
  architecture's ``classifier`` on 3×32×32 inputs, 10 classes, batch 64, at width 1 and at the
  architecture's CPU width: images per second over a few timed steps after a warm-up step,
  with the FLOP/s that implies (a step ≈ 3 × the forward FLOPs of the cost model).
- **cuda_images_per_s / cuda_peak_fraction**: the same steps on CUDA at width 1 when a GPU is
  present (peak: the device's FP32 non-tensor-core rate where known); null with the reason
  otherwise.

1 CPU thread (``PRIVLAB_THREADS``' default: runs pin one thread each).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import numpy as np
import torch

THREADS = 1
K = 8
POOL = 1000
BATCH = 64
SPEEDUP_TARGET = 2.0
#: (arch, in_shape, role, count): the counts the issue names
NAMED_COUNTS = (("lenet5", (3, 32, 32), "classifier", 62_006),
                ("lenet5", (1, 32, 32), "classifier", 61_706),
                ("resnet10", (3, 32, 32), "classifier", 4_903_242),
                ("resnet18", (3, 32, 32), "classifier", 11_173_962))
#: Inf2Guard Table 15, CIFAR-10
EXTRA_COUNTS = (("inf2guard_mia", (3, 32, 32), "encoder", 6_448_192),
                ("inf2guard_mia", (3, 32, 32), "membership", 4_721_153),
                ("inf2guard_mia", (3, 32, 32), "utility", 4_725_770))
#: FP32 (non-tensor-core) peak FLOP/s of GPUs this project is lent
PEAK_FP32 = {"H100 80GB HBM3": 66.9e12, "H100 PCIe": 51.2e12, "H200": 66.9e12,
             "A100": 19.5e12}
NO_GPU = "no GPU lent to this task"


def _load() -> float:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover
        return float("nan")


def _param_rows() -> tuple[list[dict[str, Any]], int]:
    from core.models import param_count

    rows, mismatches = [], 0
    for named, table in ((True, NAMED_COUNTS), (False, EXTRA_COUNTS)):
        for arch, shape, role, target in table:
            got = param_count(arch, shape, 10, role=role)
            mismatches += int(named and got != target)
            rows.append({"part": "param_count", "arch": arch, "role": role,
                         "in_shape": "×".join(map(str, shape)), "params": got, "target": target,
                         "match": got == target, "in_headline": named})
    return rows, mismatches


def _shadow_setup() -> dict[str, Any]:
    from core.config import DataSpec
    from core.data import load_dataset
    from core.shadow_training import shadow_splits

    ds = load_dataset(DataSpec(name="mnist5k"), 0)
    pool = np.random.default_rng([0, 9001]).choice(ds.split("train"), POOL, replace=False)
    return {"X": torch.tensor(ds.X[pool], dtype=torch.float32),
            "y": torch.tensor(ds.y[pool], dtype=torch.long),
            "shape": tuple(ds.image_shape), "mask": shadow_splits(POOL, K, seed=0)}


def _shadows(s: dict[str, Any], batched: bool, epochs: int, batch: int):
    from core.models import build_model
    from core.shadow_training import train_stacked

    load = _load()
    t0 = time.perf_counter()
    out = train_stacked(lambda: build_model("lenet5", s["shape"], 10), s["X"], s["y"], s["mask"],
                        epochs=epochs, batch_size=batch, lr=1e-3, optimizer="adam", seed=0,
                        batched=batched)
    return out, time.perf_counter() - t0, load


def _speedup(s: dict[str, Any], epochs: int, reps: int, batch: int) -> dict[str, Any]:
    _shadows(s, True, 1, batch)  # warm-up: first-call costs of vmap and the kernels
    _shadows(s, False, 1, batch)
    pairs = []
    for _ in range(reps):
        tog, t_tog, l_tog = _shadows(s, True, epochs, batch)
        alone, t_alone, l_alone = _shadows(s, False, epochs, batch)
        diff = max(float((tog.params[n] - alone.params[n]).abs().max()) for n in tog.params)
        pairs.append({"together_s": round(t_tog, 3), "alone_s": round(t_alone, 3),
                      "ratio": round(t_alone / t_tog, 3), "load_together": l_tog,
                      "load_alone": l_alone, "max_weight_diff": diff})
    return {"batch": batch, "epochs": epochs, "pairs": pairs,
            "median_ratio": round(statistics.median(p["ratio"] for p in pairs), 3),
            "ratio_of_medians": round(statistics.median(p["alone_s"] for p in pairs)
                                      / statistics.median(p["together_s"] for p in pairs), 3)}


def _step_rate(arch: str, width: float, device: torch.device, steps: int) -> float:
    """Images per second of training steps of ``arch``'s classifier, batch 64, 3×32×32."""
    import torch.nn.functional as F

    from core.models import build_model

    net = build_model(arch, (3, 32, 32), 10, width, seed=0).to(device).train()
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(BATCH, 3 * 32 * 32, generator=g).to(device)
    y = torch.randint(0, 10, (BATCH,), generator=g).to(device)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(net(x), y).backward()
        opt.step()

    step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return BATCH * steps / (time.perf_counter() - t0)


#: the experiment kinds whose runner trains a network on images (the issue's image runners)
IMAGE_RUNNERS = ("attribute_privacy", "membership", "property", "repr_reconstruction",
                 "gradient_leakage")
#: the architecture each image runner is asked to take, and the tiny settings it runs with
PROBE_MODEL = {"arch": "lenet5", "width": 0.25}
_PROBE_DATA = {"name": "digits", "private_attribute": "parity"}
PROBES: dict[str, dict[str, Any]] = {
    "attribute_privacy": {"data": _PROBE_DATA, "pretrain_epochs": 0, "projection_points": 0,
                          "fl": {"num_devices": 2, "fraction_fit": 1.0, "rounds": 1},
                          "attack": {"attackers": ["logreg"]}},
    "membership": {"data": {"name": "digits"}, "projection_points": 0,
                   "train": {"members": 40, "epochs": 1, "batch_size": 32},
                   "attack": {"shadows": 2, "rmia_references": 1, "attackers": ["loss"]}},
    "property": {"data": _PROBE_DATA, "projection_points": 0,
                 "subsets": {"size_min": 8, "size_max": 20, "train_per_bin": 5,
                             "aux_per_bin": 5, "test_per_bin": 5},
                 "train": {"epochs": 1, "pretrain_epochs": 0},
                 "attack": {"attackers": ["in_training"]}},
    "repr_reconstruction": {"data": {"name": "digits"},
                            "train": {"epochs": 1, "max_train": 100},
                            "attack": {"targets": 2, "attackers": ["decoder_in_training"]}},
    "gradient_leakage": {"data": {"name": "digits"}, "train": {"epochs": 1},
                         "attack": {"attackers": ["idlg"], "targets": 1, "iterations": 1,
                                    "model_inversion": False}},
}


def image_runners_accepting_arch(run: bool = True) -> tuple[int, int, dict[str, str]]:
    """(image runners that take ``model: {arch: lenet5, width: 0.25}``, image runners, why
    each refusing one refuses): each kind's tiny probe config validated by
    :func:`core.config.parse_config` with :data:`PROBE_MODEL` and, with ``run``, run (a
    refusal at either step counts against it, its one-line message kept)."""
    from core.config import parse_config
    from core.experiments import run as run_config

    refused: dict[str, str] = {}
    for kind in IMAGE_RUNNERS:
        try:
            cfg = parse_config({"kind": kind, **PROBES[kind], "model": PROBE_MODEL})
            if run:
                run_config(cfg)
        except ValueError as err:
            refused[kind] = str(err).splitlines()[0]
    return len(IMAGE_RUNNERS) - len(refused), len(IMAGE_RUNNERS), refused


def merge_arch_headline(path: str = "benchmarks/results/models.json") -> dict[str, Any]:
    """Add ``image_runners_accepting_arch`` / ``image_runners`` to models.json's headline
    (and the refusals to its details) without rerunning the timed parts."""
    import json

    with open(path, encoding="utf-8") as f:
        out = json.load(f)
    load = _load()
    accepting, total, refused = image_runners_accepting_arch()
    out["headline"]["image_runners_accepting_arch"] = accepting
    out["headline"]["image_runners"] = total
    out.setdefault("details", {})["image_runners_refusing_arch"] = refused
    out["details"]["image_runners_probe"] = {"model": PROBE_MODEL, "load": load}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=True)
        f.write("\n")
    return out


def main(quick: bool = False) -> dict[str, Any]:
    from core.models import forward_flops, param_count
    from core.parts import ARCHITECTURES

    before = torch.get_num_threads()
    load_start = _load()
    rows: list[dict[str, Any]] = []
    try:
        torch.set_num_threads(THREADS)
        param_rows, mismatches = _param_rows()
        rows += param_rows
        s = _shadow_setup()
        main_run = _speedup(s, epochs=1 if quick else 3, reps=1 if quick else 3, batch=BATCH)
        runs = [main_run] + ([] if quick else [_speedup(s, epochs=1, reps=2, batch=16)])
        for r in runs:
            for i, p in enumerate(r["pairs"]):
                rows.append({"part": "conv_shadows", "arch": "lenet5", "batch": r["batch"],
                             "epochs": r["epochs"], "pair": i, **p})
        cpu: dict[str, dict[str, float]] = {}
        steps = 1 if quick else 2
        for name, a in ARCHITECTURES.items():
            flops = forward_flops(a, (3, 32, 32), 10)
            widths = [1.0] + ([a.cpu_width] if a.cpu_width != 1.0 else [])
            cpu[name] = {}
            for w in widths:
                load = _load()
                rate = _step_rate(name, w, torch.device("cpu"), steps)
                f = flops if w == 1.0 else forward_flops(a, (3, 32, 32), 10, w)
                key = "width_1" if w == 1.0 else f"width_{w:g}"
                cpu[name][key] = round(rate, 1)
                rows.append({"part": "cpu_images_per_s", "arch": name, "width": w,
                             "params": param_count(a, (3, 32, 32), 10, w),
                             "forward_mflops": round(f / 1e6, 2), "images_per_s": round(rate, 1),
                             "gflops_per_s": round(3 * f * rate / 1e9, 2), "load": load})
        cuda, peak, reason = None, None, NO_GPU
        if torch.cuda.is_available():
            dev = torch.device("cuda")
            dname = torch.cuda.get_device_name(dev)
            cuda, fracs = {}, []
            peak_rate = next((v for k, v in PEAK_FP32.items() if k in dname), None)
            for name, a in ARCHITECTURES.items():
                rate = _step_rate(name, 1.0, dev, 20)
                cuda[name] = round(rate, 1)
                if peak_rate:
                    fracs.append(3 * forward_flops(a, (3, 32, 32), 10) * rate / peak_rate)
            peak = round(max(fracs), 4) if fracs else None
            reason = None if fracs else f"FP32 peak of {dname} unknown"
    finally:
        torch.set_num_threads(before)
    speedup = main_run["median_ratio"]
    headline = {
        "architectures_registered": len(ARCHITECTURES),
        "param_count_mismatches": mismatches,
        "conv_shadow_speedup_8": speedup,
        "cpu_images_per_s": cpu,
        "cuda_images_per_s": cuda,
        "cuda_peak_fraction": peak,
        "cuda_reason": reason,
    }
    sizes = s["mask"].sum(1)
    notes = (f"{THREADS} CPU thread; load average {load_start} at the start, {_load()} at the "
             f"end (2 shared cores). Shadows: {K} LeNet-5 on mnist5k 28×28 (resized to 32×32 "
             f"inside the net), rows per model {int(sizes.min())}-{int(sizes.max())}, Adam 1e-3, "
             f"batch {BATCH}, {main_run['epochs']} epochs, interleaved pairs: ratios "
             + ", ".join(str(p["ratio"]) for p in main_run["pairs"])
             + f" (median {speedup}, target >= {SPEEDUP_TARGET:g}); "
             + ("" if quick else f"batch 16: median {runs[1]['median_ratio']}. ")
             + "max_weight_diff: float32 rounding of one grouped against K separate "
               "convolutions, which Adam's normalised step amplifies where a gradient is near 0 "
               "(in float64 the two agree to 1e-14: tests/test_stacked_training.py). "
             + "Throughput: training steps of batch 64 on 3×32×32, 10 classes.")
    return {
        "name": "models",
        "headline": headline,
        "rows": rows,
        "targets": {"architectures_registered": ">= 8", "param_count_mismatches": 0,
                    "conv_shadow_speedup_8": f">= {SPEEDUP_TARGET:g}"},
        "details": {"shadow_runs": runs, "threads": THREADS, "load_start": load_start},
        "notes": notes,
    }


if __name__ == "__main__":
    import sys

    if "--merge-arch" in sys.argv:
        print(merge_arch_headline()["headline"])
        raise SystemExit(0)
    out = main(quick="--quick" in sys.argv)
    print(out["headline"])
    print(out["notes"])
