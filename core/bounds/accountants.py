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

import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from core.registry import Registry


class Accountant(Protocol):
    name: str

    def compose(self, **kw: Any) -> tuple[float, float]: ...


def _check(
    name: str, value: float, lo: float, hi: float, lo_open: bool = False, hi_open: bool = False
) -> None:
    bad = (
        (value <= lo if lo_open else value < lo)
        or (value >= hi if hi_open else value > hi)
        or math.isnan(value)
    )
    if bad:
        lo_s = f"{lo:g} {'<' if lo_open else '<='} "
        hi_s = f" {'<' if hi_open else '<='} {hi:g}" if math.isfinite(hi) else ""
        raise ValueError(f"{name}: got {value!r}; allowed range {lo_s}value{hi_s}")


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
    _check("rounds", rounds, 1, math.inf)
    _check("sample_rate", sample_rate, 0.0, 1.0, lo_open=True)
    _check("delta", delta, 0.0, 1.0, lo_open=True, hi_open=True)
    _check("eps_round", eps_round, 0.0, math.inf, lo_open=True)
    rounds = int(rounds)
    if mechanism == "gaussian":
        if noise_multiplier is not None:
            _check("noise_multiplier", noise_multiplier, 0.0, math.inf, lo_open=True)
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
        _check("delta_prime", dp, 0.0, 1.0, lo_open=True, hi_open=True)
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
