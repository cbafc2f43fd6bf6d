"""The gradient-leakage page's live panel (spec 001): what the κ channel, DP-SGD or no defense
certify before any run, read from the page's config and the cached data spectrum.

The config glue on top of the pure bounds (:mod:`core.bounds.channel` and
:mod:`core.bounds.channel_readout` take arrays and numbers): each defense declares its readout
(:attr:`core.foundation.parts.PageSpec.readouts`), one function here, which reads ``cfg.defense``,
``cfg.train`` (DP-SGD's recipe) and ``cfg.attack.batch_size`` duck-typed, so it does not import
the config models.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from core.bounds.channel_readout import wiener_floor


@lru_cache(maxsize=256)
def _rdp_noise_multiplier(target_epsilon: float, q: float, steps: int, delta: float) -> float:
    from core.bounds.accountants import dpsgd_noise_multiplier

    return float(dpsgd_noise_multiplier(target_epsilon, q, steps, delta, "rdp"))


def _live_noise_multiplier(cfg) -> float | None:
    """z for the DP-SGD block's target ε over its recipe's steps (q = sample rate, steps =
    epochs / q), solved with the RDP accountant (about 1 ms for a moderate ε; seconds at the
    knob's low end ε = 0.01, where z is in the thousands, hence remembered per setting; PRV
    takes seconds); None when the recipe samples by batch size (q depends on the data set's
    size)."""
    rec = cfg.defense.training(cfg.train)
    if "sample_rate" not in rec:
        return None
    q = float(rec["sample_rate"])
    steps = int(rec["epochs"]) * max(1, round(1.0 / q))
    return _rdp_noise_multiplier(float(cfg.defense.target_epsilon), q, steps,
                                 float(cfg.defense.delta))


def _empty() -> dict[str, Any]:
    return {"cards": [], "notes": [], "noise_eig": None, "capacity_dir": None}


def live_channel(cfg, spec, shape, basis=None) -> dict[str, Any]:
    """What the page shows before any run: the defense's registered gradient-leakage readout
    (:attr:`core.foundation.parts.PageSpec.readouts`: :func:`live_kappa`, :func:`live_dpsgd`,
    :func:`live_undefended`); no cards for a defense that declares none. ``basis``:
    :func:`personalized_basis` for the Personalized channel (cached by the page)."""
    from core.foundation.parts import DEFENSES
    from core.foundation.registry import load_object

    path = DEFENSES.get(cfg.defense.kind).readout_for("gradient_leakage")
    return _empty() if path is None else load_object(path)(cfg, spec, shape, basis=basis)


def live_undefended(cfg, spec, shape, basis=None) -> dict[str, Any]:
    """No defense: no floor holds."""
    out = _empty()
    out["notes"].append("Undefended: the upload is a deterministic function of the batch, "
                        "so its information about the data is unbounded and no floor holds.")
    return out


def live_dpsgd(cfg, spec, shape, basis=None) -> dict[str, Any]:
    """DP-SGD: its capacity B/z² (Thm 4) and the floor at the tight B/(2z²)."""
    from core.bounds import channel as cb

    lam = spec.eigenvalues
    d = len(lam)
    b = cfg.attack.batch_size
    out = _empty()
    z = cfg.defense.noise_multiplier
    solved = z is None
    if solved:
        z = _live_noise_multiplier(cfg)
        if z is None:
            out["notes"].append("z is solved from the target ε at run time (the recipe "
                                "samples batches of the train block's size, whose rate "
                                "depends on the data).")
            return out
    if z == 0:
        out["notes"].append("Noise multiplier 0: clipping without noise (ε = ∞); the "
                            "upload's information is unbounded and no floor holds.")
        return out
    tight = cb.dp_capacity(b, z, tight=True)
    out["cards"] = [("capacity B/z² (Thm 4)", f"{cb.dp_capacity(b, z):.4g} nats",
                     "As printed in the paper, per step, batch B."),
                    ("capacity B/(2z²)", f"{tight:.4g} nats", "Without the factor-2 slack."),
                    ("per dimension", f"{tight / d:.3g}", "nats per dimension"),
                    ("Thm 1 floor / step", f"{cb.thm1_mse_bound(lam, tight, per='pixel'):.4g}",
                     "Per-pixel MSE floor at the tight capacity (Gaussian plug-in)."),
                    ("ε", "after a run", "From the accountant (PRV, RDP fallback).")]
    if solved:
        out["cards"].insert(0, ("z (RDP solve)", f"{z:.3g}",
                                (f"Noise multiplier for target ε = "
                                f"{cfg.defense.target_epsilon:g} over the recipe's steps, "
                                "solved with the RDP accountant (instant); the run solves "
                                "it again with PRV, which gives a slightly smaller z.")))
    out["notes"].append("DP-SGD's capacity grows with the batch size B (Thm 4): a larger "
                        "batch leaks more per step under DP, the opposite of plain training.")
    return out


def live_kappa(cfg, spec, shape, basis=None) -> dict[str, Any]:
    """The κ channel: the solved noise, κ/d, the per-direction capacity and the floors."""
    from core.bounds import channel as cb
    from core.defenses.channel import channel_beta, channel_from_block, solve_channel

    lam = spec.eigenvalues
    d = len(lam)
    b = cfg.attack.batch_size
    out = _empty()

    kind, kappa = cfg.defense.channel, float(cfg.defense.kappa)
    try:
        if kind == "personalized":
            mu = basis[0] if basis is not None else None
            solved = solve_channel(kind, spec, kappa, beta=channel_beta(cfg.defense, shape), mu=mu)
        else:
            solved, _ = channel_from_block(cfg.defense, spec, shape)
    except ValueError as exc:
        out["notes"].append(f"κ = {kappa:g} cannot be certified: {exc}")
        return out
    std = np.asarray(solved.pixel_std)
    floor = cb.thm1_mse_bound(lam, kappa, per="pixel")
    wiener = wiener_floor(kind, spec, kappa, basis)
    out["cards"] = [("σ (noise variance)", f"{solved.sigma:.4g}",
                     ("Natural / Personalized: σ; White: the scale s with σ_i = s·λ_i; "
                      "Laplace: 2b².")),
                    ("per-pixel noise std", f"{std.mean():.3g}", "Mean over pixels of √Var(ξ)."),
                    ("κ/d", f"{kappa / d:.3g}", f"nats per dimension (d = {d})"),
                    ("Thm 1 floor / round", f"{floor:.4g}",
                     ("Per-pixel MSE no attacker can beat with one round's information, "
                      "Gaussian plug-in for h(D) on the informative subspace (heuristic).")),
                    ("Wiener MMSE", f"{wiener:.4g}", ("Per-pixel Bayes error of an attacker who "
                                                     "sees the noisy data itself (Gaussian data)."))]
    out["noise_eig"], out["capacity_dir"] = solved.noise_var_eig, solved.capacity_per_direction
    if kind == "natural":
        # the other defenses in the same currency (spec 001 §4.2-4.3): the same noise on a
        # batch mean (Eq. 24), and dropping the largest / tenth eigen-direction (compression)
        s = float(solved.sigma)
        out["notes"].append(
            f"Same σ, other mechanisms: on the mean of a batch of {b} the capacity is "
            f"{cb.batch_capacity(lam, s, b):.3g} nats (Eq. 24: larger batches leak less under "
            f"constant noise); dropping the largest eigen-direction removes "
            f"{cb.compression_delta(lam, s, [0]):.3g} nats, the tenth "
            f"{cb.compression_delta(lam, s, [min(9, d - 1)]):.3g} (compressing high-variance "
            "directions protects most).")
    nz = spec.n_zero
    if nz:
        out["notes"].append(f"{nz} of {d} eigen-directions have zero variance (constant pixels): "
                            "Theorem 1's Gaussian plug-in is evaluated on the other "
                            f"{d - nz}; on all {d} it would be 0.")
    if cfg.defense.noise_mode == "redraw":
        out["notes"].append("Noise redrawn every step: κ per step, n·κ over a run of n steps — "
                            "the whole-run bound exp(−2nκ/d) is vacuous for any realistic n; "
                            "the per-round floor is the meaningful one.")
    else:
        out["notes"].append("One fixed noisy copy: by the data-processing inequality everything "
                            "released over the whole run carries at most κ.")
    if kind == "laplace":
        out["notes"].append(f"Laplace is a derived bound (not the paper's): it cannot certify "
                            f"below {cb.LAPLACE_PENALTY_PER_DIM:.4f}·d = "
                            f"{cb.LAPLACE_PENALTY_PER_DIM * d:.1f} nats.")
    return out
