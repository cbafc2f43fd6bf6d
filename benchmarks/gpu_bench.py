"""Training throughput of every registered architecture, per precision, and the fraction of the
device's peak it reaches (``python -m benchmarks gpu``; self-contained: one command on a GPU
machine writes ``benchmarks/results/gpu.cuda.json`` in a few minutes).

- **A step**: forward, cross-entropy, backward and an SGD step of the architecture's
  ``classifier`` (:func:`core.models.build_model`) on 3×32×32 inputs, 10 classes, through the
  engine's options (:mod:`core.engine`): the batch resident on the device, no host read inside
  the timed loop (one synchronisation before and one after), ``fp32`` or ``bf16`` autocast,
  and on CUDA channels-last too. Images per second over the timed steps after warm-up steps.
- **Achieved FLOP/s** = 3 × forward FLOPs (the cost model, :func:`core.models.forward_flops`)
  × images/s (a backward ≈ 2 forwards).
- **Peak**: dense matrix products measured on the same device in the same process (n × n by
  n × n, 2n³ FLOPs each, fp32 and bf16; the best rate of samples taken before every
  architecture and at the end, since on shared cores one sample can land in another
  process's time slice), and on CUDA also the nominal dense peak from the
  device's name where known (:data:`NOMINAL`). ``peak_fraction`` = achieved / the measured
  matmul rate of the same precision; ``nominal_fraction`` = achieved / the nominal peak.
- **CPU**: one thread (the runs' ``PRIVLAB_THREADS`` default), each architecture at its CPU
  width (``cpu_width``), batch 64 (as the ``models`` benchmark), 5 timed steps; **CUDA** (when present): width 1, batch 256,
  20 timed steps. TF32 stays at PyTorch's defaults (matmul off, cuDNN convolutions on),
  recorded in the details.

Headline: ``cpu_images_per_s`` and ``cpu_peak_fraction`` per architecture × precision;
``cuda_images_per_s`` / ``cuda_peak_fraction`` (per architecture × precision) or null with the
reason.
"""

from __future__ import annotations

import os
import platform
import time
from typing import Any

import torch

NO_GPU = "no GPU lent to this task"
THREADS = 1
#: nominal dense peak FLOP/s by device-name fragment: (fp32 non-tensor-core, bf16 tensor core)
NOMINAL: dict[str, tuple[float, float]] = {
    "H100 PCIe": (51.2e12, 756.0e12), "H100": (66.9e12, 989.4e12), "H200": (66.9e12, 989.4e12),
    "A100": (19.5e12, 312.0e12), "L4": (30.3e12, 121.0e12), "A10": (31.2e12, 125.0e12),
}
#: (batch, warm-up steps, timed steps, matmul n) per setting
SETTINGS = {"cpu": (64, 1, 5, 512), "cpu_quick": (4, 0, 1, 128),
            "cuda": (256, 3, 20, 8192), "cuda_quick": (64, 1, 2, 2048)}


def _load() -> float:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover
        return float("nan")


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def matmul_peak(dev: torch.device, dtype: torch.dtype, n: int, reps: int = 5) -> float:
    """Measured FLOP/s of an n × n by n × n product (2n³ FLOPs) in ``dtype`` on ``dev`` (the
    best of ``reps`` after a warm-up)."""
    g = torch.Generator().manual_seed(0)
    a = torch.rand(n, n, generator=g).to(dev, dtype)
    b = torch.rand(n, n, generator=g).to(dev, dtype)
    a @ b
    _sync(dev)
    best = float("inf")
    inner = 10 if dev.type == "cuda" else 1
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            a @ b
        _sync(dev)
        best = min(best, (time.perf_counter() - t0) / inner)
    return 2.0 * n ** 3 / best


def step_rate(arch: str, width: float, dev: torch.device, *, precision: str,
              channels_last: bool, batch: int, warmup: int, steps: int) -> float:
    """Images per second of ``steps`` training steps (after ``warmup``), data on ``dev``."""
    import torch.nn.functional as F

    from core.engine import autocast_for, engine_options, prepare_model
    from core.models import build_model

    with engine_options(autocast="bf16" if precision == "bf16" else None,
                        channels_last=channels_last):
        net = build_model(arch, (3, 32, 32), 10, width, seed=0).to(dev).train()
        fwd = prepare_model(net)
        opt = torch.optim.SGD(net.parameters(), lr=1e-3)
        g = torch.Generator().manual_seed(0)
        x = torch.rand(batch, 3, 32, 32, generator=g).to(dev)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, 10, (batch,), generator=g).to(dev)

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            with autocast_for(dev):
                loss = F.cross_entropy(fwd(x), y)
            loss.backward()
            opt.step()

        for _ in range(warmup):
            step()
        _sync(dev)
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        _sync(dev)
        return batch * steps / (time.perf_counter() - t0)


def _nominal(name: str) -> tuple[float, float] | None:
    return next((v for k, v in NOMINAL.items() if k in name), None)


def measure(dev: torch.device, quick: bool) -> dict[str, Any]:
    """Rows, images/s and peak fractions per architecture × precision on ``dev``."""
    from core.foundation.parts import ARCHITECTURES
    from core.models import forward_flops

    cuda = dev.type == "cuda"
    batch, warmup, steps, n = SETTINGS[("cuda" if cuda else "cpu") + ("_quick" if quick else "")]
    peaks = {"fp32": 0.0, "bf16": 0.0}

    def sample_peaks() -> None:
        # the peak is the best matmul rate seen during the run, sampled before every
        # architecture: on shared cores one sample can land in another process's slice
        for p, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            peaks[p] = max(peaks[p], matmul_peak(dev, dt, n))

    name = torch.cuda.get_device_name(dev) if cuda else (platform.processor() or platform.machine())
    nominal = _nominal(name) if cuda else None
    variants = [("fp32", False), ("bf16", False)] + ([("fp32", True), ("bf16", True)] if cuda else [])
    rows, rates, fracs = [], {}, {}
    measured: list[tuple[str, dict[str, Any]]] = []
    for arch, part in ARCHITECTURES.items():
        sample_peaks()
        width = 1.0 if cuda else (part.widths[0] if quick else part.cpu_width)
        flops = forward_flops(part, (3, 32, 32), 10, width)
        for precision, cl in variants:
            label = precision + ("_channels_last" if cl else "")
            load = _load()
            try:
                rate = step_rate(arch, width, dev, precision=precision, channels_last=cl,
                                 batch=batch, warmup=warmup, steps=steps)
            except (RuntimeError, NotImplementedError) as err:  # a kernel missing in bf16
                rows.append({"device": dev.type, "arch": arch, "precision": label,
                             "error": str(err).splitlines()[0][:200]})
                continue
            achieved = 3.0 * flops * rate
            rates.setdefault(arch, {})[label] = round(rate, 1)
            row = {"part": "cuda_step" if cuda else "cpu_step", "device": dev.type,
                   "device_name": name, "arch": arch, "width": width, "precision": precision,
                   "channels_last": cl, "batch": batch, "steps": steps,
                   "forward_mflops": round(flops / 1e6, 3), "images_per_s": round(rate, 1),
                   "gflops_per_s": round(achieved / 1e9, 3), "load": load}
            if nominal:
                row["nominal_fraction"] = round(achieved / nominal[precision == "bf16"], 4)
            rows.append(row)
            measured.append((label, row))
    sample_peaks()
    for label, row in measured:  # against the best matmul rate of the whole run
        frac = row["gflops_per_s"] * 1e9 / peaks[row["precision"]]
        row["peak_fraction"] = round(frac, 4)
        fracs.setdefault(row["arch"], {})[label] = round(frac, 4)
    return {"rows": rows, "images_per_s": rates, "peak_fraction": fracs,
            "peaks": {"device_name": name, "matmul_n": n,
                      "measured_fp32_tflops": round(peaks["fp32"] / 1e12, 4),
                      "measured_bf16_tflops": round(peaks["bf16"] / 1e12, 4),
                      "nominal_fp32_tflops": nominal and nominal[0] / 1e12,
                      "nominal_bf16_tflops": nominal and nominal[1] / 1e12},
            "setting": {"batch": batch, "warmup": warmup, "steps": steps}}


def main(quick: bool = False) -> dict[str, Any]:
    before = torch.get_num_threads()
    load_start = _load()
    try:
        torch.set_num_threads(THREADS)
        cpu = measure(torch.device("cpu"), quick)
    finally:
        torch.set_num_threads(before)
    cuda, reason = None, NO_GPU
    if torch.cuda.is_available():
        cuda, reason = measure(torch.device("cuda"), quick), None
    headline = {
        "cpu_images_per_s": cpu["images_per_s"],
        "cpu_peak_fraction": cpu["peak_fraction"],
        "cuda_images_per_s": cuda and cuda["images_per_s"],
        "cuda_peak_fraction": cuda and cuda["peak_fraction"],
        "cuda_reason": reason,
    }
    p = cpu["peaks"]
    notes = (f"CPU: {THREADS} thread, each architecture at its CPU width, batch "
             f"{cpu['setting']['batch']}, {cpu['setting']['steps']} timed step(s) after "
             f"{cpu['setting']['warmup']} warm-up; peak = a measured {p['matmul_n']}² matmul on "
             f"the same thread: {p['measured_fp32_tflops'] * 1e3:.1f} GFLOP/s fp32, "
             f"{p['measured_bf16_tflops'] * 1e3:.1f} GFLOP/s bf16. Load average {load_start} at "
             f"the start, {_load()} at the end (2 shared cores). Achieved = 3 × forward FLOPs × "
             "images/s. "
             + (f"CUDA: {cuda['peaks']['device_name']}, width 1, batch "
                f"{cuda['setting']['batch']}, {cuda['setting']['steps']} timed steps; measured "
                f"matmul {cuda['peaks']['measured_fp32_tflops']:.1f} (fp32) / "
                f"{cuda['peaks']['measured_bf16_tflops']:.1f} (bf16) TFLOP/s; nominal "
                f"{cuda['peaks']['nominal_fp32_tflops']} / {cuda['peaks']['nominal_bf16_tflops']}"
                " TFLOP/s." if cuda else f"CUDA: {NO_GPU}."))
    return {
        "name": "gpu",
        # the harness writes gpu.cuda.json when a GPU measured it (the CPU file stays)
        "file_stem": "gpu.cuda" if cuda else "gpu",
        "headline": headline,
        "rows": cpu["rows"] + (cuda["rows"] if cuda else []),
        "details": {"cpu_peaks": cpu["peaks"], "cuda_peaks": cuda and cuda["peaks"],
                    "threads": THREADS, "load_start": load_start,
                    "tf32": {"matmul": torch.backends.cuda.matmul.allow_tf32,
                             "cudnn": torch.backends.cudnn.allow_tf32}},
        "notes": notes,
    }


if __name__ == "__main__":
    import json
    import sys

    out = main(quick="--quick" in sys.argv)
    print(json.dumps(out["headline"], indent=1))
    print(out["notes"])
