"""Privacy accountants for noise on the uploaded device updates (user-level DP over FL rounds).

A registry name -> accountant object (Opacus style):

- ``"rdp"``: Rényi-DP accountant of the subsampled Gaussian mechanism (Mironov 2017;
  Mironov, Talwar & Zhang 2019) via ``opacus.accountants.RDPAccountant``, with
  noise_multiplier = σ / sensitivity, sample_rate q = fraction of devices per round,
  steps = rounds. Opacus analyses Poisson sampling under add/remove-one neighbours; the FedAvg
  simulator samples a fixed-size subset, for which this is the customary approximation.
- ``"basic"``: basic composition of the per-round (ε, δ): (T·ε, T·δ). No subsampling amplification
  (valid, conservative).
- ``"advanced"``: advanced composition (Dwork, Rothblum & Vadhan 2010):
  ε_total = √(2T ln(1/δ'))·ε + T·ε(e^ε − 1), δ_total = T·δ + δ'.

:func:`total_epsilon` picks the accountant for a mechanism and always reports which it used.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from core.foundation.checks import check_choice, check_range
from core.foundation.registry import Registry


class Accountant(Protocol):
    name: str

    def compose(self, **kw: Any) -> tuple[float, float]: ...


@dataclass(frozen=True)
class BasicComposition:
    """T-fold basic composition: (T·ε, min(1, T·δ))."""

    name: str = "basic"

    def compose(
        self, *, eps_round: float, delta_round: float, rounds: int, **_: Any
    ) -> tuple[float, float]:
        return float(rounds * eps_round), float(min(1.0, rounds * delta_round))


@dataclass(frozen=True)
class AdvancedComposition:
    """Advanced composition (Dwork, Rothblum & Vadhan 2010, Thm III.3):
    ε_total = √(2T ln(1/δ'))·ε + T·ε(e^ε − 1), δ_total = T·δ + δ'."""

    name: str = "advanced"

    def compose(
        self, *, eps_round: float, delta_round: float, rounds: int, delta_prime: float, **_: Any
    ) -> tuple[float, float]:
        T = rounds
        e = eps_round
        em1 = math.expm1(e) if e < 700 else math.inf
        eps = math.sqrt(2.0 * T * math.log(1.0 / delta_prime)) * e + T * e * em1
        return float(eps), float(min(1.0, T * delta_round + delta_prime))


#: RDP orders searched: Opacus' default grid (1.1 … 63) widened at both ends, so very small and
#: very large noise multipliers find their optimal order inside the grid.
RDP_ORDERS: list[float] = (
    [1.0 + x / 100.0 for x in range(1, 10)] + [1.0 + x / 10.0 for x in range(1, 100)]
    + list(range(12, 64)) + [80, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096]
)


@dataclass(frozen=True)
class RDPGaussian:
    """Subsampled-Gaussian RDP accountant (Opacus ``RDPAccountant``), converted to (ε, δ)."""

    name: str = "rdp"

    def compose(
        self, *, noise_multiplier: float, sample_rate: float, rounds: int, delta: float, **_: Any
    ) -> tuple[float, float]:
        from opacus.accountants import RDPAccountant

        acc = RDPAccountant()
        acc.history = [(float(noise_multiplier), float(sample_rate), int(rounds))]
        with warnings.catch_warnings():
            # at tiny noise the optimum sits at α → 1, where RDP is loose; the ε returned is
            # still a valid upper bound, so the "expand the range of alphas" hint is noise here
            warnings.filterwarnings("ignore", message="Optimal order is the")
            return float(acc.get_epsilon(delta=delta, alphas=RDP_ORDERS)), float(delta)


ACCOUNTANTS: Registry[Accountant] = Registry("accountant")
ACCOUNTANTS.register("rdp", RDPGaussian())
ACCOUNTANTS.register("basic", BasicComposition())
ACCOUNTANTS.register("advanced", AdvancedComposition())


def get_accountant(name: str) -> Accountant:
    """Accountant by registry name (``rdp``, ``basic``, ``advanced``)."""
    if name not in ACCOUNTANTS:
        raise ValueError(ACCOUNTANTS.unknown(name))
    return ACCOUNTANTS.get(name)


def total_epsilon(
    *,
    mechanism: Literal["gaussian", "laplace"],
    eps_round: float,
    delta: float,
    rounds: int,
    sample_rate: float,
    noise_multiplier: float | None = None,
    delta_prime: float | None = None,
) -> dict[str, Any]:
    """Total (ε, δ) after ``rounds`` rounds of per-round noise on the device updates.

    - Gaussian with ``noise_multiplier`` (σ / sensitivity): ``rdp`` at target δ_total = ``delta``
      with sampling rate ``sample_rate``, one step per round.
    - Gaussian without it: ``basic`` composition of the per-round (``eps_round``, ``delta``).
    - Laplace (pure ε per round, δ = 0): the smaller ε of ``basic`` (T·ε, 0) and ``advanced``
      (δ' = ``delta_prime``, default ``delta``; δ_total = δ').

    Returns ``{"epsilon_total", "delta_total", "accountant"}`` (the name of the one used).
    """
    check_range("rounds", rounds, 1, math.inf)
    check_range("sample_rate", sample_rate, 0.0, 1.0, lo_open=True)
    check_range("delta", delta, 0.0, 1.0, lo_open=True, hi_open=True)
    check_range("eps_round", eps_round, 0.0, math.inf, lo_open=True)
    rounds = int(rounds)
    if mechanism == "gaussian":
        if noise_multiplier is not None:
            check_range("noise_multiplier", noise_multiplier, 0.0, math.inf, lo_open=True)
            eps, dlt = ACCOUNTANTS.get("rdp").compose(
                noise_multiplier=noise_multiplier,
                sample_rate=sample_rate,
                rounds=rounds,
                delta=delta,
            )
            return {"epsilon_total": eps, "delta_total": dlt, "accountant": "rdp"}
        eps, dlt = ACCOUNTANTS.get("basic").compose(
            eps_round=eps_round, delta_round=delta, rounds=rounds
        )
        return {"epsilon_total": eps, "delta_total": dlt, "accountant": "basic"}
    if mechanism == "laplace":
        dp = delta if delta_prime is None else delta_prime
        check_range("delta_prime", dp, 0.0, 1.0, lo_open=True, hi_open=True)
        b_eps, b_dlt = ACCOUNTANTS.get("basic").compose(
            eps_round=eps_round, delta_round=0.0, rounds=rounds
        )
        a_eps, a_dlt = ACCOUNTANTS.get("advanced").compose(
            eps_round=eps_round, delta_round=0.0, rounds=rounds, delta_prime=dp
        )
        if a_eps < b_eps:
            return {"epsilon_total": a_eps, "delta_total": a_dlt, "accountant": "advanced"}
        return {"epsilon_total": b_eps, "delta_total": b_dlt, "accountant": "basic"}
    raise ValueError(f"mechanism: got {mechanism!r}; allowed: gaussian, laplace")


# ---------------------------------------------------------------------------------------------
# DP-SGD accounting (per-example DP of Opacus' Poisson-subsampled Gaussian mechanism)

#: Largest PRV discretisation grid (points) tried before falling back to RDP. Opacus' PRV
#: accountant sizes its grid as 2L / mesh, with L growing with ε and mesh ∝ 1/√steps; measured
#: (1 CPU thread) 0.1 s at 4e5 points, 21 s at 2e7 points, and an out-of-memory kill near 1.5e9
#: points (σ = 0.5, q = 0.1, 1e5 steps), so large-ε / many-step settings must not reach it.
PRV_MAX_POINTS: int = 2**22

#: the DP-SGD accountants of :func:`dpsgd_epsilon` (Opacus' names)
DPSGD_ACCOUNTANTS: tuple[str, ...] = ("prv", "rdp")


def _check_dpsgd(noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                 accountant: str) -> None:
    check_range("noise_multiplier", noise_multiplier, 0.0, math.inf, lo_open=True)
    check_range("sample_rate", sample_rate, 0.0, 1.0, lo_open=True)
    check_range("steps", steps, 1, math.inf)
    check_range("delta", delta, 0.0, 1.0, lo_open=True, hi_open=True)
    check_choice("accountant", accountant, DPSGD_ACCOUNTANTS)


class _PRVTooLarge(RuntimeError):
    """PRV's discretisation grid would exceed :data:`PRV_MAX_POINTS`."""


@functools.cache
def _guarded_prv_class() -> type:
    """Opacus' ``PRVAccountant`` whose grid (``_get_domain``: 2L / mesh points, L from
    ``compute_safe_domain_size``, mesh = eps_error / √(T ln(12/δ_err)/2)) is checked against
    :data:`PRV_MAX_POINTS` before any array is allocated; otherwise the same computation."""
    from opacus.accountants import PRVAccountant

    class GuardedPRVAccountant(PRVAccountant):
        def _get_domain(self, prvs, num_self_compositions, eps_error, delta_error):
            domain = super()._get_domain(prvs=prvs, num_self_compositions=num_self_compositions,
                                         eps_error=eps_error, delta_error=delta_error)
            if domain.size > PRV_MAX_POINTS:
                raise _PRVTooLarge(f"PRV grid would need {domain.size:.3g} points "
                                   f"(> {PRV_MAX_POINTS}): ε too large or too many steps for PRV")
            return domain

    return GuardedPRVAccountant


def _prv_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """ε of Opacus' PRV accountant (eps_error 0.01, its upper bound); raises RuntimeError (one
    line, the reason) when the grid would exceed :data:`PRV_MAX_POINTS`, when PRV fails, or
    when it returns a non-finite ε."""
    acc = _guarded_prv_class()()
    acc.history = [(float(noise_multiplier), float(sample_rate), int(steps))]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # exp overflow in PRV's tail bounds
            warnings.filterwarnings("ignore", message="Optimal order is the")  # its RDP bound
            eps = float(acc.get_epsilon(delta=delta))
    except _PRVTooLarge:
        raise
    except Exception as exc:  # any PRV failure means "use RDP", with the reason
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise RuntimeError(f"PRV raised {type(exc).__name__}: {first}") from exc
    if not math.isfinite(eps):
        raise RuntimeError(f"PRV returned a non-finite ε ({eps})")
    return eps


def _rdp_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    return ACCOUNTANTS.get("rdp").compose(noise_multiplier=noise_multiplier,
                                          sample_rate=sample_rate, rounds=steps, delta=delta)[0]


def dpsgd_accounting(noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                     accountant: str = "prv") -> dict[str, Any]:
    """ε(δ) of DP-SGD: ``steps`` Poisson-subsampled Gaussian steps (rate q = ``sample_rate``,
    noise std = ``noise_multiplier`` × clipping norm), add/remove-one neighbours (Opacus).

    ``"rdp"``: Opacus' ``RDPAccountant`` over :data:`RDP_ORDERS` (a superset of Opacus' default
    orders, so ε ≤ Opacus' default and equal when the optimum is an interior default order).
    ``"prv"``: Opacus' ``PRVAccountant`` (ε upper bound, eps_error 0.01), falling back to RDP
    when PRV would need a grid over :data:`PRV_MAX_POINTS`, raises, or returns non-finite.
    Returns ``{"epsilon", "accountant"`` (the one used)``, "fallback_reason"`` ("" if none)``}``.
    """
    _check_dpsgd(noise_multiplier, sample_rate, steps, delta, accountant)
    if accountant == "prv":
        try:
            return {"epsilon": _prv_epsilon(noise_multiplier, sample_rate, int(steps), delta),
                    "accountant": "prv", "fallback_reason": ""}
        except RuntimeError as exc:
            reason = str(exc)
    else:
        reason = ""
    eps = _rdp_epsilon(noise_multiplier, sample_rate, int(steps), delta)
    return {"epsilon": eps, "accountant": "rdp", "fallback_reason": reason}


def dpsgd_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                  accountant: str = "prv") -> tuple[float, str]:
    """(ε, accountant used) of DP-SGD; see :func:`dpsgd_accounting` (which also says why PRV
    fell back to RDP)."""
    out = dpsgd_accounting(noise_multiplier, sample_rate, steps, delta, accountant)
    return float(out["epsilon"]), str(out["accountant"])


def dpsgd_noise_multiplier(target_epsilon: float, sample_rate: float, steps: int, delta: float,
                           accountant: str = "prv", epsilon_tolerance: float = 0.01) -> float:
    """Smallest noise multiplier σ (to ``epsilon_tolerance``) with ε(σ) ≤ ``target_epsilon``
    after ``steps`` steps at rate ``sample_rate``.

    ``"rdp"``: ``opacus.accountants.utils.get_noise_multiplier`` over :data:`RDP_ORDERS`.
    ``"prv"``: the same doubling + bisection, on :func:`dpsgd_accounting`'s guarded PRV ε
    (Opacus' own search would evaluate PRV at small σ, where its grid can exhaust memory),
    searching below the RDP answer σ_rdp (PRV is the tighter bound); a σ where PRV is
    unavailable counts as "over budget". If PRV is unavailable (or over budget) even at σ_rdp,
    σ_rdp is returned, and :func:`dpsgd_accounting` at that σ falls back to RDP (ε ≤ target).
    """
    check_range("target_epsilon", target_epsilon, 0.0, math.inf, lo_open=True)
    check_range("epsilon_tolerance", epsilon_tolerance, 0.0, math.inf, lo_open=True)
    _check_dpsgd(1.0, sample_rate, steps, delta, accountant)
    from opacus.accountants.utils import get_noise_multiplier

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Optimal order is the")
        sigma_rdp = float(get_noise_multiplier(
            target_epsilon=target_epsilon, target_delta=delta, sample_rate=sample_rate,
            steps=int(steps), accountant="rdp", epsilon_tolerance=epsilon_tolerance,
            alphas=RDP_ORDERS))
    if accountant == "rdp":
        return sigma_rdp

    def eps_prv(sigma: float) -> float:
        try:
            return _prv_epsilon(sigma, sample_rate, int(steps), delta)
        except RuntimeError:
            return math.inf  # unavailable: treat as over budget (pushes σ up, stays valid)

    eps_high = eps_prv(sigma_rdp)
    if eps_high > target_epsilon:
        return sigma_rdp
    lo, hi = 0.0, sigma_rdp
    while target_epsilon - eps_high > epsilon_tolerance and hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        eps = eps_prv(mid)
        if eps < target_epsilon:
            hi, eps_high = mid, eps
        else:
            lo = mid
    return hi
