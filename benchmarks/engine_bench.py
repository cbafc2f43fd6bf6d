"""The training engine's figures (``benchmarks/results/engine.json``).

- ``defended_shadow_speedup_8``: the 8 shadow models of a RelaxLoss-defended target (the
  membership runner's MLP on ``digits``, its default α = 1 and recipe but fewer epochs; the
  paired split of the 1,079-row train split, about 540 rows per model) trained the way the
  runner trains them: batched (the build's ``train_many``: the engine's batched form) against
  one by one (the build's ``train`` on each model, as the runner did before RelaxLoss had a
  batched form). Same process, repeats alternating batched / one by one; the median over
  the rounds of one-by-one / batched seconds (``ratio_of_medians`` beside it). Target >= 2.
- ``engine_overhead_ratio`` for ``mlp`` and ``lenet5``: :func:`core.engine.loop.fit` against
  a bare hand-written PyTorch loop (randperm from the same generator, the same minibatches,
  ``torch.optim.Adam``, cross-entropy, zero_grad / backward / step and nothing else) on the
  same initial weights; the two end on equal weights (checked: ``max_weight_diff``). Repeats
  alternate; the median over the rounds of engine / bare seconds. Target <= 1.10.
- ``dpsgd_vs_bare_opacus`` (``benchmarks.engine_dpsgd.measure``) and the start-up figures
  ``tiny_run_over_torch_floor``, ``first_page_open_s``, ``compare_cold_from_navigation_s``
  (``benchmarks.engine_startup.measure``) come from those modules, merged here; a module
  that is not there leaves its figures null with the reason.
- CUDA: ``cuda_images_per_s`` per architecture with the engine options off and on
  (channels-last + bf16 autocast; ``torch.compile`` is left off: its compile time would
  dominate a short timing) and the throughput figures on CUDA (``cuda_defended_shadow_
  speedup_8``, ``cuda_engine_overhead_ratio``, ``cuda_dpsgd_vs_bare_opacus``); null with the
  reason when no GPU is present.

Reasons for null figures sit in ``reasons`` beside the headline. 1 CPU thread (the 2 cores
are shared); the load average is recorded at the start and the end.
"""

from __future__ import annotations

import copy
import importlib
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

THREADS = 1
SHADOWS = 8
SPEEDUP_TARGET = 2.0
OVERHEAD_TARGET = 1.10
ARCHS = ("mlp", "lenet5")
#: modules other parts of the engine work contribute, and the figures each one measures
CONTRIBUTED = {
    "benchmarks.engine_dpsgd": ("dpsgd_vs_bare_opacus",),
    "benchmarks.engine_startup": ("tiny_run_over_torch_floor", "first_page_open_s",
                                  "compare_cold_from_navigation_s"),
}
NO_GPU = "no GPU on this machine"
MISSING = "not measured: module missing"


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def _timed(fn: Callable[[], Any], dev: torch.device) -> tuple[Any, float]:
    _sync(dev)
    t0 = time.perf_counter()
    out = fn()
    _sync(dev)
    return out, time.perf_counter() - t0


def _alternate(fns: dict[str, Callable[[], Any]], repeats: int, dev: torch.device
               ) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Each function once as a warm-up, then ``repeats`` rounds in alternating order; the
    last output and every timing of each."""
    outs = {k: f() for k, f in fns.items()}
    secs: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        for k in (names if r % 2 == 0 else names[::-1]):
            outs[k], t = _timed(fns[k], dev)
            secs[k].append(t)
    return outs, secs


def _paired(secs: dict[str, list[float]], num: str, den: str) -> float:
    """The median over rounds of ``num``'s time over ``den``'s in the same round (each pair
    ran back to back, so a load that drifts between rounds cancels in its ratio)."""
    return statistics.median(a / b for a, b in zip(secs[num], secs[den], strict=True))


def _digits(dev: torch.device) -> tuple[torch.Tensor, torch.Tensor, tuple[int, ...]]:
    from core.config.schema import DataSpec
    from core.data import load_dataset

    ds = load_dataset(DataSpec(name="digits"), 0)
    rows = np.asarray(ds.split("train"))
    X = torch.tensor(np.asarray(ds.X)[rows], dtype=torch.float32, device=dev)
    y = torch.tensor(np.asarray(ds.y)[rows], dtype=torch.long, device=dev)
    return X, y, tuple(ds.image_shape)


def shadow_speedup(dev: torch.device, epochs: int, repeats: int) -> dict[str, Any]:
    """The RelaxLoss-defended target's 8 shadows: batched against one by one (module docs)."""
    from core.config.schema import parse_config
    from core.engine.shadow_training import shadow_seed, shadow_splits
    from core.foundation.builds import build_defense
    from core.foundation.seeds import torch_stream
    from core.models import build_model
    from core.models.nn import seeded

    cfg = parse_config({"kind": "membership", "data": {"name": "digits"},
                        "defense": {"kind": "relaxloss"}, "train": {"epochs": epochs}})
    X, y, shape = _digits(dev)
    build = build_defense("membership", cfg.defense, image_shape=shape, n_classes=10,
                          train=cfg.train, model=cfg.model)
    mask = shadow_splits(len(X), SHADOWS, seed=0)

    def factory() -> torch.nn.Module:
        return build_model(cfg.model.arch, shape, 10, cfg.model.width, data="digits")

    def batched() -> torch.Tensor:
        return build.train_many(factory, X, y, mask, seed=0)(X, y)

    def one_by_one() -> torch.Tensor:
        cols = []
        for k in range(SHADOWS):
            s_k = shadow_seed(0, k)
            model = seeded(factory, torch_stream(s_k, "init")).to(dev)
            rows = torch.as_tensor(mask[k], device=dev)
            p = build.train(model, X[rows], y[rows], seed=s_k).predict(X)
            cols.append(p.gather(1, y.view(-1, 1)).squeeze(1))
        return torch.stack(cols)

    outs, secs = _alternate({"batched": batched, "one_by_one": one_by_one}, repeats, dev)
    med = {k: statistics.median(v) for k, v in secs.items()}
    return {"speedup": _paired(secs, "one_by_one", "batched"),
            "ratio_of_medians": med["one_by_one"] / med["batched"], "median_seconds": med,
            "seconds": secs, "epochs": epochs, "rows_per_model": mask.sum(1).tolist(),
            "max_true_prob_diff": float((outs["batched"] - outs["one_by_one"]).abs().max())}


def _bare_loop(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor,
               shape: tuple[int, ...], *, epochs: int, batch_size: int, lr: float,
               order: torch.Generator) -> None:
    """The hand-written reference: what :func:`core.engine.loop.fit` computes, nothing more."""
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    n = len(X)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(n, generator=order).to(X.device)
        for i in range(0, n, batch_size):
            idx = perm[i:i + batch_size]
            loss = F.cross_entropy(model(X[idx].reshape(len(idx), *shape)), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    model.eval()


def overhead_ratio(arch: str, dev: torch.device, epochs: int, repeats: int) -> dict[str, Any]:
    """``fit`` against the bare loop on ``arch`` (module docs); images/s of each."""
    from core.engine.loop import Supervised, fit
    from core.engine.recipe import Recipe
    from core.models import build_model

    X, y, shape = _digits(dev)
    init = build_model(arch, shape, 10, seed=0, data="digits").to(dev)
    recipe = Recipe(epochs=epochs, batch_size=64, lr=1e-3, optimizer="adam")
    finals: dict[str, torch.nn.Module] = {}

    def engine() -> None:
        m = copy.deepcopy(init)
        fit(m, Supervised(X, y, shape), recipe=recipe, order=torch.Generator().manual_seed(1))
        finals["engine"] = m

    def bare() -> None:
        m = copy.deepcopy(init)
        _bare_loop(m, X, y, shape, epochs=epochs, batch_size=64, lr=1e-3,
                   order=torch.Generator().manual_seed(1))
        finals["bare"] = m

    _, secs = _alternate({"engine": engine, "bare": bare}, repeats, dev)
    med = {k: statistics.median(v) for k, v in secs.items()}
    pe, pb = dict(finals["engine"].named_parameters()), dict(finals["bare"].named_parameters())
    return {"ratio": _paired(secs, "engine", "bare"),
            "ratio_of_medians": med["engine"] / med["bare"], "median_seconds": med, "seconds": secs,
            "images_per_s": {k: len(X) * epochs / v for k, v in med.items()},
            "max_weight_diff": max(float((pe[n] - pb[n]).detach().abs().max()) for n in pe)}


def images_per_s(arch: str, dev: torch.device, epochs: int, **options: Any) -> float:
    """Training images/s of ``fit`` on ``arch`` (digits, batch 64) under the engine options."""
    from core.engine import engine_options
    from core.engine.loop import Supervised, fit
    from core.engine.recipe import Recipe
    from core.models import build_model

    X, y, shape = _digits(dev)
    model = build_model(arch, shape, 10, seed=0, data="digits").to(dev)
    recipe = Recipe(epochs=epochs, batch_size=64, lr=1e-3)
    with engine_options(**options):
        fit(model, Supervised(X, y, shape), recipe=Recipe(epochs=1, batch_size=64, lr=1e-3),
            order=torch.Generator().manual_seed(1))  # warm-up
        _, t = _timed(lambda: fit(model, Supervised(X, y, shape), recipe=recipe,
                                  order=torch.Generator().manual_seed(1)), dev)
    return len(X) * epochs / t


def contributed() -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """The figures of the modules in :data:`CONTRIBUTED`: (headline figures, their other
    keys by module, reasons for the figures left null)."""
    head: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for module, figures in CONTRIBUTED.items():
        try:
            mod = importlib.import_module(module)
        except ImportError:
            head.update(dict.fromkeys(figures))
            reasons.update(dict.fromkeys(figures, MISSING))
            continue
        got = dict(mod.measure())
        reasons.update(got.pop("reasons", {}) or {})
        for f in figures:
            head[f] = got.pop(f, None)
        extra[module.rsplit(".", 1)[-1]] = got
    return head, extra, reasons


def _cuda(quick: bool) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    names = ("cuda_images_per_s", "cuda_defended_shadow_speedup_8",
             "cuda_engine_overhead_ratio", "cuda_dpsgd_vs_bare_opacus")
    if not torch.cuda.is_available():
        return dict.fromkeys(names), {}, dict.fromkeys(names, NO_GPU)
    dev = torch.device("cuda")
    epochs = 2 if quick else 10
    ips = {a: {"off": round(images_per_s(a, dev, epochs), 1),
               "on": round(images_per_s(a, dev, epochs, channels_last=True, autocast="bf16"), 1)}
           for a in ARCHS}
    sh = shadow_speedup(dev, epochs, 3)
    over = {a: overhead_ratio(a, dev, epochs, 3) for a in ARCHS}
    head = {"cuda_images_per_s": ips, "cuda_defended_shadow_speedup_8": round(sh["speedup"], 2),
            "cuda_engine_overhead_ratio": {a: round(o["ratio"], 3) for a, o in over.items()},
            "cuda_dpsgd_vs_bare_opacus": None}
    reasons = {"cuda_dpsgd_vs_bare_opacus": "benchmarks.engine_dpsgd measures the device "
               "it runs on; its CUDA figure comes from a run of that module on the GPU"}
    return head, {"device_name": torch.cuda.get_device_name(dev), "shadows": sh,
                  "overhead": over}, reasons


def main(quick: bool = False) -> dict[str, Any]:
    before = torch.get_num_threads()
    load0 = os.getloadavg()
    cpu = torch.device("cpu")
    try:
        torch.set_num_threads(THREADS)
        sh = shadow_speedup(cpu, 5 if quick else 20, 1 if quick else 3)
        # about half a second per timed run: 30 epochs of the MLP, 3 of LeNet-5
        over = {a: overhead_ratio(a, cpu, 3 if quick else 30 if a == "mlp" else 3,
                                  1 if quick else 7 if a == "mlp" else 5) for a in ARCHS}
        cuda_head, cuda_details, cuda_reasons = _cuda(quick)
    finally:
        torch.set_num_threads(before)
    extra_head, extra, reasons = contributed()
    load1 = os.getloadavg()
    headline = {"defended_shadow_speedup_8": round(sh["speedup"], 2),
                "engine_overhead_ratio": {a: round(o["ratio"], 3) for a, o in over.items()},
                **extra_head, **cuda_head}
    rows = [{"figure": "defended_shadow_speedup_8", "case": "batched (train_many)",
             "median_s": round(sh["median_seconds"]["batched"], 3), "value": None},
            {"figure": "defended_shadow_speedup_8", "case": "one by one (train)",
             "median_s": round(sh["median_seconds"]["one_by_one"], 3),
             "value": round(sh["speedup"], 2)}]
    for a, o in over.items():
        rows.append({"figure": f"engine_overhead_ratio[{a}]", "case": "bare loop",
                     "median_s": round(o["median_seconds"]["bare"], 3), "value": None})
        rows.append({"figure": f"engine_overhead_ratio[{a}]", "case": "engine fit",
                     "median_s": round(o["median_seconds"]["engine"], 3),
                     "value": round(o["ratio"], 3)})
    notes = (f"CPU, {THREADS} thread; load average {load0[0]:.2f} at the start, "
             f"{load1[0]:.2f} at the end (2 shared cores). Shadows: RelaxLoss α = 1 (reference "
             f"parity), MLP on digits, {SHADOWS} shadows, {sh['epochs']} epochs, batch 64, "
             f"Adam; batched vs one by one {sh['speedup']:.2f}x (target >= "
             f"{SPEEDUP_TARGET:g}); their true-class probabilities differ by at most "
             f"{sh['max_true_prob_diff']:.1e} (float order). Overhead: fit / bare loop "
             + ", ".join(f"{a} {o['ratio']:.3f}" for a, o in over.items())
             + f" (target <= {OVERHEAD_TARGET:.2f}); final weights differ by at most "
             + ", ".join(f"{o['max_weight_diff']:.1e}" for o in over.values()) + ".")
    return {
        "name": "engine",
        "headline": headline,
        "reasons": {**reasons, **cuda_reasons},
        "rows": rows,
        "targets": {"defended_shadow_speedup_8": f">= {SPEEDUP_TARGET:g}",
                    "engine_overhead_ratio": f"<= {OVERHEAD_TARGET:.2f}"},
        "details": {"threads": THREADS, "load_start": list(load0), "load_end": list(load1),
                    "shadows": sh, "overhead": over, "contributed": extra,
                    "cuda": cuda_details},
        "notes": notes,
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(main(quick="--quick" in sys.argv), indent=1, default=str))
