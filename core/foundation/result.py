"""The Result of one experiment run (DESIGN: Contracts / Result).

Flat ``metrics`` (name -> float), ``intervals`` (metric name -> ``{"lo", "hi", "n"}``: a 95 %
interval and the number of samples scored, for attack metrics), ``curves`` (name -> series, e.g. per round), ``artifacts``
(name -> numpy array), ``info`` (small JSON-able facts: column names, the accountant's name,
warnings), plus ``config``, ``seed``, ``engine_version`` and ``timings``. Serialised as
``result.json`` + ``artifacts.npz``; never pickle.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.foundation.fingerprint import engine_id


def _clean_float(x: Any) -> float | None:
    v = float(x)
    return None if math.isnan(v) else v


def _json_metric(x: Any) -> float | str | None:
    """A metric value as strict JSON: NaN → null, ±inf → "inf" / "-inf" (read back by
    ``float``). +inf is legitimate for the metrics :func:`core.foundation.metric_schema.infinite_ok`
    names (DP ε = ∞ of clipping without noise); JSON has no infinity."""
    v = float(x)
    if math.isnan(v):
        return None
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


@dataclass
class Result:
    kind: str
    config: dict[str, Any]
    seed: int
    metrics: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, dict[str, float]] = field(default_factory=dict)
    curves: dict[str, list[float]] = field(default_factory=dict)
    artifacts: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    engine_version: str = field(default_factory=engine_id)
    key: str | None = None
    from_cache: bool = False

    def to_json_dict(self) -> dict[str, Any]:
        """Everything but the arrays, strict JSON (NaN becomes null; an infinite metric the
        string "inf", :func:`_json_metric`)."""
        return {
            "kind": self.kind,
            "key": self.key,
            "config": self.config,
            "seed": int(self.seed),
            "engine_version": self.engine_version,
            "metrics": {k: _json_metric(v) for k, v in self.metrics.items()},
            "intervals": {k: {f: _clean_float(x) for f, x in iv.items()} for k, iv in self.intervals.items()},
            "curves": {k: [_clean_float(v) for v in vs] for k, vs in self.curves.items()},
            "info": self.info,
            "timings": {k: float(v) for k, v in self.timings.items()},
            "artifact_names": sorted(self.artifacts),
        }

    def artifacts_npz_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez_compressed(buf, **{k: np.asarray(v) for k, v in self.artifacts.items()})
        return buf.getvalue()

    @classmethod
    def from_parts(cls, meta: dict[str, Any], npz: bytes | None) -> Result:
        arts: dict[str, np.ndarray] = {}
        if npz:
            with np.load(io.BytesIO(npz), allow_pickle=False) as z:
                arts = {k: z[k] for k in z.files}
        nan = float("nan")
        return cls(
            kind=meta["kind"],
            key=meta.get("key"),
            config=meta["config"],
            seed=int(meta["seed"]),
            engine_version=meta.get("engine_version", ""),
            metrics={k: (nan if v is None else float(v)) for k, v in meta.get("metrics", {}).items()},
            intervals={k: {f: (nan if x is None else float(x)) for f, x in iv.items()}
                       for k, iv in meta.get("intervals", {}).items()},
            curves={k: [nan if v is None else float(v) for v in vs] for k, vs in meta.get("curves", {}).items()},
            info=meta.get("info", {}),
            timings=meta.get("timings", {}),
            artifacts=arts,
        )

    def interval(self, name: str) -> tuple[float, float] | None:
        """The 95 % interval of metric ``name`` (None if the run recorded none)."""
        iv = self.intervals.get(name)
        return None if iv is None else (float(iv["lo"]), float(iv["hi"]))

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict(), sort_keys=True)
