"""Federated partitioning of row indices across clients (devices).

- ``iid``: a seeded permutation cut into ``num_clients`` near-equal parts (TAPPFL B10).
- ``dirichlet``: label skew; for every class c, proportions p_c ~ Dir(alpha * 1_K) over the K
  clients decide how that class's rows are dealt out (Hsu et al. 2019). Small alpha -> each
  client sees few classes; large alpha -> close to IID.
- ``attribute``: the same Dirichlet skew, on the private attribute codes instead of labels.

Parts are disjoint, cover every index, and depend only on the inputs and ``seed``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from core.foundation.checks import check_choice, check_int, check_positive
from core.foundation.seeds import stream

Scheme = Literal["iid", "dirichlet", "attribute"]
_MAX_TRIES = 1000


def _dirichlet_split(codes: np.ndarray, k: int, alpha: float, rng: np.random.Generator,
                     min_size: int) -> list[np.ndarray]:
    for _ in range(_MAX_TRIES):
        buckets: list[list[np.ndarray]] = [[] for _ in range(k)]
        for c in np.unique(codes):
            idx = rng.permutation(np.flatnonzero(codes == c))
            p = rng.dirichlet(np.full(k, alpha))
            cuts = (np.cumsum(p)[:-1] * len(idx)).round().astype(int)
            for j, part in enumerate(np.split(idx, cuts)):
                buckets[j].append(part)
        parts = [np.sort(np.concatenate(b)).astype(np.int64) for b in buckets]
        if min(len(p) for p in parts) >= min_size:
            return parts
    raise ValueError(
        f"min_size: got {min_size}; no Dirichlet(alpha={alpha:g}) draw in {_MAX_TRIES} tries gave "
        f"every one of {k} clients that many rows (raise alpha, or lower num_clients or min_size)"
    )


def partition(
    labels: np.ndarray,
    *,
    num_clients: int,
    scheme: Scheme,
    alpha: float = 0.5,
    attribute: np.ndarray | None = None,
    seed: int,
    min_size: int = 1,
) -> list[np.ndarray]:
    """Split ``range(len(labels))`` into ``num_clients`` sorted int64 index arrays.

    ``scheme='dirichlet'`` skews the task ``labels``; ``scheme='attribute'`` skews the private
    ``attribute`` codes (required, same length). Dirichlet draws are repeated until every client
    holds at least ``min_size`` rows.
    """
    labels = np.asarray(labels)
    n = len(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels: got shape {labels.shape}; expected a 1-D array")
    check_int("num_clients", num_clients, 1, max(n, 1), note="the number of rows")
    check_choice("scheme", scheme, ("iid", "dirichlet", "attribute"))
    check_positive("alpha", alpha)
    check_int("min_size", min_size, 0, n // num_clients,
              note=f"rows per client with {num_clients} clients")
    rng = stream(seed, "partition")
    if scheme == "iid":
        return [np.sort(p).astype(np.int64) for p in np.array_split(rng.permutation(n), num_clients)]
    if scheme == "attribute":
        if attribute is None:
            raise ValueError("attribute: required when scheme='attribute' (the private attribute codes)")
        codes = np.asarray(attribute)
        if codes.shape != labels.shape:
            raise ValueError(f"attribute: got shape {codes.shape}; expected {labels.shape} (one code per row)")
    else:
        codes = labels
    return _dirichlet_split(codes, num_clients, float(alpha), rng, min_size)


def skew(parts: list[np.ndarray], labels: np.ndarray) -> float:
    """Label heterogeneity: the mean over clients of the total-variation distance between the
    client's label distribution and the global one (0 = IID-like, -> 1 - max class share when
    clients hold single classes). Empty clients are ignored."""
    labels = np.asarray(labels)
    classes, inv = np.unique(labels, return_inverse=True)
    glob = np.bincount(inv, minlength=len(classes)) / len(labels)
    tv = [0.5 * np.abs(np.bincount(inv[p], minlength=len(classes)) / len(p) - glob).sum()
          for p in parts if len(p)]
    return float(np.mean(tv)) if tv else 0.0
