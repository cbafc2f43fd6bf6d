"""On-disk stage store (``core.stages.StageStore``): ``root/stages/<stage>/<key[:2]>/<key>/``
holding ``meta.json``, ``arrays.npz`` and ``weights.pt``.

Writes are atomic (a temp dir renamed into place; the first writer wins, a second identical
result is discarded). Reads use ``np.load(allow_pickle=False)`` and
``torch.load(weights_only=True)``; an unreadable entry is removed and reported as a miss.

``meta.json`` also records the engine id that wrote the entry (``"__engine__"``, stripped on
load), so ``cache.gc`` can tell entries of an older engine; a hit touches ``meta.json``
(mtime/atime), so its mtime is the entry's last use (LRU, even on ``noatime`` mounts).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import uuid
from pathlib import Path

import numpy as np

from core.fingerprint import engine_id
from core.stages import StageOutput

META, ARRAYS, WEIGHTS = "meta.json", "arrays.npz", "weights.pt"
#: key in meta.json naming the engine that wrote the entry (not part of StageOutput.meta)
ENGINE_KEY = "__engine__"


class DirStageStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _dir(self, stage: str, key: str) -> Path:
        return self.root / stage / key[:2] / key

    def load(self, stage: str, key: str, *, map_location: str | None = None) -> StageOutput | None:
        d = self._dir(stage, key)
        if not (d / META).exists():
            return None
        try:
            meta = json.loads((d / META).read_text())
            meta.pop(ENGINE_KEY, None)
            arrays: dict[str, np.ndarray] = {}
            if (d / ARRAYS).exists():
                with np.load(d / ARRAYS, allow_pickle=False) as z:
                    arrays = {k: z[k] for k in z.files}
            weights = {}
            if (d / WEIGHTS).exists():
                import torch

                weights = torch.load(d / WEIGHTS, weights_only=True, map_location=map_location or "cpu")
            try:
                os.utime(d / META)  # last use, for cache.gc's LRU
            except OSError:
                pass
            return StageOutput(arrays=arrays, meta=meta, weights=weights)
        except Exception:  # noqa: BLE001 - any unreadable entry (zip, json, torch) is a miss, never served
            shutil.rmtree(d, ignore_errors=True)
            return None

    def save(self, stage: str, key: str, out: StageOutput) -> None:
        final = self._dir(stage, key)
        if final.exists():
            return
        tmp = self.root / ".tmp" / f"{key}.{uuid.uuid4().hex}"
        tmp.mkdir(parents=True)
        try:
            buf = io.BytesIO()
            np.savez(buf, **{k: np.asarray(v) for k, v in out.arrays.items()})
            (tmp / ARRAYS).write_bytes(buf.getvalue())
            if out.weights:
                import torch

                cpu = {n: {k: v.detach().cpu() if hasattr(v, "detach") else v for k, v in sd.items()}
                       for n, sd in out.weights.items()}
                torch.save(cpu, tmp / WEIGHTS)
            meta = {**out.meta, ENGINE_KEY: engine_id()}
            (tmp / META).write_text(json.dumps(meta, sort_keys=True))  # written last
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(tmp, final)
            except OSError:  # another process stored it first
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())
