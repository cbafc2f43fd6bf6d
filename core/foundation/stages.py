"""Stage caching: train → release → attack → score, each stage cached under the part of the
config that determines it (DESIGN: Architecture), so changing an attacker, its iterations or a
projection never retrains the model, and two runs that share a trained model train it once.

The engine defines the interface; the store (``cache.stages.DirStageStore``) implements it on
disk and is handed in by ``cache.store.ResultStore.get_or_run`` (core never imports cache).
A stage's output is a :class:`StageOutput`: arrays (npz), small JSON facts, and model weights
(``torch.save`` of state dicts, read back with ``torch.load(weights_only=True)``).

Every stage key holds the engine's source fingerprint, so a code change never serves a stale
stage.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from core.foundation.fingerprint import engine_id


@dataclass
class StageOutput:
    """What one stage leaves: ``arrays`` (name -> ndarray), ``meta`` (JSON-able),
    ``weights`` (name -> state dict of tensors)."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, dict[str, Any]] = field(default_factory=dict)


class StageStore(Protocol):
    """Where stage outputs live. ``load`` returns None on a miss or a corrupt entry; for a
    corrupt one (discarded) it first calls ``on_corrupt`` with a one-line reason."""

    def load(self, stage: str, key: str, *, map_location: str | None = None,
             on_corrupt: Callable[[str], None] | None = None) -> StageOutput | None: ...

    def save(self, stage: str, key: str, out: StageOutput) -> None: ...


class MemoryStageStore:
    """A process-local stage store (notebooks, tests): a dict, no files."""

    def __init__(self) -> None:
        self._d: dict[tuple[str, str], StageOutput] = {}
        self._lock = threading.Lock()

    def load(self, stage: str, key: str, *, map_location: str | None = None,
             on_corrupt: Callable[[str], None] | None = None) -> StageOutput | None:
        with self._lock:
            return self._d.get((stage, key))

    def save(self, stage: str, key: str, out: StageOutput) -> None:
        with self._lock:
            self._d[(stage, key)] = out


def stage_key(stage: str, part: dict[str, Any]) -> str:
    """sha256 of the stage name, the canonical JSON of the config part that determines it, the
    engine id (version + source fingerprint) and any training override in force
    (:mod:`core.foundation.overrides`; none: the key is as it always was)."""
    from core.foundation.overrides import active

    body: dict[str, Any] = {"stage": stage, "part": part, "engine": engine_id()}
    if active():
        body["overrides"] = list(active())
    payload = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


class Stages:
    """A run's view of the stage store: ``get(stage, part, compute)`` returns the cached output
    or computes and saves it, and records per stage whether it was a hit (``log``) and how long
    a computed one took (``seconds``); a cached entry that failed its checksums and was
    recomputed leaves a line in :attr:`notes` (the run adds them to its Result)."""

    def __init__(self, store: StageStore | None, *, map_location: str | None = None) -> None:
        self.store = store
        self.map_location = map_location
        self.log: dict[str, str] = {}
        self.seconds: dict[str, float] = {}
        self.notes: list[str] = []

    def get(self, stage: str, part: dict[str, Any], compute: Callable[[], StageOutput],
            *, label: str | None = None) -> tuple[StageOutput, str]:
        """(output, key). ``label`` names the entry in :attr:`log` (default: ``stage``)."""
        key = stage_key(stage, part)
        name = label or stage
        if self.store is not None:
            hit = self.store.load(stage, key, map_location=self.map_location,
                                  on_corrupt=self.notes.append)
            if hit is not None:
                self.log[name] = "hit"
                return hit, key
        t0 = time.perf_counter()
        out = compute()
        self.seconds[name] = time.perf_counter() - t0
        if self.store is not None:
            self.store.save(stage, key, out)
        self.log[name] = "computed"
        return out, key
