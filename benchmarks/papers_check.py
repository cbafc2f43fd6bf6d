"""Paper check (issue #22 item 6): the claims table of :mod:`core.papers`, and the CPU cost of
the paper-scale presets.

Rows: one per declared claim (:data:`core.papers.CLAIMS`), our numbers read from the stored
benchmark files each claim names. ``preset_costs``: for each CUDA preset
(:data:`core.papers.PRESETS`), the paper's model (ResNet-18, LeNet-5, TAPPFL's CIFAR-10
extractor + privacy net, Inf2Guard's DRA encoder + utility net) built here and timed for a few
SGD steps (forward, cross-entropy, backward, update) on a synthetic batch of the paper's shape,
after one warm-up step; seconds per step × the paper's step count = the CPU estimate the table
shows. Nothing is downloaded and no real CIFAR-10 / CelebA image is read: only the time per
step is measured, the rest is arithmetic. Timed with ``THREADS`` torch thread(s) on a shared
machine (its load average is in the file), so the estimates are rough upper-side figures for
a quiet machine with more cores.

``headline``: ``paper_claims_checked`` (claims with a measured direction in our default
setting) and ``paper_claims_direction_holds``.
``python -m benchmarks papers`` or ``python -m benchmarks.papers_check`` → ``results/papers.json``.
"""

from __future__ import annotations

import time
from typing import Any

THREADS = 1
STEPS = 3


#: what each timed model is, and what of the paper's training it leaves out (so the estimate
#: is a lower bound where a network of the paper's step is not timed)
TIMED = {
    "resnet18": "ResNet-18 with a CIFAR stem, one network (Inf2Guard's encoder, membership and "
                "utility nets are each about this size: the estimate is a lower bound)",
    "lenet5": "LeNet-5, the whole model",
    "tappfl_cifar": "TAPPFL's CIFAR-10 extractor + privacy network (the utility critic not "
                    "timed: a lower bound)",
    "inf2guard_dra": "Inf2Guard's DRA encoder + utility network (decoder and perturbation net "
                     "not timed: a lower bound)",
}


def _conv(cin: int, cout: int, k: int = 3):
    from torch import nn

    return [nn.Conv2d(cin, cout, k, padding=k // 2), nn.BatchNorm2d(cout), nn.ReLU()]


def build_timed_model(name: str, n_classes: int = 10):
    """The paper's architecture for ``name`` (the specs' §5.3 / B7 layer lists)."""
    from torch import nn

    if name == "resnet18":  # CIFAR stem (spec 004 §5.3: conv3-64, BN, ReLU, MaxPool)
        import torchvision

        m = torchvision.models.resnet18(num_classes=n_classes)
        m.conv1 = nn.Conv2d(3, 64, 3, stride=1, padding=1, bias=False)
        return m
    if name == "lenet5":
        from core.nn import LeNet5

        return LeNet5((3, 32, 32), n_classes)
    if name == "tappfl_cifar":  # extractor (B7) then the privacy network on its output
        pool = nn.MaxPool2d(2)
        layers = [*_conv(3, 64), *_conv(64, 64), pool, *_conv(64, 128), *_conv(128, 128), pool,
                  *_conv(128, 256), *_conv(256, 256), *_conv(256, 256), nn.MaxPool2d(2),
                  *_conv(256, 512), *_conv(512, 512), *_conv(512, 512), nn.MaxPool2d(2),
                  *_conv(512, 512), *_conv(512, 512), *_conv(512, 512), nn.MaxPool2d(2),
                  nn.Flatten(), nn.Linear(512, 4096), nn.ReLU(), nn.Dropout(),
                  nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(), nn.Linear(4096, 2)]
        return nn.Sequential(*layers)
    if name == "inf2guard_dra":  # 2-conv encoder (no ReLU) then the utility network (§5.3)
        enc = [nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32),
               nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32)]
        util = [nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64),
                nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
                *_conv(128, 128), *_conv(128, 128), *_conv(128, 128), *_conv(128, 64),
                nn.Flatten(), nn.Linear(64 * 32 * 32, 1024), nn.BatchNorm1d(1024), nn.ReLU(),
                nn.Linear(1024, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, n_classes)]
        return nn.Sequential(*enc, *util)
    raise ValueError(f"timed model: got {name!r}")


def our_mlp(widths: tuple[int, int, int], n_classes: int = 10):
    """The preset's own model: our runners' encoder (core.nn.Encoder) and a linear task head."""
    from torch import nn

    from core.nn import Encoder

    d, hidden, rep = widths
    return nn.Sequential(nn.Flatten(), Encoder(d, hidden=hidden, rep_dim=rep), nn.ReLU(),
                         nn.Linear(rep, n_classes))


def time_steps(name: str | tuple[int, int, int], batch_shape: tuple[int, int, int, int],
               steps: int = STEPS, device: str = "cpu") -> dict[str, Any]:
    """Seconds per SGD step of ``name`` (a paper model, or our MLP's widths) on a synthetic
    batch (one warm-up step first)."""
    import torch

    gen = torch.Generator().manual_seed(0)
    model = (our_mlp(name) if isinstance(name, tuple) else build_timed_model(name)).to(device)
    n_classes = model(torch.zeros(2, *batch_shape[1:], device=device)).shape[-1]
    x = torch.rand(batch_shape, generator=gen).to(device)
    y = torch.randint(0, n_classes, (batch_shape[0],), generator=gen).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    sps = (time.perf_counter() - t0) / steps
    params = sum(p.numel() for p in model.parameters())
    return {"seconds_per_step": sps, "steps_timed": steps, "parameters": params,
            "device": device, "threads": torch.get_num_threads()}


def measure_costs(quick: bool = False) -> dict[str, dict[str, Any]]:
    """Every preset's measured step cost and its extrapolation (seconds)."""
    import torch

    from core.papers import PRESETS

    before = torch.get_num_threads()
    out: dict[str, dict[str, Any]] = {}
    cache: dict[tuple, dict[str, Any]] = {}
    try:
        torch.set_num_threads(THREADS)
        for pid, p in PRESETS.items():
            key = (p.timed_model, p.batch_shape)
            if key not in cache:
                cache[key] = time_steps(p.timed_model, p.batch_shape, 1 if quick else STEPS)
            c = dict(cache[key])
            if p.our_widths:  # the preset's own MLP, same batch shape
                own = time_steps(p.our_widths, p.batch_shape, 1 if quick else STEPS)
                c.update(preset_seconds_per_step=own["seconds_per_step"],
                         preset_parameters=own["parameters"],
                         preset_estimate_seconds=own["seconds_per_step"] * p.steps)
            c.update(timed_model=p.timed_model, timed_description=TIMED[p.timed_model],
                     batch_shape=list(p.batch_shape),
                     paper_steps=p.steps, steps_note=p.steps_note,
                     estimate_seconds=c["seconds_per_step"] * p.steps,
                     estimate="extrapolated from timed steps on a synthetic batch")
            out[pid] = c
    finally:
        torch.set_num_threads(before)
    return out


def main(quick: bool = False) -> dict[str, Any]:
    from core.papers import build_table, format_hours, headline

    t0 = time.perf_counter()
    costs = measure_costs(quick)
    import os

    load_after = [round(x, 2) for x in os.getloadavg()]
    rows = build_table(costs=costs, cuda=False)
    flat = [{"paper": r["paper"], "claim_id": r["claim_id"], "statement": r["statement"],
             "paper_number": r["paper_number"], "paper_setting": r["paper_setting"],
             "metric": r["metric"], "our_setting": r["our_setting"],
             "ours_default": r["ours_default"]["text"], "ours_default_values": r["ours_default"]["value"],
             "ours_default_sources": r["ours_default"].get("sources"),
             "ours_default_resolved": r["ours_default"].get("resolved"),
             "ours_largest": r["ours_largest"]["text"],
             "ours_largest_is_estimate": r["ours_largest"].get("estimate", False),
             "direction_holds": r["direction_holds"], "note": r["note"]} for r in rows]
    h = headline(rows)
    est = "; ".join(f"{pid} ≈ {format_hours(c['estimate_seconds'])} "
                    f"({c['seconds_per_step']:.3g} s/step × {c['paper_steps']:,})"
                    for pid, c in costs.items())
    failing = [r["claim_id"] for r in rows if r["direction_holds"] is False]
    missing = [r["claim_id"] for r in rows if r["direction_holds"] is None]
    notes = (f"{h['paper_claims_checked']} of {h['paper_claims_declared']} claims measured in "
             f"our default setting, {h['paper_claims_direction_holds']} hold (point estimates; "
             f"{h['paper_claims_within_intervals']} within their stored 95 % intervals); does not hold: "
             f"{', '.join(failing) or 'none'}; not measured: {', '.join(missing) or 'none'}. "
             "Our numbers are read from the stored benchmark files each row names (never typed); "
             "the paper's are quoted from shared/spec. CUDA presets not run here (no CIFAR-10 / "
             f"CelebA on this machine, nothing downloaded); CPU estimates, {THREADS} torch thread, "
             f"loaded shared machine (load average after timing {load_after} on "
             f"{os.cpu_count()} cores; step times scale with it): {est}.")
    return {"name": "papers", "headline": {k: h[k] for k in ("paper_claims_checked",
                                                           "paper_claims_direction_holds")},
            "rows": flat, "preset_costs": costs, "notes": notes, "quick": quick,
            "seconds": round(time.perf_counter() - t0, 1)}


if __name__ == "__main__":
    import sys

    from benchmarks.__main__ import main as harness

    sys.exit(harness(["papers", *sys.argv[1:]]))
