"""Registered architectures: parameter counts against the papers, K conv shadows trained
together against one by one, and training throughput per architecture.

- **Parameter counts**: LeNet-5 (62,006 for RGB 32×32, 61,706 for one channel), ResNet-10
  (4,903,242) and ResNet-18 (11,173,962), 10 classes, as built by
  :func:`core.models.build_model` (spec 001 §5.3 and the issue); Inf2Guard's Table 15 counts of
  its MIA encoder, membership and utility networks as extra rows (not in the headline count).
- **conv_shadow_speedup_8**: 8 LeNet-5 shadow models on ``mnist5k`` (a 1,000-row pool, the
  paired split: about 500 rows each), the membership runner's default training (Adam 1e-3,
  batch 64), trained by :func:`core.engine.shadow_training.train_stacked` together as one grouped
  network (``layout="grouped"``, :mod:`core.models.stacked`), together under vmap
  (``layout="vmap"``) and one by one (``batched=False``: ``train_central`` per model, the
  same seeds and batches, hence the same steps; ``max_weight_diff`` checks they agree). Each
  mode runs 3 times, interleaved, after a warm-up of each; the headline is one by one's
  minimum time over the grouped network's (the runs least disturbed by the other sessions on
  the 2 shared cores), the load average beside every run. Batches 32 and 16 are timed too,
  and a per-step breakdown (``shadow_steps``) says where a step's time goes.
- **image_runners_accepting_arch**: :func:`image_runners_accepting_arch` run on the five image
  runners' tiny probes with ``model: {arch: lenet5, width: 0.25}``.
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
    from core.config.schema import DataSpec
    from core.data import load_dataset
    from core.engine.shadow_training import shadow_splits

    ds = load_dataset(DataSpec(name="mnist5k"), 0)
    pool = np.random.default_rng([0, 9001]).choice(ds.split("train"), POOL, replace=False)
    return {"X": torch.tensor(ds.X[pool], dtype=torch.float32),
            "y": torch.tensor(ds.y[pool], dtype=torch.long),
            "shape": tuple(ds.image_shape), "mask": shadow_splits(POOL, K, seed=0)}


#: how the K shadows run: together as one grouped network, together under vmap, one by one
MODES = (("grouped", True, "grouped"), ("vmap", True, "vmap"), ("alone", False, "auto"))


def _shadows(s: dict[str, Any], batched: bool, epochs: int, batch: int, layout: str = "auto"):
    from core.engine.shadow_training import train_stacked
    from core.models import build_model

    load = _load()
    t0 = time.perf_counter()
    out = train_stacked(lambda: build_model("lenet5", s["shape"], 10), s["X"], s["y"], s["mask"],
                        epochs=epochs, batch_size=batch, lr=1e-3, optimizer="adam", seed=0,
                        batched=batched, layout=layout)
    return out, time.perf_counter() - t0, load


def _speedup(s: dict[str, Any], epochs: int, reps: int, batch: int) -> dict[str, Any]:
    """``reps`` interleaved runs of each mode (:data:`MODES`) after a warm-up of each; the
    speedups are the ratio of the minimum times (the run least disturbed by the other
    sessions on the shared cores), the load average beside every run."""
    for _, batched, layout in MODES:  # warm-up: first-call costs of the kernels
        _shadows(s, batched, 1, batch, layout)
    runs: dict[str, list[dict[str, float]]] = {m: [] for m, _, _ in MODES}
    weights: dict[str, Any] = {}
    for _ in range(reps):
        for mode, batched, layout in MODES:
            out, secs, load = _shadows(s, batched, epochs, batch, layout)
            runs[mode].append({"seconds": round(secs, 3), "load": load})
            weights[mode] = out.params
    best = {m: min(r["seconds"] for r in rs) for m, rs in runs.items()}
    diff = {m: max(float((weights[m][n] - weights["alone"][n]).abs().max()) for n in weights[m])
            for m in ("grouped", "vmap")}
    return {"batch": batch, "epochs": epochs, "runs": runs, "min_seconds": best,
            "speedup_grouped": round(best["alone"] / best["grouped"], 3),
            "speedup_vmap": round(best["alone"] / best["vmap"], 3), "max_weight_diff": diff}


def _step_breakdown(batch: int, steps: int = 10) -> dict[str, Any]:
    """Per-step milliseconds (forward, cross-entropy, backward; min of 3 timed loops of
    ``steps``) of 8 LeNet-5 on 1×28×28 rows: one model (× 8: one by one), the 8 as one
    grouped network, the 8 under vmap, and the share of the one-by-one step spent in its two
    convolutions (forward + backward alone): what stacking cannot amortise."""
    import torch.nn.functional as F
    from torch.func import functional_call, stack_module_state, vmap

    from core.models import build_model
    from core.models.stacked import GroupedNet

    ms = [build_model("lenet5", (1, 28, 28), 10, seed=k) for k in range(K)]
    g = torch.Generator().manual_seed(0)
    X = torch.rand(K, batch, 784, generator=g)
    y = torch.randint(0, 10, (K, batch), generator=g)
    p, b = stack_module_state(ms)
    leaves = [v.detach().clone().requires_grad_(True) for v in p.values()]
    names = list(p)

    def timed(f) -> float:
        f()
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(steps):
                f()
            best = min(best, (time.perf_counter() - t0) / steps)
        return 1e3 * best

    def one() -> None:
        m = ms[0]
        torch.autograd.grad(F.cross_entropy(m(X[0]), y[0]), list(m.parameters()))

    def stacked(fwd) -> None:
        lo = fwd(dict(zip(names, leaves)), b, X)
        loss = F.cross_entropy(lo.reshape(K * batch, -1), y.view(-1), reduction="sum") / batch
        torch.autograd.grad(loss, leaves)

    x1 = ms[0].input(X[0]).detach()
    c1, c2 = ms[0].features[0], ms[0].features[3]
    a1 = torch.rand(batch, c1.out_channels, 14, 14, generator=g, requires_grad=True)

    def convs() -> None:  # conv 1 (weight gradient) and conv 2 (weight and input gradients)
        out = c1(x1).sum() + c2(a1).sum()
        torch.autograd.grad(out, [c1.weight, c1.bias, c2.weight, c2.bias, a1])

    vm = vmap(lambda pp, bb, xx: functional_call(ms[0], (pp, bb), (xx,)))
    grouped = GroupedNet(ms[0])
    load = _load()
    one_ms, conv_ms = timed(one), timed(convs)
    return {"batch": batch, "one_model_ms": round(one_ms, 3), "one_by_one_8_ms": round(K * one_ms, 2),
            "grouped_8_ms": round(timed(lambda: stacked(grouped)), 2),
            "vmap_8_ms": round(timed(lambda: stacked(vm)), 2),
            "conv_share_of_one": round(conv_ms / one_ms, 3),
            # Amdahl: with the convolutions' time unchanged and the rest paid once for 8
            "bound_if_convs_unchanged": round(1 / (conv_ms / one_ms + (1 - conv_ms / one_ms) / K), 2),
            "load": load}


#: the batch sizes the shadows are timed at: the membership runner's default first
SHADOW_BATCHES = (BATCH, 32, 16)


def shadow_part(quick: bool = False) -> dict[str, Any]:
    """The conv-shadow measurement alone (1 thread): the speedups at each of
    :data:`SHADOW_BATCHES` (3 epochs at the default batch, 1 at the others) and the per-step
    breakdown; ``headline`` the grouped speedup at the default batch."""
    before = torch.get_num_threads()
    load_start = _load()
    try:
        torch.set_num_threads(THREADS)
        s = _shadow_setup()
        runs = [_speedup(s, epochs=1 if quick else 3, reps=1 if quick else 3, batch=BATCH)]
        runs += [] if quick else [_speedup(s, epochs=1, reps=3, batch=b) for b in SHADOW_BATCHES[1:]]
        steps = [_step_breakdown(b, 2 if quick else 10) for b in SHADOW_BATCHES]
    finally:
        torch.set_num_threads(before)
    rows = [{"part": "conv_shadows", "arch": "lenet5", "batch": r["batch"], "epochs": r["epochs"],
             "mode": m, "rep": i, **run} for r in runs for m, rs in r["runs"].items()
            for i, run in enumerate(rs)]
    rows += [{"part": "conv_shadow_step", "arch": "lenet5", **b} for b in steps]
    sizes = s["mask"].sum(1)
    main_run = runs[0]
    notes = (f"Shadows: {K} LeNet-5 on mnist5k 28×28 (resized to 32×32 inside the net), rows per "
             f"model {int(sizes.min())}-{int(sizes.max())}, Adam 1e-3, {THREADS} CPU thread, load "
             f"average {load_start} at the start and {_load()} at the end (2 cores shared with "
             f"other sessions); each mode run {len(main_run['runs']['alone'])} times interleaved "
             "after a warm-up, the minimum time kept. Speedup (one by one / together, same seeds, batches and steps) of the "
             "grouped network (core/models/stacked.py) and of vmap: "
             + "; ".join(f"batch {r['batch']} ({r['epochs']} epochs): grouped "
                         f"{r['speedup_grouped']}, vmap {r['speedup_vmap']}" for r in runs)
             + f" (target >= {SPEEDUP_TARGET:g}). Per step (fwd+CE+bwd, no optimizer): "
             + "; ".join(f"batch {b['batch']}: one model {b['one_model_ms']} ms (×8 = "
                         f"{b['one_by_one_8_ms']}), grouped {b['grouped_8_ms']}, vmap "
                         f"{b['vmap_8_ms']}, convolutions {100 * b['conv_share_of_one']:.0f} % "
                         "of the one-model step (speedup bound if stacking left their time "
                         f"unchanged: {b['bound_if_convs_unchanged']})" for b in steps)
             + (". Why the target is not reached on a CPU: the convolution kernels, whose "
                "FLOPs stacking does not reduce, take the share above of a step; stacking saves "
                "the per-call overhead of the other layers and of Adam, and channels_last "
                "grouped kernels beat separate ones more at small batches than at large"
                if main_run["speedup_grouped"] < SPEEDUP_TARGET else "")
             + ". max_weight_diff: float32 rounding of grouped "
               "against separate convolutions, amplified by Adam's normalised step where a "
               "gradient is near 0 (float64: tests/test_stacked_training.py).")
    return {"headline": main_run["speedup_grouped"], "runs": runs, "steps": steps, "rows": rows,
            "notes": notes, "load_start": load_start}


def merge_shadow_headline(path: str = "benchmarks/results/models.json") -> dict[str, Any]:
    """Rerun the conv-shadow part and the architecture probe and merge them into models.json
    (``conv_shadow_speedup_8``, ``image_runners_accepting_arch``, their rows, details and
    notes), keeping the other headline figures."""
    import json

    with open(path, encoding="utf-8") as f:
        out = json.load(f)
    part = shadow_part()
    out["headline"]["conv_shadow_speedup_8"] = part["headline"]
    out["rows"] = [r for r in out["rows"] if r.get("part") not in ("conv_shadows",
                                                                   "conv_shadow_step")] + part["rows"]
    out["details"]["shadow_runs"] = part["runs"]
    out["details"]["shadow_steps"] = part["steps"]
    throughput = out["notes"][out["notes"].find("Throughput"):] if "Throughput" in out["notes"] else ""
    out["notes"] = part["notes"] + (" " + throughput if throughput else "")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=True)
        f.write("\n")
    return merge_arch_headline(path)


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
    :func:`core.config.schema.parse_config` with :data:`PROBE_MODEL` and, with ``run``, run (a
    refusal at either step counts against it, its one-line message kept)."""
    from core.config.schema import parse_config
    from core.runs.experiments import run as run_config

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


def _paper_arch_keys() -> dict[str, Any]:
    """The paper check's two figures of this headline, as its benchmark last wrote them
    (``python -m benchmarks.papers_check --verdicts`` owns them; a rerun here keeps them)."""
    import json

    from benchmarks.papers_check import MODELS_JSON, MODELS_KEYS
    from core.paper_check.papers import ROOT

    try:
        head = json.loads((ROOT / MODELS_JSON).read_text()).get("headline") or {}
    except (OSError, ValueError):
        return {}
    return {k: head[k] for k in MODELS_KEYS if k in head}


def main(quick: bool = False) -> dict[str, Any]:
    from core.foundation.parts import ARCHITECTURES
    from core.models import forward_flops, param_count

    before = torch.get_num_threads()
    load_start = _load()
    rows: list[dict[str, Any]] = []
    try:
        torch.set_num_threads(THREADS)
        param_rows, mismatches = _param_rows()
        rows += param_rows
        shadows = shadow_part(quick)
        rows += shadows["rows"]
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
    speedup = shadows["headline"]
    accepting, total, refused = image_runners_accepting_arch(run=not quick)
    headline = {
        "architectures_registered": len(ARCHITECTURES),
        "param_count_mismatches": mismatches,
        "conv_shadow_speedup_8": speedup,
        "cpu_images_per_s": cpu,
        "cuda_images_per_s": cuda,
        "cuda_peak_fraction": peak,
        "image_runners_accepting_arch": accepting,
        "image_runners": total,
        **_paper_arch_keys(),
    }
    notes = (f"{THREADS} CPU thread; load average {load_start} at the start, {_load()} at the "
             "end (2 shared cores). " + shadows["notes"]
             + " Throughput: training steps of batch 64 on 3×32×32, 10 classes.")
    return {
        "name": "models",
        "headline": headline,
        "cuda_reason": reason,  # why the cuda_* figures are null (beside them, not a figure)
        "rows": rows,
        "targets": {"architectures_registered": ">= 8", "param_count_mismatches": 0,
                    "conv_shadow_speedup_8": f">= {SPEEDUP_TARGET:g}"},
        "details": {"shadow_runs": shadows["runs"], "shadow_steps": shadows["steps"],
                    "threads": THREADS, "load_start": load_start,
                    "image_runners_refusing_arch": refused,
                    "image_runners_probe": {"model": PROBE_MODEL}},
        "notes": notes,
    }


if __name__ == "__main__":
    import sys

    if "--merge-arch" in sys.argv:
        print(merge_arch_headline()["headline"])
        raise SystemExit(0)
    if "--merge-shadows" in sys.argv:
        merged = merge_shadow_headline()
        print(merged["headline"])
        print(merged["notes"])
        raise SystemExit(0)
    out = main(quick="--quick" in sys.argv)
    print(out["headline"])
    print(out["notes"])
