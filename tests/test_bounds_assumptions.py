"""Bounds under their assumptions (issue #22 item 4): entropy estimators on data of known
entropy, Theorem 3 under an estimated h(x) (core/bounds/entropy.py, core/bounds/reconstruction.py)
and measured errors against a bound on an expectation (core/bounds/expectation.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.bounds.entropy import (
    dequantised,
    gaussian_entropy,
    grid_step,
    knn_entropy,
    log_unit_ball_volume,
)
from core.bounds.expectation import expected_error_check, mse_from_psnr
from core.bounds.reconstruction import (
    theorem3_dequantised,
    theorem3_entropy,
    theorem3_unit_cube,
)


def _gaussian(d, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    S = A @ A.T + 0.5 * np.eye(d)
    h = 0.5 * (d * math.log(2 * math.pi * math.e) + np.linalg.slogdet(S)[1])
    return rng.multivariate_normal(np.zeros(d), S, n), h


@pytest.mark.parametrize("d", [1, 2, 5])
def test_both_estimators_recover_a_gaussians_entropy(d):
    X, h = _gaussian(d)
    assert gaussian_entropy(X) == pytest.approx(h, abs=0.05 * d)
    assert knn_entropy(X) == pytest.approx(h, abs=0.1 * d)


@pytest.mark.parametrize("d", [1, 2])
def test_knn_recovers_the_uniform_cubes_zero_entropy(d):
    U = np.random.default_rng(1).random((4000, d))
    assert knn_entropy(U) == pytest.approx(0.0, abs=0.06)


@pytest.mark.parametrize("d", [1, 3, 10])
def test_gaussian_value_is_an_upper_bound_for_uniform_data(d):
    # the cube's entropy is 0; the Gaussian of its covariance (1/12) has d/2·ln(2πe/12) > 0
    U = np.random.default_rng(2).random((5000, d))
    g = gaussian_entropy(U)
    assert g > 0 and g == pytest.approx(0.5 * d * math.log(2 * math.pi * math.e / 12), abs=0.05 * d)


def test_degenerate_data_has_minus_infinite_entropy():
    X = np.random.default_rng(3).normal(size=(200, 2))
    X3 = np.c_[X, X[:, 0] + X[:, 1]]  # on a plane
    assert gaussian_entropy(X3) == -math.inf
    assert math.isfinite(gaussian_entropy(X3, ridge=1e-3))
    assert knn_entropy(np.r_[X, X], k=1) == -math.inf  # duplicates: a discrete sample
    assert log_unit_ball_volume(2) == pytest.approx(math.log(math.pi))


def test_theorem3_entropy_reduces_to_the_paper_at_the_uniform_prior():
    for norm, eta in (("l2", 1.5), ("linf", 0.2)):
        paper = theorem3_unit_cube(10.0, 64, eta, norm)
        ours = theorem3_entropy(10.0, 0.0, 0.0, 64, eta, norm)
        assert ours.bound == pytest.approx(paper.bound) and ours.vacuous == paper.vacuous
        lower = theorem3_entropy(10.0, -5.0, 0.0, 64, eta, norm)  # less entropy: weaker
        assert lower.bound == pytest.approx(max(0.0, paper.bound - 5.0 / paper.denominator))
    assert theorem3_entropy(1.0, -math.inf, 0.0, 8, 0.1, "linf").vacuous


def test_dequantised_data_and_its_bound():
    rng = np.random.default_rng(4)
    X = np.round(rng.random((2000, 5)) * 16) / 16
    X[:, 2] = 0.5  # a constant pixel is dropped
    data = dequantised(X)
    assert data.step == pytest.approx(1 / 16) and grid_step(X) == pytest.approx(1 / 16)
    assert list(data.columns) == [0, 1, 3, 4]
    assert data.log_volume == pytest.approx(4 * math.log1p(1 / 16))
    # the cube on a 17-level grid, dequantised: close to uniform on [−Δ/2, 1 + Δ/2]^4
    assert data.h_knn == pytest.approx(data.log_volume, abs=0.3)
    assert data.h_gaussian > data.h_knn - 0.3
    pt = theorem3_dequantised(0.5, data, 0.1, "linf")
    assert pt.eta == 0.1 and 0.0 <= pt.bound <= 1.0
    # evaluated at η + Δ/2 on 4 coordinates: the denominator is 4·(ln(1 + Δ) − ln(2(η + Δ/2)))
    assert pt.denominator == pytest.approx(4 * (math.log1p(1 / 16) - math.log(2 * (0.1 + 1 / 32))))


@pytest.mark.parametrize("call, field", [
    (lambda: gaussian_entropy(np.zeros(3)), "X"),
    (lambda: gaussian_entropy(np.zeros((3, 2)), ridge=-1.0), "ridge"),
    (lambda: knn_entropy(np.zeros((3, 2)), k=3), "k"),
    (lambda: dequantised(np.full((5, 2), 2.0)), "X"),
    (lambda: theorem3_entropy(1.0, 2.0, 0.0, 4, 0.1, "linf"), "h_x_nats"),
    (lambda: theorem3_entropy(-1.0, 0.0, 0.0, 4, 0.1, "linf"), "mi_nats"),
])
def test_bad_input_gives_one_line_errors(call, field):
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value).startswith(field) and "\n" not in str(e.value)


def test_expected_bound_counts_means_and_shows_single_points_apart():
    rng = np.random.default_rng(5)
    errs = [np.abs(rng.normal(0.03, 0.02, 32)) for _ in range(3)]
    errs[0][0] = 1e-4  # one lucky image below the bound
    chk = expected_error_check(errs, [0.001, 0.0011, 0.0009], n_boot=300)
    assert chk.counts()[:2] == (0, 1) and chk.seeds == 3 and chk.points == 96
    lo, hi = chk.interval
    assert lo <= chk.mean <= hi and chk.mean == pytest.approx(np.concatenate(errs).mean())
    assert "1 of 96 single targets" in chk.explanation and "not counted" in chk.explanation
    low = expected_error_check([e * 0.01 for e in errs], 0.001, n_boot=300)
    assert low.seed_means_below == 3 and "real miss" in low.explanation
    assert [p["below"] for p in low.per_seed] == [True, True, True]


def test_mse_from_psnr_inverts_the_definition():
    np.testing.assert_allclose(mse_from_psnr([20.0, 40.0]), [0.01, 1e-4])


@pytest.mark.parametrize("call, field", [
    (lambda: expected_error_check([], 0.1), "errors_by_seed"),
    (lambda: expected_error_check([np.array([np.nan])], 0.1), "errors_by_seed"),
    (lambda: expected_error_check([np.ones(3), np.ones(3)], [0.1, 0.2, 0.3]), "bounds"),
    (lambda: mse_from_psnr([np.inf]), "psnr_db"),
])
def test_expected_bound_rejects_bad_input_in_one_line(call, field):
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value).startswith(field) and "\n" not in str(e.value)
