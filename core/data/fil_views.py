"""Data views for Fisher information loss (spec 002 §A9; issue #11): the shapes the FIL paper
trains its linear and logistic regressions on, beside the views the other pages use.

- ``digits`` / ``mnist5k``: two classes (a chosen pair, default 0 vs 1), PCA to ``pca_dim``
  (20, as the paper) fitted on the training rows, then every row divided by the largest
  training-row norm so the training rows lie in the unit ball (the paper divides by
  max_i‖x_i‖ [CODE]; we do it after the PCA, whose centring would otherwise move rows out of
  the ball: the DP sensitivity 2/(nλ) needs ‖x‖ ≤ 1). The original pixels are kept
  (``images``) so a page can show the most and least leaking examples as images (Fig. 3).
- ``adult`` in the paper's view (§A9): rows with a missing value dropped (30,162 train /
  15,060 test), ``relationship`` removed, marital status reduced to married / unmarried and
  kept as a feature (the attribute to attack), nominal features one-hot with the last level
  dropped, numeric features standardised with training statistics: 86 columns, marital status
  at column 24 as in the authors' code. ``adult_view="standard"`` is the view the other pages
  use (:func:`core.data.load_dataset`: '?' kept as a level, every level one-hot, sex /
  marital status / race removed from the features); there the label is the only target.
- ``synthetic``: a logistic GLM generator with correlated Gaussian features, one binary
  feature (``b``, the attribute to attack) and a fraction of outliers (features ×4, label
  flipped): the rows a FIL histogram should single out.

Every view is binary (``y`` in {0, 1}; a linear model uses ±1) and carries, per attribute
that can be attacked, its columns and the encodings of its candidate values
(:class:`FilAttribute`). Views are memoised per process; arrays are read-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from core.data.errors import DataError
from core.foundation.checks import check_range
from core.foundation.seeds import stream

VIEW_NAMES = ("digits", "mnist5k", "adult", "synthetic")
IMAGE_VIEWS = frozenset({"digits", "mnist5k"})
#: marital-status values that count as "married" (every ``Married-*`` value) [MINE: the paper
#: and Mehnaz et al. 2020 say "married or unmarried" without listing the values]
MARRIED_PREFIX = "Married"
ADULT_PAPER_DROP = ("relationship",)
ADULT_NUMERIC = ("age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week")


@dataclass(frozen=True)
class FilAttribute:
    """An attribute an attacker may reconstruct: its feature ``columns``, the encoding of each
    candidate value (``candidates``: k × len(columns); a one-hot group with its dropped level
    as the all-zero row), each training row's true value code (``codes``) and the value names.
    """

    name: str
    columns: tuple[int, ...]
    candidates: np.ndarray
    codes: np.ndarray
    value_names: tuple[str, ...]

    @property
    def k(self) -> int:
        return len(self.candidates)


@dataclass(frozen=True)
class FilView:
    """One data set as FIL's GLMs see it.

    ``X``/``y``: training rows (float64, y ∈ {0, 1}); ``X_test``/``y_test``: held-out rows for
    utility. ``attributes``: attackable nominal attributes (the label is always attackable
    and is not listed). ``groups``: every feature group (a one-hot group or a single column)
    for attribute-level η. ``images``/``images_test``: original pixels (image views).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: tuple[str, ...]
    label_names: tuple[str, str]
    groups: dict[str, tuple[int, ...]]
    attributes: dict[str, FilAttribute]
    default_target: str
    description: str
    image_shape: tuple[int, int, int] | None = None
    images: np.ndarray | None = None
    images_test: np.ndarray | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def max_norm(self) -> float:
        """Largest training-row norm (≤ 1 means the rows lie in the unit ball)."""
        return float(np.sqrt((self.X ** 2).sum(1)).max()) if self.n else 0.0

    @property
    def targets(self) -> tuple[str, ...]:
        """What an attack may target: ``label`` and every listed attribute."""
        return ("label", *self.attributes)


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


def _split(y: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from core.data.splits import make_splits

    s = make_splits(y, test_fraction=test_fraction, aux_fraction=0.0, seed=seed)
    return s["train"], s["test"]


def _cap(rows: np.ndarray, y: np.ndarray, cap: int | None, seed: int) -> np.ndarray:
    from core.data.splits import subsample

    if cap is None or cap >= len(rows):
        return rows
    return rows[subsample(len(rows), cap, stream(seed, "fil_view", "cap"), strata=y[rows])]


# ---------------------------------------------------------------------------------------------
# images: two classes, PCA, unit ball


@lru_cache(maxsize=8)
def image_pair_view(name: str, classes: tuple[int, int] = (0, 1), pca_dim: int = 20,
                    test_fraction: float = 0.2, seed: int = 0,
                    max_samples: int | None = None) -> FilView:
    """``digits`` or ``mnist5k`` restricted to ``classes`` (label 1 = the second class), PCA to
    ``pca_dim`` on the training rows, then scaled so the training rows lie in the unit ball."""
    from sklearn.decomposition import PCA

    from core.data import images

    if name not in IMAGE_VIEWS:
        raise ValueError(f"data.name: got {name!r}; image views: {', '.join(sorted(IMAGE_VIEWS))}")
    a, b = (int(c) for c in classes)
    if a == b or not (0 <= a <= 9 and 0 <= b <= 9):
        raise ValueError(f"data.classes: got {[a, b]}; expected two different digits 0-9")
    Xall, yall = images._digits_arrays() if name == "digits" else images._mnist5k_arrays()
    side = 8 if name == "digits" else 28
    keep = np.flatnonzero((yall == a) | (yall == b))
    pix = np.asarray(Xall[keep], dtype=np.float64)
    y = (yall[keep] == b).astype(np.int64)
    tr, te = _split(y, test_fraction, seed)
    tr = _cap(tr, y, max_samples, seed)
    k = int(min(pca_dim, pix.shape[1], len(tr)))
    pca = PCA(n_components=k, random_state=seed).fit(pix[tr])
    Z = pca.transform(pix)
    scale = float(np.sqrt((Z[tr] ** 2).sum(1)).max())
    Z = Z / scale
    names = tuple(f"pc{i + 1}" for i in range(k))
    groups = {n: (i,) for i, n in enumerate(names)}
    notes = [(f"PCA to {k} dimensions ({pca.explained_variance_ratio_.sum():.1%} of the pixel "
             "variance) fitted on the training rows; rows divided by the largest training-row "
             "norm (unit ball)")]
    if k < pca_dim:
        notes.append(f"pca_dim: {pca_dim} asked, {k} possible")
    return FilView(
        name=name, X=_ro(Z[tr]), y=_ro(y[tr]), X_test=_ro(Z[te]), y_test=_ro(y[te]),
        feature_names=names, label_names=(str(a), str(b)), groups=groups, attributes={},
        default_target="label",
        description=f"{name} {a} vs {b}: {len(tr)} train / {len(te)} test rows, PCA {k}, unit ball",
        image_shape=(1, side, side), images=_ro(pix[tr].astype(np.float32)),
        images_test=_ro(pix[te].astype(np.float32)), notes=tuple(notes))


# ---------------------------------------------------------------------------------------------
# adult


def _one_hot_drop_last(values: np.ndarray, levels: list[str]) -> np.ndarray:
    """One-hot of ``values`` over ``levels`` with the last level dropped (all-zero row)."""
    idx = {v: i for i, v in enumerate(levels)}
    codes = np.array([idx.get(v, -1) for v in values])
    out = np.zeros((len(values), max(len(levels) - 1, 0)))
    ok = (codes >= 0) & (codes < len(levels) - 1)
    out[np.flatnonzero(ok), codes[ok]] = 1.0
    return out


@lru_cache(maxsize=4)
def adult_paper_view(data_dir: str | None = None, max_samples: int | None = None,
                     seed: int = 0) -> FilView:
    """UCI Adult as the FIL paper prepares it (§A9; see the module docstring): 86 columns,
    train = adult.data rows without a missing value, test = adult.test rows likewise.
    ``max_samples`` caps the training rows (seeded, stratified by income)."""
    from core.data import adult

    d = adult.find_dir(data_dir)
    df, is_test = adult.read_table(adult.ensure_files(d))
    complete = ~(df == "?").any(axis=1).to_numpy()
    df, is_test = df[complete].reset_index(drop=True), is_test[complete]
    df = df.drop(columns=list(ADULT_PAPER_DROP))
    df["marital_status"] = np.where(df["marital_status"].str.startswith(MARRIED_PREFIX),
                                    "married", "unmarried")
    y_all = (df["income"].to_numpy() == ">50K").astype(np.int64)
    tr_all, te = np.flatnonzero(~is_test), np.flatnonzero(is_test)
    tr = _cap(tr_all, y_all, max_samples, seed)
    cols: list[np.ndarray] = []
    names: list[str] = []
    groups: dict[str, tuple[int, ...]] = {}
    attributes: dict[str, FilAttribute] = {}
    for col in df.columns:
        if col == "income":
            continue
        s = df[col].to_numpy()
        start = len(names)
        if col in ADULT_NUMERIC:
            v = s.astype(np.float64)
            mu, sd = v[tr].mean(), v[tr].std()
            cols.append(((v - mu) / (sd if sd > 0 else 1.0))[:, None])
            names.append(col)
        else:
            levels = sorted(set(s[tr_all]))  # levels of the whole training file
            oh = _one_hot_drop_last(s, levels)
            cols.append(oh)
            names.extend(f"{col}={lv}" for lv in levels[:-1])
            m = oh.shape[1]
            cand = np.vstack([np.eye(m), np.zeros((1, m))])  # last level = all zeros
            lv_idx = {v: i for i, v in enumerate(levels)}
            codes = np.array([lv_idx[v] for v in s[tr]], dtype=np.int64)
            attributes[col] = FilAttribute(col, tuple(range(start, start + m)), _ro(cand),
                                           _ro(codes), tuple(levels))
        groups[col] = tuple(range(start, len(names)))
    X = np.hstack(cols)
    if X.shape[1] != 86 and max_samples is None:
        raise DataError(f"adult (paper view): built {X.shape[1]} columns, expected 86; "
                        f"the files in {d} differ from the UCI originals")
    return FilView(
        name="adult", X=_ro(X[tr]), y=_ro(y_all[tr]), X_test=_ro(X[te]), y_test=_ro(y_all[te]),
        feature_names=tuple(names), label_names=("<=50K", ">50K"), groups=groups,
        attributes=attributes, default_target="marital_status",
        description=f"UCI Adult, the FIL paper's view: {len(tr)} train / {len(te)} test rows "
                    f"(missing values dropped), {X.shape[1]} columns, relationship removed, "
                    "marital status married/unmarried (column "
                    f"{groups['marital_status'][0]}), one-hot with the last level dropped",
        notes=(f"read from {d}",))


@dataclass(frozen=True)
class _Spec:
    """A hashable stand-in for core.config.schema.DataSpec (the data layer does not import it)."""

    name: str
    private_attribute: str | None = None
    data_dir: str | None = None
    max_samples: int | None = None
    test_fraction: float = 0.2
    aux_fraction: float = 0.2
    n_samples: int = 4000
    dependence: float = 0.6
    fingerprint: str | None = None


@lru_cache(maxsize=4)
def adult_standard_view(data_dir: str | None = None, max_samples: int | None = None,
                        seed: int = 0) -> FilView:
    """Adult as the other pages see it (:func:`core.data.load_dataset`): train = its train and
    aux splits, test = adult.test; the label is the only target (the private attributes are
    not features in this view)."""
    from core.data import load_dataset

    ds = load_dataset(_Spec("adult", data_dir=data_dir), seed)
    tr = np.sort(np.concatenate([ds.split("train"), ds.split("aux")]))
    y = np.asarray(ds.y)
    tr = _cap(tr, y, max_samples, seed)
    te = ds.split("test")
    names = list(ds.feature_names)
    groups: dict[str, list[int]] = {}
    for j, n in enumerate(names):
        groups.setdefault(n.split("=", 1)[0], []).append(j)
    X = np.asarray(ds.X, dtype=np.float64)
    return FilView(
        name="adult", X=_ro(X[tr]), y=_ro(y[tr]), X_test=_ro(X[te]), y_test=_ro(y[te]),
        feature_names=tuple(names), label_names=tuple(ds.label_names),
        groups={k: tuple(v) for k, v in groups.items()}, attributes={}, default_target="label",
        description=f"UCI Adult, the view the other pages use: {len(tr)} train / {len(te)} test "
                    f"rows, {X.shape[1]} columns ('?' kept, every level one-hot, sex / marital "
                    "status / race not features)")


# ---------------------------------------------------------------------------------------------
# synthetic GLM with outliers


@lru_cache(maxsize=8)
def synthetic_glm_view(n_samples: int = 1000, n_features: int = 10, correlation: float = 0.3,
                       outlier_fraction: float = 0.02, test_fraction: float = 0.2,
                       seed: int = 0, max_samples: int | None = None) -> FilView:
    """x ~ N(0, Σ) with Σ_jk = ρ^|j−k| (``n_features`` − 1 columns) plus a binary column ``b``
    (the attribute to attack, ≈ Bernoulli(1/2), entering the logit); y ~ Bernoulli(s(3·xᵀw))
    with w ~ N(0, I/d). A fraction ``outlier_fraction`` of rows has its Gaussian features ×4
    and its label flipped. All rows are then divided by the largest training-row norm (unit
    ball), ``b``'s candidate encodings with them."""
    check_range("data.n_features", n_features, 2, 500)
    check_range("data.correlation", correlation, 0, 1, hi_open=True)
    check_range("data.outlier_fraction", outlier_fraction, 0, 0.5)
    rng = stream(seed, "fil_view", "synthetic")
    n, dg = int(n_samples), int(n_features) - 1
    lags = np.abs(np.subtract.outer(np.arange(dg), np.arange(dg)))
    L = np.linalg.cholesky(correlation ** lags + 1e-12 * np.eye(dg))
    G = rng.standard_normal((n, dg)) @ L.T
    b = (rng.random(n) < 0.5).astype(np.float64)
    X = np.hstack([G, b[:, None]])
    w = rng.standard_normal(dg + 1) / np.sqrt(dg + 1)
    w[-1] = 1.0  # b matters to the label, so a model leaks it
    logit = 3.0 * (G @ w[:dg] + (b - 0.5) * w[-1])  # b centred: both classes stay common
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    out = rng.random(n) < outlier_fraction
    X[out, :dg] *= 4.0
    y[out] = 1 - y[out]
    tr, te = _split(y, test_fraction, seed)
    tr = _cap(tr, y, max_samples, seed)
    scale = float(np.sqrt((X[tr] ** 2).sum(1)).max())
    X = X / scale
    names = tuple([f"x{j}" for j in range(dg)] + ["b"])
    groups = {nm: (j,) for j, nm in enumerate(names)}
    cand = np.array([[0.0], [1.0 / scale]])
    attr = FilAttribute("b", (dg,), _ro(cand), _ro(b[tr].astype(np.int64)), ("b=0", "b=1"))
    is_out = out[tr]
    return FilView(
        name="synthetic", X=_ro(X[tr]), y=_ro(y[tr]), X_test=_ro(X[te]), y_test=_ro(y[te]),
        feature_names=names, label_names=("y=0", "y=1"), groups=groups,
        attributes={"b": attr}, default_target="b",
        description=f"synthetic logistic GLM: {len(tr)} train / {len(te)} test rows, "
                    f"{dg} Gaussian features (ρ = {correlation:g}) + binary b, "
                    f"{int(is_out.sum())} training outliers, unit ball",
        notes=(f"outlier rows (train): {np.flatnonzero(is_out).tolist()[:50]}",))


# ---------------------------------------------------------------------------------------------
# one entry point


def fil_view(name: str, *, classes: tuple[int, int] = (0, 1), pca_dim: int = 20,
             adult_view: str = "paper", data_dir: str | None = None,
             max_samples: int | None = None, n_samples: int = 1000, n_features: int = 10,
             correlation: float = 0.3, outlier_fraction: float = 0.02,
             test_fraction: float = 0.2, seed: int = 0) -> FilView:
    """The FIL view of ``name`` (memoised per process; see the module docstring)."""
    if name in IMAGE_VIEWS:
        return image_pair_view(name, tuple(int(c) for c in classes), int(pca_dim),
                               float(test_fraction), int(seed), max_samples)
    if name == "adult":
        if adult_view == "paper":
            return adult_paper_view(data_dir, max_samples, int(seed))
        if adult_view == "standard":
            return adult_standard_view(data_dir, max_samples, int(seed))
        raise ValueError(f"data.adult_view: got {adult_view!r}; allowed: paper, standard")
    if name == "synthetic":
        return synthetic_glm_view(int(n_samples), int(n_features), float(correlation),
                                  float(outlier_fraction), float(test_fraction), int(seed),
                                  max_samples)
    raise ValueError(f"data.name: got {name!r}; allowed: {', '.join(VIEW_NAMES)}")
