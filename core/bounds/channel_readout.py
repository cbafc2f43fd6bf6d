"""Closed-form readouts of the κ channel for the page and the runner (spec 001): the data
spectrum of a training split, the β-whitened basis of the Personalized channel, the Wiener
MMSE of an attacker who sees D̃, the per-pixel MSE floors against κ (Theorem 1) and the live
panel shown before any run. Instant given the cached spectrum (numpy; the channel is solved by
:func:`core.defenses.channel.channel_from_block`).

``cfg`` arguments are read duck-typed (``cfg.defense``: the defense block, ``cfg.attack.
batch_size``), so nothing here imports the config models.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from core.bounds.channel import Spectrum, data_spectrum

#: the pixel scale every image data set is stored at
IMAGE_SCALE = "[0, 1]"


def image_spectrum(X_train: np.ndarray) -> Spectrum:
    """Σ_D's eigendecomposition of a training split of images in [0, 1] (Eq. 28)."""
    return data_spectrum(np.asarray(X_train, dtype=np.float64), scale=IMAGE_SCALE)


def spectrum_arrays(spec: Spectrum) -> dict[str, np.ndarray]:
    """The arrays that store a spectrum (a stage's output)."""
    return {"eigenvalues": spec.eigenvalues, "eigenvectors": spec.eigenvectors, "mean": spec.mean}


def spectrum_from_arrays(arrays: dict[str, np.ndarray]) -> Spectrum:
    """The :class:`Spectrum` of stored :func:`spectrum_arrays`."""
    return Spectrum(eigenvalues=np.asarray(arrays["eigenvalues"], dtype=np.float64),
                    eigenvectors=np.asarray(arrays["eigenvectors"], dtype=np.float64),
                    mean=np.asarray(arrays["mean"], dtype=np.float64), scale=IMAGE_SCALE)


def personalized_basis(spec, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(μ, w): eigenvalues μ_j of B^{-1/2} Σ_D B^{-1/2} (the β-whitened spectrum, where the
    Personalized channel is a Natural one) and w_j = (Uᵀ B U)_jj, so that the Bayes error of
    an attacker seeing D̃ is (1/d) Σ_j w_j μ_j σ / (μ_j + σ). One O(d³) eigh per β mask."""
    b = np.asarray(beta, dtype=np.float64)
    ib = 1.0 / np.sqrt(b)
    cov = spec.covariance()
    m = cov * ib[:, None] * ib[None, :]
    mu, U = np.linalg.eigh(0.5 * (m + m.T))
    mu, U = np.clip(mu[::-1], 0.0, None), U[:, ::-1]
    return mu, (U * U * b[:, None]).sum(0)


def wiener_floor(kind: str, spec, kappa: float, basis) -> float:
    """Bayes MSE per pixel of an attacker who sees D̃ (Gaussian data), per channel."""
    from core.bounds import channel as cb

    lam = spec.eigenvalues
    if kind == "natural":
        return cb.wiener_mmse(lam, cb.solve_sigma(lam, kappa))
    if kind == "white":
        return cb.wiener_mmse(lam, cb.white_sigmas(lam, kappa))
    if kind == "laplace":
        return cb.wiener_mmse(lam, 2.0 * cb.solve_laplace_b(lam, kappa) ** 2)
    mu, w = basis
    s = cb.solve_sigma(mu, kappa)
    return float(np.sum(w * mu * s / (mu + s)) / len(lam))


def bound_curves(cfg, spec, shape, kappas: np.ndarray, basis=None) -> dict[str, list[float]]:
    """Per-pixel MSE floors against κ: Theorem 1 per round (I = κ; the same for every channel)
    and the Wiener MMSE of the current channel (NaN where the channel cannot reach κ)."""
    from core.bounds import channel as cb

    lam = spec.eigenvalues
    out = {"Theorem 1, one round (Gaussian plug-in)":
           [cb.thm1_mse_bound(lam, float(k), per="pixel") for k in kappas]}
    kind = getattr(cfg.defense, "channel", None)
    if kind is not None:
        vals = []
        for k in kappas:
            try:
                vals.append(wiener_floor(kind, spec, float(k), basis))
            except ValueError:  # Laplace below its floor
                vals.append(float("nan"))
        out[f"Wiener MMSE, {kind} (attacker sees D̃)"] = vals
    return out


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


def live_channel(cfg, spec, shape, basis=None) -> dict[str, Any]:
    """What the page shows before any run: the solved noise, κ/d, the per-direction capacity
    and the floors, or for DP-SGD its capacity B/z² (Thm 4) and the floor at the tight B/(2z²).
    ``basis``: :func:`personalized_basis` for the Personalized channel (cached by the page)."""
    from core.bounds import channel as cb

    lam = spec.eigenvalues
    d = len(lam)
    b = cfg.attack.batch_size
    out: dict[str, Any] = {"cards": [], "notes": [], "noise_eig": None, "capacity_dir": None}
    if cfg.defense.kind == "none":
        out["notes"].append("Undefended: the upload is a deterministic function of the batch, "
                            "so its information about the data is unbounded and no floor holds.")
        return out
    if cfg.defense.kind == "dp_sgd":
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
    from core.defenses.channel import channel_beta, channel_from_block, solve_channel

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
