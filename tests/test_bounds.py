"""TAPPFL bounds (spec B9) and the privacy accountants."""

import math
import time

import numpy as np
import pytest

from core.bounds import tappfl as B
from core.bounds.accountants import ACCOUNTANTS, get_accountant, total_epsilon

H_TABLE = [0.05, 0.10, 0.20, 0.30, 0.50, 0.70, 0.90, 0.95, 1.00]
PAPER_ROW = [0.9964, 0.9915, 0.9796, 0.9653, 0.9303, 0.8871, 0.8356, 0.8214, 0.8066]
EXACT_ROW = [0.9944, 0.9870, 0.9689, 0.9468, 0.8900, 0.8107, 0.6840, 0.6309, 0.5000]


def test_spec_table_values():
    h = np.array(H_TABLE)
    np.testing.assert_allclose(B.thm2_paper_bound(h), PAPER_ROW, atol=6e-5)
    np.testing.assert_allclose(B.thm2_exact_bound(h), EXACT_ROW, atol=6e-5)
    assert np.round(B.thm2_paper_bound(1.0), 3) == 0.807


def test_entropy_inverse_roundtrip_and_monotone():
    p = np.linspace(0, 0.49, 2001)
    np.testing.assert_allclose(B.inverse_binary_entropy(B.binary_entropy(p)), p, atol=1e-10)
    assert B.binary_entropy(0.5) == 1.0 and B.binary_entropy(0.0) == 0.0
    assert B.inverse_binary_entropy(1.0) == 0.5 and B.inverse_binary_entropy(0.0) == 0.0
    h = np.linspace(0, 1, 501)
    assert np.all(np.diff(B.inverse_binary_entropy(h)) > 0)
    for f in (B.thm2_paper_bound, B.thm2_exact_bound):
        v = f(h)
        assert np.all(np.diff(v) < 0)  # decreasing in H*
        assert f(0.0) == 1.0 and f(1e-9) == pytest.approx(1.0, abs=1e-8)  # limit H -> 0
    assert B.thm2_exact_bound(1.0) == 0.5
    assert np.all(
        B.thm2_exact_bound(h[1:]) < B.thm2_paper_bound(h[1:])
    )  # the exact form is tighter
    with pytest.raises(ValueError, match="h_bits"):
        B.thm2_paper_bound(1.5)


def test_thm2_bounds_validity_and_fano():
    ok = B.thm2_bounds(0.5, 2)
    assert ok["valid"] and ok["exact"] == pytest.approx(0.89, abs=1e-4)
    multi = B.thm2_bounds(0.5, 7)
    assert (
        not multi["valid"]
        and "binary attributes only" in multi["message"]
        and math.isnan(multi["exact"])
    )
    h = np.array(H_TABLE)
    np.testing.assert_allclose(B.fano_accuracy_bound(h, 2), B.thm2_exact_bound(h), atol=1e-12)
    assert B.fano_accuracy_bound(math.log2(7), 7) == pytest.approx(1 / 7)
    assert np.all(np.diff(B.fano_accuracy_bound(np.linspace(0, math.log2(7), 50), 7)) < 0)


def test_entropy_estimate_and_caveat():
    h, caveat = B.conditional_entropy_estimate_bits(math.log(2))
    assert h == pytest.approx(1.0) and "optimistic" in caveat
    assert B.conditional_entropy_estimate_bits(5.0, 2)[0] == 1.0  # clipped to log2 k
    assert B.conditional_entropy_estimate_bits(5.0, 7)[0] == pytest.approx(math.log2(7))


def test_theorem1_and_ingredients():
    t = B.thm1_tradeoff(delta_y_u=0.3, R=1.0, C_L=0.25, adv=0.2)
    assert t["rhs"] == pytest.approx(0.3 - 0.1) and not t["vacuous"]
    assert B.thm1_tradeoff(delta_y_u=0.3, R=10.0, C_L=1.0, adv=0.2)["vacuous"]
    y = np.array([1, 1, 0, 0, 1, 0, 0, 0])
    u = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    assert B.delta_y_given_u(y, u) == pytest.approx(0.25)  # 2/4 vs 1/4
    assert B.representation_radius(np.array([[3.0, 4.0], [1.0, 0.0]])) == 5.0
    assert B.lipschitz_logistic(np.array([3.0, 4.0])) == 1.25
    W1, W2 = np.diag([2.0, 1.0]), np.array([[0.0, 3.0]])
    assert B.lipschitz_mlp([W1, W2]) == pytest.approx(2 * 3 / 4)
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.9, 0.8, 0.7, 0.6])
    # Signed advantage max(TPR − FPR), the one meaning in privlab (core.foundation.metrics.advantage):
    # the attacker must know which direction of the score means u = 1; max |TPR − FPR| would
    # credit an anti-correlated score (-s) with a perfect attack it never made.
    assert B.empirical_advantage(u, s) == 1.0 and B.empirical_advantage(u, -s) == 0.0
    assert B.empirical_advantage(u, np.zeros(8)) == 0.0


def test_tappfl_bounds_flat_and_fast():
    t0 = time.perf_counter()
    d = B.tappfl_bounds(
        n_values=2,
        ce_nats=0.5,
        delta_y_u=0.2,
        R=4.0,
        C_L=0.5,
        adv=0.3,
        h_u_bits=1.0,
        mi_upper_bits=0.4,
    )
    dt = time.perf_counter() - t0
    assert all(k.startswith("bound_") and isinstance(v, float) for k, v in d.items())
    assert d["bound_thm1_vacuous"] == 1.0 and d["bound_thm2_valid"] == 1.0
    assert d["bound_thm2_exact"] == pytest.approx(B.thm2_exact_bound(0.5 / math.log(2)))
    assert d["bound_thm2_exact_conservative"] == pytest.approx(B.thm2_exact_bound(0.6))
    m = B.tappfl_bounds(n_values=7, ce_nats=1.2)
    assert m["bound_thm2_valid"] == 0.0 and 0 < m["bound_fano"] < 1
    # not applicable -> NaN: Thm 2 at k = 7, Thm 1 without its ingredients
    assert math.isnan(m["bound_thm2_exact"]) and math.isnan(m["bound_thm1_rhs"])
    assert math.isnan(m["bound_thm1_vacuous"]) and set(m) == set(d)
    for key in ("bound_thm1_delta", "bound_thm1_R", "bound_thm1_CL", "bound_thm1_adv"):
        assert key in d  # the contract's names
    assert d["bound_thm1_rhs"] == pytest.approx(0.2 - 2 * 4.0 * 0.5 * 0.3)
    assert dt < 0.05
    t0 = time.perf_counter()
    for _ in range(50):
        B.thm2_exact_bound(np.linspace(0, 1, 200))
    assert (time.perf_counter() - t0) / 50 < 5e-3  # < 1 ms on an idle machine; slack for CI


def test_rdp_accountant_monotone():
    def eps(rounds, z):
        return total_epsilon(
            mechanism="gaussian",
            eps_round=1.0,
            delta=1e-5,
            rounds=rounds,
            sample_rate=0.1,
            noise_multiplier=z,
        )

    r = eps(20, 1.0)
    assert r["accountant"] == "rdp" and r["delta_total"] == 1e-5
    assert eps(10, 1.0)["epsilon_total"] < r["epsilon_total"] < eps(40, 1.0)["epsilon_total"]
    assert eps(20, 2.0)["epsilon_total"] < r["epsilon_total"]
    b = total_epsilon(mechanism="gaussian", eps_round=1.0, delta=1e-5, rounds=20, sample_rate=0.1)
    assert b == {"epsilon_total": 20.0, "delta_total": 2e-4, "accountant": "basic"}


def test_basic_vs_advanced_for_laplace():
    small_t = total_epsilon(
        mechanism="laplace", eps_round=1.0, delta=1e-5, rounds=20, sample_rate=0.1
    )
    assert (
        small_t["accountant"] == "basic"
        and small_t["epsilon_total"] == 20.0
        and small_t["delta_total"] == 0.0
    )
    big_t = total_epsilon(
        mechanism="laplace", eps_round=0.05, delta=1e-5, rounds=2000, sample_rate=0.1
    )
    adv = get_accountant("advanced").compose(
        eps_round=0.05, delta_round=0.0, rounds=2000, delta_prime=1e-5
    )
    assert big_t["accountant"] == "advanced" and big_t["epsilon_total"] == pytest.approx(adv[0])
    assert adv[0] < 2000 * 0.05  # advanced beats basic (T·ε = 100) here
    e, T = 0.05, 2000
    assert adv[0] == pytest.approx(math.sqrt(2 * T * math.log(1e5)) * e + T * e * math.expm1(e))
    assert set(ACCOUNTANTS) == {"rdp", "basic", "advanced"}
    with pytest.raises(ValueError, match="accountant"):
        get_accountant("prv")
    with pytest.raises(ValueError, match="sample_rate"):
        total_epsilon(mechanism="gaussian", eps_round=1.0, delta=1e-5, rounds=5, sample_rate=0.0)
