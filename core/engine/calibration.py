"""What a training step of a registered architecture costs on this machine, measured once and
kept per machine and engine (:func:`core.foundation.fingerprint.machine_fingerprint`,
:func:`~core.foundation.fingerprint.engine_fingerprint`).

A calibration times a few of the engine's training steps (forward, cross-entropy, backward,
SGD; :func:`core.engine.loop.fit`) of the architecture itself, at the width and on the input shape the caption is about, on random data
of a batch of up to :data:`BATCH` images, under the run's thread budget
(:func:`core.foundation.threads.thread_limits`). Timing the architecture itself rather than one
reference network scaled by FLOPs keeps what FLOPs alone miss: the committed step rates differ
about threefold in FLOP/s between the MLP and the ResNets, and a tiny network's rate is bound by
the step's fixed costs, not its FLOPs. The batch shrinks so one step does at most
:data:`STEP_FLOPS` of work (3 × forward FLOPs per image, Kaplan et al. 2020), which bounds a
calibration at a wide network to a second or two here; one warm-up step, then steps until
:data:`MIN_SECONDS` have passed (at most :data:`MAX_STEPS`).

Kept in ``calibration/<machine>/<engine>.json`` under the cache root
(:func:`core.foundation.cache_root.resolve_root`): another machine, another torch build or an
engine change of any source file measures again. Torch is imported only to measure.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from core.foundation import fingerprint
from core.foundation.cache_root import resolve_root

__all__ = ["BATCH", "MAX_STEPS", "MIN_SECONDS", "STEP_FLOPS", "StepRate", "cache_file",
           "cached_rate", "step_rate"]

#: the largest batch timed (the runners train with batches of 10 to 64)
BATCH = 32
#: training FLOPs one timed step may do at most (the batch shrinks to stay under it, to 2)
STEP_FLOPS = 4e9
#: timed steps run until this many seconds have passed ...
MIN_SECONDS = 0.3
#: ... or this many steps
MAX_STEPS = 8


@dataclass(frozen=True)
class StepRate:
    """One calibration: images per second of training steps, and how it was taken."""

    images_per_s: float
    batch: int
    steps: int
    seconds: float
    threads: int
    load: float | None
    device: str
    device_name: str

    def text(self) -> str:
        """``measured on this machine: 1,234 images/s in training steps of batch 32 (1 thread,
        load 2.1)``: what a caption says it is based on."""
        on = "this machine" if self.device == "cpu" else f"this machine's {self.device_name}"
        load = "" if self.load is None else f", load {self.load:.1f}"
        threads = f"{self.threads} thread" + ("s" if self.threads != 1 else "")
        return (f"measured on {on}: {self.images_per_s:,.0f} images/s in training steps of "
                f"batch {self.batch} ({threads}{load})")


def cache_file(root: str | Path | None = None) -> Path:
    """This machine's and engine's calibration file under the cache root."""
    return (resolve_root(root) / "calibration" / fingerprint.machine_fingerprint()[:16]
            / f"{fingerprint.engine_fingerprint()[:16]}.json")


def _key(arch: str, width: float, in_shape: Iterable[int], n_classes: int, device: str,
         threads: int) -> str:
    shape = "x".join(str(int(s)) for s in in_shape)
    return f"{arch}|{float(width):g}|{shape}|{int(n_classes)}|{device}|{threads}"


def _threads() -> int:
    from core.foundation.threads import compute_threads

    return compute_threads()


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _from_entry(entry: Any) -> StepRate | None:
    try:
        rate = StepRate(**entry)
    except TypeError:
        return None
    ok = isinstance(rate.images_per_s, (int, float)) and math.isfinite(rate.images_per_s)
    return rate if ok and rate.images_per_s > 0 else None


def cached_rate(arch: str, width: float, in_shape: Iterable[int], n_classes: int,
                device: str = "cpu", *, root: str | Path | None = None) -> StepRate | None:
    """The stored calibration of ``arch`` at ``width`` on ``in_shape`` with ``n_classes``
    classes on ``device`` for this machine, engine and thread budget; None when not measured."""
    key = _key(arch, width, tuple(in_shape), n_classes, device, _threads())
    return _from_entry(_read(cache_file(root)).get(key))


def _write(path: Path, key: str, rate: StepRate) -> None:
    """Add ``key`` to the file (read again just before: another process may have added one),
    replaced atomically so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _read(path)
    data[key] = asdict(rate)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".calibration-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


class _Enough(Exception):
    """Raised from the engine's epoch callback once the timed steps are enough."""


def _measure(arch: str, width: float, in_shape: tuple[int, ...], n_classes: int,
             device: str) -> StepRate:
    """Time training steps of a fresh ``arch`` network on random data (see the module): the
    engine's own steps (:func:`core.engine.loop.fit`, one step per epoch over one batch, so
    a step costs what a run's step costs), the first one untimed."""
    import torch

    from core.engine.loop import Supervised, fit
    from core.engine.recipe import Recipe
    from core.foundation.threads import thread_limits
    from core.models import build_model, forward_flops

    dev = torch.device(device)
    per_image = 3.0 * forward_flops(arch, in_shape, n_classes, width)
    batch = int(max(2, min(BATCH, STEP_FLOPS // max(per_image, 1.0))))
    ends: list[float] = []

    def on_epoch(epoch: int, log: Any) -> None:
        # the epoch's loss was read back to the host, so its device work has finished
        ends.append(time.perf_counter())
        if len(ends) > 1 and ends[-1] - ends[0] >= MIN_SECONDS:
            raise _Enough

    with thread_limits() as threads:
        net = build_model(arch, in_shape, n_classes, width, seed=0).to(dev)
        g = torch.Generator().manual_seed(0)
        x = torch.rand(batch, *in_shape, generator=g).to(dev)
        y = torch.randint(0, n_classes, (batch,), generator=g).to(dev)
        recipe = Recipe(epochs=1 + MAX_STEPS, batch_size=batch, lr=1e-3, optimizer="sgd")
        try:
            fit(net, Supervised(x.reshape(batch, -1), y, shape=tuple(in_shape)),
                recipe=recipe, order=torch.Generator().manual_seed(0), on_epoch=on_epoch)
        except _Enough:
            pass
    steps, seconds = len(ends) - 1, ends[-1] - ends[0]
    name = "CPU" if dev.type == "cpu" else torch.cuda.get_device_name(dev)
    return StepRate(round(batch * steps / seconds, 2), batch, steps, round(seconds, 6),
                    int(threads), _load(), device, name)


def step_rate(arch: str, width: float, in_shape: Iterable[int], n_classes: int,
              device: str = "cpu", *, measure: bool = True,
              root: str | Path | None = None) -> StepRate | None:
    """:func:`cached_rate`, else (``measure``) a calibration taken now and stored; None when
    not measured and ``measure`` is off or where the step fails (a kernel missing on
    ``device``). A cache that cannot be written loses only the keeping: the rate is returned."""
    shape = tuple(int(s) for s in in_shape)
    got = cached_rate(arch, width, shape, n_classes, device, root=root)
    if got is not None or not measure:
        return got
    try:
        rate = _measure(arch, float(width), shape, int(n_classes), device)
    except (RuntimeError, NotImplementedError, ValueError):
        return None
    try:
        _write(cache_file(root), _key(arch, width, shape, n_classes, device, rate.threads), rate)
    except OSError:  # a read-only cache: the rate still holds for this call
        pass
    return rate
