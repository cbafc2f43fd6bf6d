"""What training a registered architecture costs, before a run: parameters, forward FLOPs
(:func:`core.models.forward_flops`), the image passes a config's training makes, and the
time those take on a CPU and on a GPU.

The time on this machine's CPU (and on its GPU where it has one) is image passes ÷ the images
per second of the architecture's own training steps, timed here on first use and kept per
machine and engine (:mod:`core.engine.calibration`). Until then, or where it is not measured
(``calibrate=False``), the time is image passes × 3 × forward FLOPs / FLOP/s (a training step
≈ forward + backward ≈ 3 × the forward; Kaplan et al. 2020's rule) with FLOP/s measured on
the machine that made the committed result files, said so with the files' provenance
(:mod:`core.foundation.provenance`): the ``gpu`` benchmark's (per architecture, fp32) or else
the ``models`` benchmark's training steps of the same architecture, so each architecture's own
efficiency is kept (an MLP reaches a far smaller fraction of the peak than a ResNet). Without
a GPU here, a GPU's time is the ``gpu`` benchmark's CUDA measurement on another machine where
one was made (``gpu.cuda.json``), else an estimate from the FLOPs at :data:`GPU_UTILISATION`
of an H100-class device's FP32 peak, and labelled so.

Torch-free at import (the dashboard imports it on page load); :func:`arch_cost` builds on the
meta device.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.foundation.costs import config_value

__all__ = ["GPU_NOMINAL", "GPU_UTILISATION", "ModelCost", "arch_cost", "architecture_choices",
           "cpu_rate", "fastest_images_per_s", "format_count", "format_duration", "gpu_rate",
           "image_passes", "model_field", "timed_here"]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
#: the GPU class a GPU estimate is for, and its dense FP32 (non-tensor-core) peak FLOP/s
GPU_NOMINAL = ("H100-class GPU", 66.9e12)
#: the fraction of that peak an estimate assumes a training step reaches (small 32×32 conv
#: nets reach a few tens of TFLOP/s on an H100 in bf16; 30 % of the FP32 peak ≈ 20 TFLOP/s)
GPU_UTILISATION = 0.30


def _fl_share(cfg: Mapping[str, Any], prefix: str) -> float:
    """Row passes of a FedAvg training per pass over the train split: rounds × local epochs ×
    the fraction of devices each round."""
    return (float(config_value(cfg, f"{prefix}rounds", 1)) * float(config_value(cfg, f"{prefix}local_epochs", 1))
            * float(config_value(cfg, f"{prefix}fraction_fit", 1.0)))


def _membership(cfg: Mapping[str, Any], n_train: int) -> float:
    # the target and its K shadow models each pass `epochs` times over `members` rows
    epochs = float(config_value(cfg, "defense.epochs", None) or config_value(cfg, "train.epochs", 60))
    return ((1 + float(config_value(cfg, "attack.shadows", 16))) * epochs
            * float(config_value(cfg, "train.members", 500)))


def _gradient_leakage(cfg: Mapping[str, Any], n_train: int) -> float:
    if config_value(cfg, "train.setting", "central") == "central":
        return float(config_value(cfg, "train.epochs", 5)) * n_train
    return _fl_share(cfg, "train.fl.") * n_train


def _property(cfg: Mapping[str, Any], n_train: int) -> float:
    sizes = (float(config_value(cfg, "subsets.size_min", 32)) + float(config_value(cfg, "subsets.size_max", 256)))
    subsets = float(config_value(cfg, "subsets.train_per_bin", 500)) * float(config_value(cfg, "subsets.n_values", 4))
    epochs = float(config_value(cfg, "train.epochs", 20)) + float(config_value(cfg, "train.pretrain_epochs", 3))
    return epochs * subsets * sizes / 2


def _repr_reconstruction(cfg: Mapping[str, Any], n_train: int) -> float:
    return float(config_value(cfg, "train.epochs", 10)) * min(n_train, int(config_value(cfg, "train.max_train", 3000)))


def _attribute_privacy(cfg: Mapping[str, Any], n_train: int) -> float:
    return (float(config_value(cfg, "pretrain_epochs", 1)) + _fl_share(cfg, "fl.")) * n_train


#: experiment kind → image passes of the network ``model`` names in one run of the config
#: (the trained model's; attackers, decoders and heads are extra and not counted)
PASSES: dict[str, Callable[[Mapping[str, Any], int], float]] = {
    "membership": _membership, "gradient_leakage": _gradient_leakage, "property": _property,
    "repr_reconstruction": _repr_reconstruction, "attribute_privacy": _attribute_privacy,
}


def image_passes(cfg: Mapping[str, Any], n_train: int) -> float | None:
    """Images the config's trained network sees in training (forward + backward each), with
    ``n_train`` rows in its train split; None for a kind without a rule."""
    rule = PASSES.get(str(cfg.get("kind")))
    return None if rule is None else float(rule(cfg, int(n_train)))


def _read(name: str) -> dict[str, Any]:
    try:
        data = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@lru_cache(maxsize=4)
def _measured_rows(name: str) -> tuple[tuple[str, float, float, str, float], ...]:
    """(arch, width, FLOP/s, what, images/s) of the fp32 training-step rows of benchmark
    result ``name``."""
    out = []
    for r in _read(name).get("rows", []):
        if not isinstance(r, dict) or r.get("part") not in ("cpu_images_per_s", "cpu_step"):
            continue
        if r.get("precision", "fp32") != "fp32" or r.get("channels_last"):
            continue
        g, ips = r.get("gflops_per_s"), r.get("images_per_s")
        if (isinstance(g, (int, float)) and g > 0 and math.isfinite(g)
                and isinstance(ips, (int, float)) and ips > 0):
            out.append((str(r["arch"]), float(r.get("width", 1.0)), float(g) * 1e9,
                        (f"{ips:,.0f} images/s at width {float(r.get('width', 1)):g}, "
                        f"load {r.get('load')}"), float(ips)))
    return tuple(out)


def _origin_note(names: tuple[str, ...]) -> str:
    """Each file's mark where another engine made it (:mod:`core.foundation.provenance`), joined."""
    from core.foundation.provenance import origin_of

    marks = [origin_of(_read(n), n).mark() for n in dict.fromkeys(names)]
    return "".join(f"; {m}" for m in marks if m)


def cpu_rate(arch: str, width: float = 1.0) -> tuple[float, str, tuple[str, ...]] | None:
    """(FLOP/s of ``arch``'s training steps on a CPU, from what, the result files read): the
    fastest fp32 row of the same architecture at the nearest width measured by the ``gpu``
    and ``models`` benchmarks (3×32×32, one thread); another architecture's median where this
    one was not measured; None when nothing was. The rows come from committed files made on
    whatever machine ran those benchmarks, so the text says it is an estimate from there."""
    rows = [(*r, name) for name in ("gpu.json", "models.json") for r in _measured_rows(name)]
    own = [r for r in rows if r[0] == arch]
    if own:
        # the nearest width measured; of those the fastest (a loaded machine only slows a step)
        near = min(abs(math.log(r[1] / max(width, 1e-9))) for r in own)
        best = max((r for r in own if abs(math.log(r[1] / max(width, 1e-9))) == near),
                   key=lambda r: r[2])
        bench = best[5].split(".")[0]
        return best[2], (f"an estimate from another machine: {best[3]} in the {bench} "
                         f"benchmark, not measured on this one"
                         + _origin_note((best[5],))), (best[5],)
    if rows:
        fs = sorted(r[2] for r in rows)
        names = tuple(dict.fromkeys(r[5] for r in rows))
        return fs[len(fs) // 2], (f"an estimate from another machine: the median measured "
                                  f"architecture's FLOP/s there, {arch} not measured"
                                  + _origin_note(names)), names
    return None


def fastest_images_per_s() -> float | None:
    """The most images per second any measured training step reached here: a step's fixed
    costs (the optimiser, the framework) bound a tiny network's rate, which its FLOPs alone
    would overstate."""
    rates = [r[4] for name in ("gpu.json", "models.json") for r in _measured_rows(name)]
    return max(rates) if rates else None


def gpu_rate(arch: str) -> tuple[float, str, bool]:
    """(FLOP/s on a GPU, from what, measured here?): the ``gpu`` benchmark's CUDA row of
    ``arch`` (best precision) where one was run, on another machine, else
    :data:`GPU_UTILISATION` × the H100-class FP32 peak (an estimate); never measured here
    (:func:`arch_cost` times this machine's GPU)."""
    rows = [r for r in _read("gpu.cuda.json").get("rows", [])
            if isinstance(r, dict) and r.get("arch") == arch and r.get("device") == "cuda"
            and isinstance(r.get("gflops_per_s"), (int, float))]
    if rows:
        best = max(rows, key=lambda r: r["gflops_per_s"])
        return (best["gflops_per_s"] * 1e9,
                (f"an estimate from another machine: its {best.get('device_name', 'GPU')} "
                 f"({best.get('precision')}) in the gpu benchmark"
                 + _origin_note(("gpu.cuda.json",))), False)
    name, peak = GPU_NOMINAL
    return (GPU_UTILISATION * peak, (f"estimate: {name} at an assumed {GPU_UTILISATION:.0%} of "
            f"its {peak / 1e12:.0f} TFLOP/s FP32 peak"), False)


@dataclass(frozen=True)
class ModelCost:
    """One architecture at one width on one data shape, and a run's training of it."""

    arch: str
    width: float
    params: int
    forward_flops: int
    passes: float | None
    cpu_seconds: float | None
    cpu_based_on: str
    gpu_seconds: float | None
    gpu_based_on: str
    gpu_measured: bool

    @property
    def train_flops(self) -> float | None:
        return None if self.passes is None else 3.0 * self.forward_flops * self.passes


@lru_cache(maxsize=256)
def _counts(arch: str, width: float, in_shape: tuple[int, ...], n_classes: int) -> tuple[int, int]:
    from core.models import forward_flops, param_count

    return (param_count(arch, in_shape, n_classes, width),
            forward_flops(arch, in_shape, n_classes, width))


def _measured(arch: str, width: float, in_shape: tuple[int, ...], n_classes: int,
              passes: float, device: str, calibrate: bool) -> tuple[float, str] | None:
    """(seconds, from what) of ``passes`` image passes at this machine's measured step rate
    on ``device`` (:func:`core.engine.calibration.step_rate`; timed now when ``calibrate``
    and not yet kept); None when not measured."""
    from core.engine.calibration import step_rate

    rate = step_rate(arch, width, in_shape, n_classes, device, measure=calibrate)
    return None if rate is None else (float(passes) / rate.images_per_s, rate.text())


def timed_here(arch: str) -> bool:
    """Whether ``arch`` is one of the registry's own architectures (not registered from a
    user's file, which only a run may execute)."""
    from core.foundation.parts import ARCHITECTURES

    return arch in ARCHITECTURES and getattr(ARCHITECTURES.get(arch), "registered_by",
                                             None) is None


def _cuda_here() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def arch_cost(arch: str, width: float, in_shape: tuple[int, ...], n_classes: int,
              passes: float | None = None, *, calibrate: bool = True) -> ModelCost:
    """:class:`ModelCost` of ``arch`` at ``width`` on data of ``in_shape`` with ``n_classes``
    classes, trained for ``passes`` image passes (None: counts only). ``calibrate``: time the
    architecture's step on this machine where it is not yet kept (a second or less; the
    registry's own architectures only: a model registered from a file is never run to price
    it); off: the kept timing, else the estimate from another machine's files."""
    from core.models import registered_counts

    shape = tuple(int(s) for s in in_shape)
    # a registered model's measured counts are read each time (it may be registered again)
    counted = registered_counts(arch, width, in_shape, n_classes)
    params, fwd = counted or _counts(arch, float(width), shape, int(n_classes))
    calibrate = calibrate and counted is None and timed_here(arch)
    cpu_s = gpu_s = None
    cpu_from, gpu_from, measured = "no training-step measurement here", "", False
    if passes is not None:
        work = 3.0 * fwd * float(passes)
        here = _measured(arch, float(width), shape, int(n_classes), passes, "cpu", calibrate)
        got = None if here is not None else cpu_rate(arch, width)
        if here is not None:
            cpu_s, cpu_from = here
        elif got is not None:
            cpu_s, cpu_from = work / got[0], got[1]
            floor = fastest_images_per_s()
            if floor:
                cpu_s = max(cpu_s, float(passes) / floor)
        gpu_here = (_measured(arch, float(width), shape, int(n_classes), passes, "cuda",
                              calibrate) if _cuda_here() else None)
        if gpu_here is not None:
            (gpu_s, gpu_from), measured = gpu_here, True
        else:
            rate, gpu_from, _ = gpu_rate(arch)
            gpu_s = work / rate
    return ModelCost(arch, float(width), params, fwd, passes, cpu_s, cpu_from, gpu_s, gpu_from,
                     measured)


def format_duration(s: float | None) -> str:
    """``≈ 40 s`` / ``≈ 12 min`` / ``≈ 3.1 h`` / ``≈ 8 days`` (an estimate: two figures)."""
    if s is None or not math.isfinite(s):
        return "n/a"
    if s < 90:
        return f"≈ {max(s, 0.1):.2g} s"
    if s < 5400:
        return f"≈ {s / 60:.2g} min"
    if s < 48 * 3600:
        return f"≈ {s / 3600:.2g} h"
    if s < 365 * 86400:
        return f"≈ {s / 86400:.2g} days"
    return f"≈ {s / (365 * 86400):.2g} years"


def format_count(n: float) -> str:
    """``1.2 M`` / ``36 k`` / ``512``."""
    for div, unit in ((1e12, " T"), (1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:.3g}"


def model_field(kind: str) -> bool:
    """True when experiment ``kind``'s config has a ``model`` block naming a registered
    architecture (:class:`core.config.schema.ModelSpec`)."""
    from core.config.schema import CONFIG_MODELS, ModelSpec

    cls = CONFIG_MODELS.get(kind)
    info = None if cls is None else cls.model_fields.get("model")
    return info is not None and info.annotation is ModelSpec


def architecture_choices(config: Mapping[str, Any],
                         in_shape: tuple[int, ...] | None) -> list[tuple[str, str | None]]:
    """Every registered architecture (registry order) with None where the config takes it (at
    its CPU width) on data of ``in_shape``, else the one-line reason it does not: the data's
    input (:meth:`core.foundation.parts.ArchitecturePart.check_input`) or the config's own validation
    (the kind refuses the architecture, a setting conflicts with it). The default model is
    always offered: the page's settings are its own to validate."""
    from core.config.schema import ConfigError, ModelSpec, parse_config
    from core.foundation.parts import ARCHITECTURES

    default = ModelSpec().arch
    base = {k: v for k, v in config.items() if k != "model"}
    data = config_value(config, "data.name")
    out: list[tuple[str, str | None]] = []
    for name, part in ARCHITECTURES.items():
        if name == default:
            out.append((name, None))
            continue
        try:
            if in_shape is not None:
                part.check_input(in_shape, data)
        except (ConfigError, ValueError) as err:
            out.append((name, str(err).splitlines()[0].removeprefix("model.arch: ")))
            continue
        try:
            # the page's config with this model, never the page's own config again (the Run
            # validates that once): an error that does not name the model is the page's own
            parse_config({**base, "model": {"arch": name, "width": part.cpu_width}})
        except (ConfigError, ValueError) as err:
            text = str(err).splitlines()[0]
            if "model" in text:
                out.append((name, text.removeprefix("model.arch: ")))
                continue
        out.append((name, None))
    return out
