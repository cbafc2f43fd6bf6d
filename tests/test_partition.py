"""Federated partitioning: disjoint, complete, reproducible; Dirichlet skew grows as alpha falls."""

from __future__ import annotations

import numpy as np
import pytest

from core.data import partition, skew

RNG = np.random.default_rng(0)
LABELS = RNG.integers(0, 10, size=3000)
ATTR = RNG.integers(0, 2, size=3000)


def _check_cover(parts, n):
    allidx = np.concatenate(parts)
    assert len(allidx) == n and len(np.unique(allidx)) == n  # disjoint and complete
    assert np.array_equal(np.sort(allidx), np.arange(n))
    assert all(p.dtype == np.int64 and np.all(np.diff(p) > 0) for p in parts)


@pytest.mark.parametrize("scheme", ["iid", "dirichlet", "attribute"])
def test_disjoint_complete_reproducible(scheme):
    kw = {"num_clients": 20, "scheme": scheme, "alpha": 0.3, "attribute": ATTR, "min_size": 5}
    a = partition(LABELS, seed=1, **kw)
    _check_cover(a, len(LABELS))
    assert len(a) == 20 and min(len(p) for p in a) >= 5
    b = partition(LABELS, seed=1, **kw)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    c = partition(LABELS, seed=2, **kw)
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_iid_equal_sizes():
    parts = partition(LABELS, num_clients=7, scheme="iid", seed=0)
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    assert skew(parts, LABELS) < 0.1


def test_skew_grows_as_alpha_falls():
    s = {a: np.mean([skew(partition(LABELS, num_clients=10, scheme="dirichlet", alpha=a, seed=k), LABELS)
                     for k in range(3)]) for a in (100.0, 1.0, 0.05)}
    assert s[100.0] < s[1.0] < s[0.05]
    assert s[100.0] < 0.1 and s[0.05] > 0.5


def test_attribute_scheme_skews_the_attribute_not_the_label():
    parts = partition(LABELS, num_clients=10, scheme="attribute", alpha=0.05, attribute=ATTR, seed=0)
    assert skew(parts, ATTR) > 0.3
    assert skew(parts, LABELS) < skew(parts, ATTR)


def test_min_size_and_single_client():
    parts = partition(LABELS[:100], num_clients=1, scheme="dirichlet", alpha=0.1, seed=0)
    assert len(parts) == 1 and len(parts[0]) == 100
    parts = partition(LABELS[:200], num_clients=10, scheme="dirichlet", alpha=1.0, seed=0, min_size=8)
    assert min(len(p) for p in parts) >= 8


@pytest.mark.parametrize("kw,field", [
    ({"num_clients": 0, "scheme": "iid"}, "num_clients"),
    ({"num_clients": 3001, "scheme": "iid"}, "num_clients"),
    ({"num_clients": 5, "scheme": "dirichlet", "alpha": 0.0}, "alpha"),
    ({"num_clients": 5, "scheme": "dirichlet", "alpha": -1.0}, "alpha"),
    ({"num_clients": 5, "scheme": "shards"}, "scheme"),
    ({"num_clients": 5, "scheme": "attribute"}, "attribute"),
    ({"num_clients": 5, "scheme": "attribute", "attribute": np.zeros(3)}, "attribute"),
    ({"num_clients": 5, "scheme": "iid", "min_size": 10_000}, "min_size"),
])
def test_bad_arguments_name_the_argument(kw, field):
    with pytest.raises(ValueError, match=field):
        partition(LABELS, seed=0, **kw)
