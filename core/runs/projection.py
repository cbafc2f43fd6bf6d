"""Runner for ``kind: projection`` — a 2-D PCA / t-SNE / UMAP view of a data set's raw features.

Artifacts (all aligned row by row, m = number of projected points):

- ``embedding`` float32 (m, 2)
- ``index`` int64 (m,): the rows of the data set (``Dataset.X``) that were projected
- ``label`` int64 (m,): task labels (names in ``info["label_names"]``)
- ``attr_<name>`` int64 (m,): codes of each private attribute (names in
  ``info["attribute_values"][name]``)

Metrics: ``n_points``, ``seconds`` (projection wall time), ``trustworthiness`` (sklearn,
k = 5, on at most 1,000 of the points) and, for t-SNE, ``kl_divergence``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from core.config.schema import ProjectionConfig
from core.data.projection import project_detailed, trustworthiness_score
from core.foundation.progress import Progress
from core.foundation.result import Result

TRUST_NEIGHBORS = 5
TRUST_MAX_POINTS = 1000


def _projection_info(cfg: ProjectionConfig, ds: Any, split_rows: int, proj: Any) -> dict[str, Any]:
    """The run's info: the data set's description, the split and the projection's effective
    parameters and notes."""
    params = {k: v for k, v in proj.params.items()}
    return {
        "dataset": ds.name,
        "description": ds.description,
        "task_name": ds.task_name,
        "label_names": list(ds.label_names),
        "attributes": list(ds.attributes),
        "attribute_values": {k: list(v) for k, v in ds.attribute_values.items()},
        "default_attribute": ds.default_attribute,
        "image_shape": list(ds.image_shape) if ds.image_shape is not None else None,
        "split": cfg.split,
        "split_rows": split_rows,
        "method": cfg.method,
        "params": params,
        "effective_perplexity": params.get("perplexity"),
        "effective_n_neighbors": params.get("n_neighbors"),
        "trustworthiness_neighbors": TRUST_NEIGHBORS,
        "notes": list(proj.notes),
    }


def run_projection(cfg: ProjectionConfig, progress: Progress, stages: Any = None) -> Result:
    """Load ``cfg.data``, take the ``cfg.split`` rows, project them, score trustworthiness."""
    from core.data import load_dataset

    t0 = time.perf_counter()
    progress.update(0.0, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    rows = ds.split(cfg.split)
    progress.update(0.1, f"loaded {cfg.data.name}: {len(rows)} rows in split {cfg.split!r}")
    if len(rows) < 3:
        raise ValueError(
            f"split: {cfg.split!r} of {cfg.data.name!r} has {len(rows)} rows; a projection needs at least 3"
        )
    t_load = time.perf_counter() - t0

    X = ds.X[rows]
    proj = project_detailed(
        X,
        method=cfg.method,
        seed=cfg.seed,
        max_points=cfg.max_points,
        perplexity=cfg.perplexity,
        n_neighbors=cfg.n_neighbors,
        min_dist=cfg.min_dist,
        progress=progress.sub(0.2, 0.9),
    )
    index = np.asarray(rows[proj.indices], dtype=np.int64)

    progress.update(0.9, "scoring trustworthiness")
    t1 = time.perf_counter()
    trust = trustworthiness_score(
        X[proj.indices], proj.embedding, n_neighbors=TRUST_NEIGHBORS,
        max_points=TRUST_MAX_POINTS, seed=cfg.seed,
    )
    t_trust = time.perf_counter() - t1

    artifacts: dict[str, np.ndarray] = {
        "embedding": proj.embedding,
        "index": index,
        "label": np.asarray(ds.y[index], dtype=np.int64),
    }
    for name, codes in ds.attributes.items():
        artifacts[f"attr_{name}"] = np.asarray(codes[index], dtype=np.int64)

    metrics = {
        "n_points": float(len(index)),
        "seconds": float(proj.seconds),
        "trustworthiness": trust,
    }
    if proj.kl_divergence is not None:
        metrics["kl_divergence"] = proj.kl_divergence

    info = _projection_info(cfg, ds, len(rows), proj)
    progress.update(1.0, f"{cfg.method} projection of {len(index)} points done")
    return Result(
        kind="projection",
        config=cfg.model_dump(mode="json"),
        seed=cfg.seed,
        metrics=metrics,
        artifacts=artifacts,
        info=info,
        timings={"load_s": t_load, "project_s": proj.seconds, "trustworthiness_s": t_trust},
    )
