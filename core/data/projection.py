"""2-D projections of raw features: PCA, t-SNE and UMAP (DESIGN: Data & projections).

Thin, validated wrappers over scikit-learn (``PCA``, ``TSNE``) and umap-learn (``UMAP``):

- a seeded subsample (:func:`core.data.splits.subsample`) caps the number of points
  (``max_points``) and its row indices are returned with the embedding, so callers can colour points by label or private attribute;
- neighbourhood sizes are clipped to what ``m`` points allow — t-SNE's perplexity to
  ``(m - 1) / 3`` (each point needs about 3·perplexity neighbours) and UMAP's ``n_neighbors`` to
  ``m - 1`` — and every clip is recorded as a note;
- runs are deterministic for a given seed: t-SNE uses PCA initialisation and a fixed
  ``random_state``; from 1,000 points on it uses the thread budget (inside
  ``core.runs.experiments.run``: ``$PRIVLAB_THREADS``, default 1; called directly: every usable
  core). The same thread budget gives the same result; different budgets can differ in the
  last digits (BLAS summation order); UMAP gets ``random_state=seed``, which makes umap-learn run
  single-threaded (the parallel mode is not reproducible; ``benchmarks/projection_bench.py``
  measures both).

Inputs are used as given: standardising (tabular) or not (images) is the caller's choice.
Numpy in, numpy out; no torch.
"""

from __future__ import annotations

import importlib
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from core.data.splits import subsample
from core.foundation.checks import check_choice, check_int, check_positive, check_range
from core.foundation.progress import Progress

Method = Literal["pca", "tsne", "umap"]
METHODS: tuple[str, ...] = ("pca", "tsne", "umap")
TSNE_PARALLEL_MIN_POINTS = 1000  # t-SNE uses every usable core from this many points on


@dataclass
class Projection:
    """A 2-D embedding of ``X[indices]`` plus what was actually used to compute it."""

    embedding: np.ndarray  # float32 (m, 2)
    indices: np.ndarray  # int64 (m,), sorted rows of X
    method: str
    params: dict[str, Any] = field(default_factory=dict)  # effective perplexity / n_neighbors / …
    kl_divergence: float | None = None  # t-SNE only: KL(P || Q) after optimisation
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def n_cores() -> int:
    """Cores this process may use (affinity-aware)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def thread_budget() -> int:
    """OpenMP threads this call may use: the current threadpoolctl limit (``core.runs.experiments.run``
    pins it from ``$PRIVLAB_THREADS``, default 1), else every usable core."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return n_cores()
    limits = [d["num_threads"] for d in threadpool_info() if d.get("user_api") == "openmp"]
    return max(1, min([n_cores(), *limits]))


def effective_perplexity(m: int, perplexity: float) -> float:
    """t-SNE perplexity clipped to ``(m - 1) / 3`` (sklearn needs perplexity < m)."""
    return float(min(perplexity, (m - 1) / 3.0))


def effective_n_neighbors(m: int, n_neighbors: int) -> int:
    """UMAP ``n_neighbors`` clipped to ``m - 1``."""
    return int(max(2, min(n_neighbors, m - 1)))


def _validate(X: Any, method: str, seed: Any, max_points: Any, perplexity: float,
              n_neighbors: int, min_dist: float) -> np.ndarray:
    check_choice("method", method, METHODS)
    check_int("seed", seed, 0)
    if max_points is not None:
        check_int("max_points", max_points, 3, note="or None for every row")
    check_positive("perplexity", perplexity)
    check_int("n_neighbors", n_neighbors, 2)
    check_range("min_dist", min_dist, 0, 1)
    try:
        arr = np.asarray(X)
    except (ValueError, TypeError) as exc:  # ragged lists etc.
        raise ValueError(f"X: cannot be read as a numeric array ({exc})") from None
    if arr.ndim != 2:
        raise ValueError(f"X: got an array of shape {arr.shape}; expected 2-D (n_points, n_features)")
    if arr.shape[0] < 3:
        raise ValueError(f"X: got {arr.shape[0]} rows; a projection needs at least 3")
    if arr.shape[1] < 1:
        raise ValueError("X: got 0 columns; expected at least 1 feature")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(f"X: got dtype {arr.dtype}; expected numbers")
    arr = arr.astype(np.float32, copy=False)
    if not np.isfinite(arr).all():
        bad = int((~np.isfinite(arr)).any(axis=1).sum())
        raise ValueError(f"X: {bad} row(s) contain NaN or infinity; drop or impute them first")
    return arr


def _import_backend(method: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba / pynndescent import chatter
        importlib.import_module(
            {"pca": "sklearn.decomposition", "tsne": "sklearn.manifold", "umap": "umap"}[method]
        )


def _pca(X: np.ndarray, seed: int, out: Projection) -> np.ndarray:
    from sklearn.decomposition import PCA

    m, d = X.shape
    if d < 2:
        out.notes.append("only 1 feature: the second coordinate is 0")
        return np.column_stack([X[:, 0] - X[:, 0].mean(), np.zeros(m, np.float32)])
    # randomized SVD where the matrix is big (Halko et al.); exact otherwise
    solver = "randomized" if min(m, d) > 500 else "full"
    pca = PCA(n_components=2, svd_solver=solver, random_state=seed)
    emb = pca.fit_transform(X)
    out.params.update(svd_solver=solver,
                      explained_variance_ratio=[float(v) for v in pca.explained_variance_ratio_])
    return emb


def _tsne(X: np.ndarray, seed: int, perplexity: float, out: Projection) -> np.ndarray:
    from sklearn.manifold import TSNE

    m, d = X.shape
    eff = effective_perplexity(m, perplexity)
    if eff < perplexity:
        out.notes.append(f"perplexity clipped from {perplexity:g} to {eff:.4g} = (m-1)/3 for m={m} points")
    init = "pca" if d >= 2 else "random"
    # below ~1,000 points the OpenMP overhead outweighs a second core (and spinning threads
    # suffer badly on a shared, oversubscribed machine)
    jobs = thread_budget() if m >= TSNE_PARALLEL_MIN_POINTS else 1
    tsne = TSNE(n_components=2, perplexity=eff, init=init, learning_rate="auto",
                random_state=seed, n_jobs=jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        emb = tsne.fit_transform(X)
    out.params.update(perplexity=eff, init=init, n_jobs=jobs,
                      n_iter=int(getattr(tsne, "n_iter_", 0)))
    out.kl_divergence = float(tsne.kl_divergence_)
    return emb


def _umap(X: np.ndarray, seed: int, n_neighbors: int, min_dist: float, out: Projection) -> np.ndarray:
    import umap

    m = X.shape[0]
    k = effective_n_neighbors(m, n_neighbors)
    if k < n_neighbors:
        out.notes.append(f"n_neighbors clipped from {n_neighbors} to {k} = m-1 for m={m} points")
    # spectral init needs more points than eigenvectors; fall back to PCA init for tiny sets
    init = "spectral" if m >= 10 else "pca"
    reducer = umap.UMAP(n_components=2, n_neighbors=k, min_dist=min_dist, init=init,
                        random_state=seed, n_jobs=1)
    with warnings.catch_warnings():
        # "n_jobs value 1 overridden to 1 by setting random_state": we choose determinism
        warnings.filterwarnings("ignore", message=".*random_state.*")
        warnings.filterwarnings("ignore", message=".*n_jobs.*")
        emb = reducer.fit_transform(X)
    out.params.update(n_neighbors=k, min_dist=float(min_dist), init=init, n_jobs=1)
    return emb


def project_detailed(
    X: np.ndarray,
    *,
    method: Method,
    seed: int,
    max_points: int | None = None,
    perplexity: float = 30.0,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    progress: Progress | None = None,
) -> Projection:
    """Like :func:`project` but returns a :class:`Projection` with the effective parameters,
    t-SNE's final KL divergence, notes about clipped parameters and the wall time."""
    arr = _validate(X, method, seed, max_points, perplexity, n_neighbors, min_dist)
    prog = progress or Progress()
    idx = subsample(arr.shape[0], max_points, int(seed))
    Xs = arr[idx]
    out = Projection(embedding=np.empty((0, 2), np.float32), indices=idx, method=method)
    if len(idx) < arr.shape[0]:
        out.notes.append(f"seeded subsample of {len(idx)} of {arr.shape[0]} points")
    name = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}[method]
    prog.update(0.0, f"{name} on {len(idx)} points x {arr.shape[1]} features")
    _import_backend(method)  # library import time is not projection time
    t0 = time.perf_counter()
    if method == "pca":
        emb = _pca(Xs, int(seed), out)
    elif method == "tsne":
        emb = _tsne(Xs, int(seed), float(perplexity), out)
    else:
        emb = _umap(Xs, int(seed), int(n_neighbors), float(min_dist), out)
    out.seconds = time.perf_counter() - t0
    out.embedding = np.ascontiguousarray(emb, dtype=np.float32)
    prog.update(1.0, f"{name} done in {out.seconds:.1f} s")
    return out


def project(
    X: np.ndarray,
    *,
    method: Method,
    seed: int,
    max_points: int | None = None,
    perplexity: float = 30.0,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Project the rows of ``X`` (n, d) to 2-D with PCA, t-SNE or UMAP.

    Returns ``(embedding, indices)``: a float32 array (m, 2) and the sorted int64 rows of ``X``
    it embeds (a seeded subsample of ``min(n, max_points)`` rows). Raises ``ValueError`` naming
    the argument for a non-2-D ``X``, fewer than 3 rows, non-finite values or bad parameters.
    """
    p = project_detailed(X, method=method, seed=seed, max_points=max_points, perplexity=perplexity,
                         n_neighbors=n_neighbors, min_dist=min_dist, progress=progress)
    return p.embedding, p.indices


def trustworthiness_score(
    X: np.ndarray, embedding: np.ndarray, *, n_neighbors: int = 5, max_points: int = 1000, seed: int = 0
) -> float:
    """sklearn's trustworthiness T(k) (Venna & Kaski 2001) of ``embedding`` for ``X``.

    1 means every embedded neighbourhood holds only true neighbours. Computed on a seeded
    subsample of at most ``max_points`` rows (it is O(m²)); ``k`` is clipped below m/2 as
    sklearn requires; NaN when there are too few points for k >= 1.
    """
    from sklearn.manifold import trustworthiness

    X = np.asarray(X, dtype=np.float32)
    embedding = np.asarray(embedding, dtype=np.float32)
    if X.shape[0] != embedding.shape[0]:
        raise ValueError(f"embedding: got {embedding.shape[0]} rows for {X.shape[0]} rows of X")
    idx = subsample(X.shape[0], max_points, seed)
    m = len(idx)
    k = min(n_neighbors, (m - 1) // 2)
    if k < 1:
        return float("nan")
    return float(trustworthiness(X[idx], embedding[idx], n_neighbors=k))
