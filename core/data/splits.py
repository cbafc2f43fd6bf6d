"""Seeded subsampling, stratified train/test/aux splits and tabular standardisation."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.foundation.seeds import stream


def _take(idx: np.ndarray, k: int, strata: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    """``k`` of ``idx`` at random, stratified by ``strata`` (largest-remainder allocation per
    stratum, so class proportions are kept to within one row)."""
    n = len(idx)
    k = int(min(max(k, 0), n))
    if strata is None or k in (0, n):
        return np.sort(rng.choice(idx, size=k, replace=False))
    classes, inv = np.unique(strata[idx], return_inverse=True)
    counts = np.bincount(inv, minlength=len(classes))
    quota = counts * (k / n)
    alloc = np.floor(quota).astype(int)
    rest = k - alloc.sum()
    if rest:
        perm = rng.permutation(len(classes))  # random tie-break among equal remainders
        order = perm[np.argsort(-(quota - alloc)[perm], kind="stable")]
        alloc[order[:rest]] += 1
    out = [rng.choice(idx[inv == c], size=alloc[c], replace=False) for c in range(len(classes))]
    return np.sort(np.concatenate(out)).astype(np.int64)


def subsample(
    rows: int | np.ndarray,
    cap: int | None,
    seed: int | Sequence[int] | np.random.Generator,
    *,
    strata: np.ndarray | None = None,
) -> np.ndarray:
    """The one seeded row subsample: at most ``cap`` entries of ``rows`` (an index array, or
    ``range(rows)`` for an int), drawn without replacement, returned sorted (int64).

    ``cap`` None (or >= the number of rows) keeps every row. ``seed``: an int for
    ``np.random.default_rng``, or a generator (advanced in place; :func:`core.foundation.seeds.stream`
    names an independent one per purpose). ``strata``: a label per row of ``rows`` (same length) to keep
    its proportions to within one row (largest remainder). Unstratified, the draw is
    ``np.sort(rows[default_rng(seed).choice(len(rows), cap, replace=False)])``.
    """
    idx = np.arange(rows, dtype=np.int64) if np.isscalar(rows) else np.asarray(rows, dtype=np.int64)
    if idx.ndim != 1:
        raise ValueError(f"rows: got an array of shape {idx.shape}; expected an int or a 1-D index array")
    if cap is not None and cap < 0:
        raise ValueError(f"cap: got {cap}; allowed: None or an integer >= 0")
    if strata is not None and len(strata) != len(idx):
        raise ValueError(f"strata: got {len(strata)} labels for {len(idx)} rows; expected one per row")
    if cap is None or cap >= len(idx):
        return np.sort(idx)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if strata is None:
        return np.sort(rng.choice(idx, size=int(cap), replace=False))
    # _take indexes strata by row value: give it positions 0..n-1, then map back
    pos = _take(np.arange(len(idx)), int(cap), np.asarray(strata), rng)
    return np.sort(idx[pos])


def make_splits(
    y: np.ndarray,
    *,
    test_fraction: float,
    aux_fraction: float,
    seed: int,
    fixed_test: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Disjoint, complete train/test/aux index arrays, stratified by ``y``, seeded.

    With ``fixed_test`` (bool mask) the test split is exactly those rows, ``test_fraction`` is
    ignored and ``aux_fraction`` is a fraction of the remaining rows. Otherwise test and aux are
    ``round(fraction * n)`` rows each and train is the rest.
    """
    n = len(y)
    rng = stream(seed, "splits")
    allidx = np.arange(n, dtype=np.int64)
    if fixed_test is not None:
        test = allidx[fixed_test]
        rest = allidx[~fixed_test]
        aux = _take(rest, round(aux_fraction * len(rest)), y, rng)
    else:
        test = _take(allidx, round(test_fraction * n), y, rng)
        rest = np.setdiff1d(allidx, test, assume_unique=True)
        aux = _take(rest, round(aux_fraction * n), y, rng)
    train = np.setdiff1d(rest, aux, assume_unique=True)
    return {"train": train.astype(np.int64), "test": np.sort(test).astype(np.int64), "aux": aux}


def encode_tabular(df, train: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """One-hot ``category`` columns (``col=value``, 0/1, every category of the column) and
    standardise numeric columns with the mean and std of the ``train`` rows (std 0 -> 1).
    Column order follows ``df``; returns float32 X and the feature names."""
    cols: list[np.ndarray] = []
    names: list[str] = []
    for name in df.columns:
        s = df[name]
        if str(s.dtype) == "category":
            codes = s.cat.codes.to_numpy()
            for j, cat in enumerate(s.cat.categories):
                cols.append((codes == j).astype(np.float32))
                names.append(f"{name}={cat}")
        else:
            v = s.to_numpy(dtype=np.float64)
            mu = v[train].mean()
            sd = v[train].std()
            cols.append(((v - mu) / (sd if sd > 0 else 1.0)).astype(np.float32))
            names.append(str(name))
    X = np.ascontiguousarray(np.stack(cols, axis=1), dtype=np.float32)
    return X, names
