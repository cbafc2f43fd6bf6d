"""Subsets of rows whose *property* is the share of a private attribute value, binned into K
classes (Inf2Guard, spec 004 §2.2 and §3.2, Table 10), and the aggregation of their rows'
representations into one subset representation (mean or element-wise max, Tables 3 and 4).

The paper's ratio grids: Census {0.2, 0.3, 0.4, 0.5} (K = 4), RSNA {0.2, …, 0.8} (K = 7),
CelebA {0.0, 0.1, …, 1.0} (K = 11); a subset's property class is the grid ratio nearest to its
share. Sampling is *stratified by construction*: the same number of subsets per bin (so every
bin is populated and the majority-bin rate is 1/K), each of a size drawn uniformly from the
sizes that can realise the bin's ratio to within half the grid spacing (a subset of 2 rows
cannot have a share of 0.3), with round(ratio · n) rows holding the value and the rest not,
drawn without replacement within a subset (rows may recur across subsets, as in the paper,
where subsets are sampled from one pool). Pure numpy (+ torch for the aggregation in training).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.foundation.checks import check_range

#: the paper's female-ratio grids per K (Table 10)
PAPER_RATIOS: dict[int, tuple[float, ...]] = {
    4: (0.2, 0.3, 0.4, 0.5),
    7: (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
    11: tuple(round(0.1 * i, 1) for i in range(11)),
}
AGGREGATIONS = ("mean", "max")


def property_ratios(n_values: int) -> np.ndarray:
    """The ratio grid of the paper for K = ``n_values`` (4, 7 or 11)."""
    if int(n_values) not in PAPER_RATIOS:
        raise ValueError(f"n_values: got {n_values!r}; allowed: 4, 7, 11 (the paper's ratio grids)")
    return np.asarray(PAPER_RATIOS[int(n_values)], dtype=np.float64)


def bin_of(share: np.ndarray | float, ratios: np.ndarray) -> np.ndarray:
    """Property class of each share: the index of the nearest grid ratio (ties -> the lower)."""
    s = np.asarray(share, dtype=np.float64)
    return np.argmin(np.abs(s[..., None] - np.asarray(ratios, dtype=np.float64)), axis=-1)


def _half_width(ratios: np.ndarray) -> float:
    return float(np.min(np.diff(ratios))) / 2.0 if len(ratios) > 1 else 0.5


def feasible_sizes(ratio: float, size_min: int, size_max: int, half_width: float) -> np.ndarray:
    """Subset sizes n in [size_min, size_max] whose count round(ratio·n) gives a share strictly
    within ``half_width`` of ``ratio`` (so the subset's share falls in the ratio's own bin)."""
    n = np.arange(int(size_min), int(size_max) + 1)
    share = np.round(ratio * n) / n
    return n[np.abs(share - ratio) < half_width - 1e-12]


@dataclass(frozen=True)
class Subsets:
    """``m`` subsets as a padded index matrix: ``index`` (m, n_max) rows of the data set (padding
    repeats the subset's first row and is masked out), ``lengths`` (m,), ``labels`` (m,) the
    property class 0..K−1, ``shares`` (m,) the realised share of the value, ``ratios`` (K,)."""

    index: np.ndarray
    lengths: np.ndarray
    labels: np.ndarray
    shares: np.ndarray
    ratios: np.ndarray

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def mask(self) -> np.ndarray:
        """(m, n_max) bool: True on a subset's real rows."""
        return np.arange(self.index.shape[1])[None, :] < self.lengths[:, None]

    def rows(self) -> np.ndarray:
        """Every data-set row that is in at least one subset (sorted, unique)."""
        return np.unique(self.index[self.mask])

    def take(self, sel: np.ndarray) -> Subsets:
        """The subsets ``sel`` (indices or a boolean mask), index matrix trimmed to their size."""
        lengths = self.lengths[sel]
        n_max = int(lengths.max()) if lengths.size else 1
        return Subsets(self.index[sel][:, :n_max], lengths, self.labels[sel], self.shares[sel],
                       self.ratios)


def sample_subsets(pool: np.ndarray, has_value: np.ndarray, *, n_values: int, per_bin: int,
                   size_min: int, size_max: int, seed: int | np.random.Generator) -> Subsets:
    """``per_bin`` subsets per property class (K·per_bin in all, shuffled) drawn from the rows
    ``pool`` of a data set, ``has_value[i]`` True where pool row i holds the attribute value
    whose share is the property. Raises ValueError (one line naming the field) when a size
    range cannot realise a ratio or the pool is too small for the largest subset. ``seed``: an
    int or a generator (a :func:`core.foundation.seeds.stream`)."""
    ratios = property_ratios(n_values)
    pool = np.asarray(pool, dtype=np.int64)
    hv = np.asarray(has_value, dtype=bool)
    if hv.shape != pool.shape:
        raise ValueError(f"has_value: got shape {hv.shape}; expected {pool.shape} like pool")
    check_range("subsets.size_min", size_min, 2, int(size_max), note="at most size_max")
    check_range("per_bin", per_bin, 1)
    ones, zeros = pool[hv], pool[~hv]
    hw = _half_width(ratios)
    sizes = {k: feasible_sizes(r, size_min, size_max, hw) for k, r in enumerate(ratios)}
    for k, s in sizes.items():
        if s.size == 0:
            raise ValueError(f"subsets.size_max: got {size_max}; sizes {size_min}..{size_max} "
                             f"cannot realise the ratio {ratios[k]:g} (raise size_max)")
        need1 = int(np.round(ratios[k] * s).max())
        need0 = int((s - np.round(ratios[k] * s)).max())
        if need1 > ones.size or need0 > zeros.size:
            raise ValueError(f"subsets.size_max: got {size_max}; the pool has {ones.size} rows "
                             f"with the value and {zeros.size} without, too few for ratio "
                             f"{ratios[k]:g} at that size (lower size_max)")
    rng = np.random.default_rng(seed)
    m = len(ratios) * int(per_bin)
    labels = np.repeat(np.arange(len(ratios)), int(per_bin))
    labels = labels[rng.permutation(m)]
    lengths = np.empty(m, dtype=np.int64)
    counts = np.empty(m, dtype=np.int64)
    for k in range(len(ratios)):
        at = labels == k
        n = rng.choice(sizes[k], size=int(at.sum()))
        lengths[at] = n
        counts[at] = np.round(ratios[k] * n).astype(np.int64)
    index = np.empty((m, int(lengths.max())), dtype=np.int64)
    for j in range(m):
        c, n = int(counts[j]), int(lengths[j])
        rows = np.concatenate([rng.choice(ones, size=c, replace=False),
                               rng.choice(zeros, size=n - c, replace=False)])
        rows = rows[rng.permutation(n)]
        index[j, :n] = rows
        index[j, n:] = rows[0]
    shares = counts / lengths
    assert np.array_equal(bin_of(shares, ratios), labels)  # the construction's promise
    return Subsets(index, lengths, labels, shares.astype(np.float64), ratios)


def aggregate(R: np.ndarray, subsets: Subsets, how: str) -> np.ndarray:
    """Subset representations Agg({r_i : i in subset}) (m, d) from per-row representations
    ``R`` (n_rows, d) of the whole data set: the mean or the element-wise max (spec 004 §2.2)."""
    if how not in AGGREGATIONS:
        raise ValueError(f"aggregation: got {how!r}; allowed: {', '.join(AGGREGATIONS)}")
    R = np.asarray(R)
    out = np.empty((len(subsets), R.shape[1]), dtype=np.float64)
    mask = subsets.mask
    for s in range(0, len(subsets), 512):  # chunks bound the (chunk, n_max, d) gather
        G = R[subsets.index[s:s + 512]].astype(np.float64)
        M = mask[s:s + 512, :, None]
        if how == "mean":
            out[s:s + 512] = (G * M).sum(1) / subsets.lengths[s:s + 512, None]
        else:
            out[s:s + 512] = np.where(M, G, -np.inf).max(1)
    return out


def aggregate_torch(r, mask, how: str):
    """Torch form for training: ``r`` (B, n_max, d), ``mask`` (B, n_max) bool -> (B, d)."""
    if how == "mean":
        m = mask.unsqueeze(-1).to(r.dtype)
        return (r * m).sum(1) / m.sum(1).clamp_min(1.0)
    if how == "max":
        return r.masked_fill(~mask.unsqueeze(-1), float("-inf")).amax(1)
    raise ValueError(f"aggregation: got {how!r}; allowed: {', '.join(AGGREGATIONS)}")
