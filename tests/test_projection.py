"""Projections (core.data.projection) and the projection runner (core.runs.projection)."""

from __future__ import annotations

import numpy as np
import pytest

from core.config.schema import ProjectionConfig
from core.data.projection import (
    effective_n_neighbors,
    effective_perplexity,
    project,
    project_detailed,
    trustworthiness_score,
)
from core.data.splits import subsample


@pytest.fixture(scope="module")
def digits_X() -> np.ndarray:
    from sklearn.datasets import load_digits

    return (load_digits().data[:400] / 16.0).astype(np.float32)


# UMAP pays a ~10 s numba JIT once per process; keep its point counts small and calls few.
@pytest.mark.parametrize("method,m", [("pca", 150), ("tsne", 150), ("umap", 80)])
def test_shapes_determinism_and_subsample_cap(digits_X, method, m):
    emb, idx = project(digits_X, method=method, seed=3, max_points=m)
    assert emb.shape == (m, 2) and emb.dtype == np.float32 and np.isfinite(emb).all()
    assert idx.dtype == np.int64 and len(np.unique(idx)) == m
    assert np.all(np.diff(idx) > 0) and idx[0] >= 0 and idx[-1] < len(digits_X)
    # the points are spread out, not collapsed
    assert emb.std(axis=0).min() > 1e-3
    emb2, idx2 = project(digits_X, method=method, seed=3, max_points=m)
    assert np.array_equal(idx, idx2) and np.array_equal(emb, emb2)  # same seed -> same result
    if method == "pca":  # the subsample depends on the seed (same code path for every method)
        _, idx3 = project(digits_X, method=method, seed=4, max_points=m)
        assert not np.array_equal(idx, idx3)


def test_no_cap_keeps_every_row_in_order(digits_X):
    emb, idx = project(digits_X[:50], method="pca", seed=0)
    assert np.array_equal(idx, np.arange(50)) and emb.shape == (50, 2)
    # PCA: the first coordinate carries at least as much variance as the second
    assert emb[:, 0].var() >= emb[:, 1].var()


def test_neighbourhoods_clipped_with_notes(digits_X):
    p = project_detailed(digits_X, method="tsne", seed=0, max_points=10, perplexity=30.0)
    assert p.params["perplexity"] == pytest.approx(3.0) == effective_perplexity(10, 30.0)
    assert p.kl_divergence is not None and np.isfinite(p.kl_divergence)
    assert any("perplexity clipped" in n for n in p.notes)
    q = project_detailed(digits_X, method="tsne", seed=0, max_points=60, perplexity=5.0)
    assert q.params["perplexity"] == 5.0 and not any("clipped" in n for n in q.notes)
    u = project_detailed(digits_X[:8], method="umap", seed=0, n_neighbors=15)
    assert u.params["n_neighbors"] == 7 == effective_n_neighbors(8, 15)
    assert u.embedding.shape == (8, 2) and any("n_neighbors clipped" in n for n in u.notes)


@pytest.mark.parametrize(
    "X,kw,match",
    [
        (np.zeros(10), {}, "X: got an array of shape"),
        (np.zeros((4, 3, 2)), {}, "expected 2-D"),
        (np.zeros((2, 5)), {}, "X: got 2 rows; a projection needs at least 3"),
        (np.array([[0.0, 1.0]] * 4 + [[np.nan, 0.0]]), {}, "X: 1 row"),
        (np.array([["a", "b"]] * 4), {}, "X: got dtype"),
        (np.ones((5, 3)), {"method": "lda"}, "method: got 'lda'; allowed: pca, tsne, umap"),
        (np.ones((5, 3)), {"seed": -1}, "seed: got -1"),
        (np.ones((5, 3)), {"max_points": 2}, "max_points: got 2"),
        (np.ones((5, 3)), {"perplexity": 0.0}, "perplexity: got 0.0"),
        (np.ones((5, 3)), {"n_neighbors": 1}, "n_neighbors: got 1"),
        (np.ones((5, 3)), {"min_dist": 1.5}, "min_dist: got 1.5"),
    ],
)
def test_bad_input_names_the_argument(X, kw, match):
    args = {"method": "pca", "seed": 0, **kw}
    with pytest.raises(ValueError, match=match):
        project(X, **args)


def test_one_feature_and_subsample_helper():
    emb, _ = project(np.arange(6, dtype=np.float32)[:, None], method="pca", seed=0)
    assert emb.shape == (6, 2) and np.all(emb[:, 1] == 0) and np.all(np.diff(emb[:, 0]) > 0)
    a = subsample(1000, 10, seed=7)
    assert np.array_equal(a, subsample(1000, 10, seed=7)) and len(a) == 10


def test_trustworthiness_separates_good_from_random(digits_X):
    emb, idx = project(digits_X, method="pca", seed=0)
    rng = np.random.default_rng(0)
    t_pca = trustworthiness_score(digits_X[idx], emb)
    t_rand = trustworthiness_score(digits_X[idx], rng.normal(size=emb.shape))
    assert 0.7 < t_pca <= 1.0 and t_rand < 0.6 and t_pca > t_rand + 0.2
    plane = rng.normal(size=(40, 2))
    assert trustworthiness_score(plane, plane) == pytest.approx(1.0)  # exact embedding
    assert np.isnan(trustworthiness_score(plane[:2], plane[:2]))  # too few points for k >= 1


def test_run_projection_through_experiments():
    from core.data import load_dataset
    from core.runs.experiments import run

    seen = []
    cfg = ProjectionConfig(data={"name": "digits"}, method="pca", split="test", max_points=200, seed=1)
    res = run(cfg, progress=lambda f, m: seen.append((f, m)))
    assert res.kind == "projection" and len(res.key) == 64 and res.seed == 1
    ds = load_dataset(cfg.data, cfg.seed)
    rows = ds.split("test")
    m = min(200, len(rows))
    assert set(res.metrics) == {"n_points", "seconds", "trustworthiness"}
    assert res.metrics["n_points"] == m and 0.5 < res.metrics["trustworthiness"] <= 1.0
    a = res.artifacts
    assert a["embedding"].shape == (m, 2) and a["embedding"].dtype == np.float32
    assert np.isin(a["index"], rows).all() and len(np.unique(a["index"])) == m
    assert np.array_equal(a["label"], ds.y[a["index"]])
    for name in ("parity", "large", "bold"):
        assert np.array_equal(a[f"attr_{name}"], ds.attributes[name][a["index"]])
        assert res.info["attribute_values"][name] == ds.attribute_values[name]
    assert res.info["label_names"] == ds.label_names and res.info["dataset"] == "digits"
    assert res.info["attributes"] == ["parity", "large", "bold"] and res.info["method"] == "pca"
    # progress is monotone and passes through the documented milestones
    fracs = [f for f, _ in seen]
    assert fracs == sorted(fracs) and fracs[-1] == 1.0
    assert any(f == pytest.approx(0.1) for f in fracs) and any(f == pytest.approx(0.2) for f in fracs)
    # same config, same embedding (determinism)
    again = run(cfg)
    assert np.array_equal(again.artifacts["embedding"], a["embedding"])


def test_run_projection_tsne_reports_kl_and_effective_perplexity():
    from core.runs.experiments import run

    res = run({"kind": "projection", "data": {"name": "faces"}, "method": "tsne",
               "split": "all", "max_points": 40, "perplexity": 50})
    assert res.metrics["n_points"] == 40 and np.isfinite(res.metrics["kl_divergence"])
    assert res.info["effective_perplexity"] == pytest.approx(13.0)
    assert any("perplexity clipped" in n for n in res.info["notes"])
    assert res.artifacts["attr_bright"].shape == (40,)


def test_tsne_thread_budget_follows_run_limits():
    import sklearn.manifold  # noqa: F401  (loads its OpenMP runtime, as a t-SNE run does)

    from core.data.projection import n_cores, thread_budget
    from core.runs.experiments import thread_limits

    with thread_limits(1):
        assert thread_budget() == 1
    assert 1 <= thread_budget() <= n_cores()
