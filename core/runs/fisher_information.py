"""Runner for ``kind: fisher_information`` (Hannun et al., UAI 2021; spec 002 Part A; issue #11).

Pipeline: a FIL data view (:mod:`core.data.fil_views`) → fit the L2-regularised linear /
logistic regression to optimality and run IRFIL (Algorithm 1) → η per example, label, target
attribute, class group and data set at σ = 1 (η ∝ 1/σ, Eq. 17) → σ from the defense block
(direct, a target η, or (ε, δ)) → Gaussian output perturbation w' = w* + N(0, σ²I) → attacks
on w' repeated over noise draws (white-box Eq. 30, black-box Eq. 31, the prior) → utility,
the σ sweep of Fig. 6, the per-decile accuracies of Fig. 7 and the Cramér–Rao panel.

The math lives in :mod:`core.bounds.fil_regression`, :mod:`core.bounds.fil` and :mod:`core.attacks.fil_attacks`.
What this module adds: the stage cache (the fit and IRFIL are one stage keyed by data, model,
L2 weight, IRFIL settings and the η columns, so a new σ / target η / ε reuses them), and the
attack on the *label* (the engine's white-box attack targets feature columns): for least
squares exactly (w*(c) = A(r − ω_i y_i x_i) + ω_i a_i c is linear in the label), for logistic
regression one Newton step from the release, as the engine does for features.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from core.attacks.protocol import attack_part
from core.config.schema import FisherInformationConfig
from core.foundation import caveats
from core.foundation.parts import attacks_for
from core.foundation.progress import Progress
from core.foundation.result import Result
from core.foundation.seeds import stream
from core.foundation.stages import StageOutput, Stages

FAMILY = "fisher_information"
FIT_STAGE = "fil_fit"
LIRA_STAGE = "fil_lira_shadows"
DECILES = 10
TOP_K = 8  # Fig. 3: the 8 most and least leaking examples
CRB_ROWS = 12  # rows of the Cramér–Rao panel per σ (quantiles of their label η)


# ---------------------------------------------------------------------------------------------
# data and the fit stage


def load_view(cfg: FisherInformationConfig):
    """The FIL view the config names (memoised per process)."""
    from core.data.fil_views import fil_view

    d = cfg.data
    return fil_view(d.name, classes=tuple(d.classes), pca_dim=d.pca_dim, adult_view=d.adult_view,
                    data_dir=d.data_dir, max_samples=d.max_samples, n_samples=d.n_samples,
                    n_features=d.n_features, correlation=d.correlation,
                    outlier_fraction=d.outlier_fraction, test_fraction=d.test_fraction,
                    seed=cfg.seed)


def fit_labels(model: str, y01: np.ndarray) -> np.ndarray:
    """Targets as the paper codes them: ±1 for least squares, {0, 1} for logistic regression."""
    y01 = np.asarray(y01, dtype=np.float64)
    return 2.0 * y01 - 1.0 if model == "linear" else y01


def target_columns(view, target: str) -> np.ndarray:
    """Coordinates of (x, y) the target occupies: d for the label, else the attribute's columns."""
    if target == "label":
        return np.array([view.d])
    return np.asarray(view.attributes[target].columns, dtype=np.int64)


def irfil_columns(cfg: FisherInformationConfig, view) -> np.ndarray | None:
    """The η IRFIL equalises: the target's columns at attribute / label granularity (as the
    paper's attack experiments), else every coordinate of the example."""
    if cfg.granularity == "label":
        return np.array([view.d])
    if cfg.granularity == "attribute":
        return target_columns(view, cfg.target)
    return None


def fit_part(cfg: FisherInformationConfig) -> dict[str, Any]:
    """What the fit stage depends on: data, model, L2 weight, IRFIL, the η columns, seed."""
    return {"data": cfg.data.model_dump(mode="json"), "model": cfg.model.model_dump(mode="json"),
            "irfil": cfg.irfil.model_dump(mode="json"), "granularity": cfg.granularity,
            "target": cfg.target, "seed": cfg.seed}


def _compute_fit(cfg: FisherInformationConfig, view, progress: Progress) -> StageOutput:
    """IRFIL's trace (entry 0 = the plain fit) and every η of the released model (the plain
    one, or IRFIL's last iterate with ``irfil.release``) at σ = 1."""
    from core.bounds import fil_regression as fil

    m = cfg.model
    y = fit_labels(m.model, view.y)
    yt = fit_labels(m.model, view.y_test)
    cols = irfil_columns(cfg, view)
    ir = cfg.irfil
    clamp = (ir.min_weight, math.inf if ir.max_weight is None else ir.max_weight)
    if ir.iterations and not (clamp[0] <= 1 <= clamp[1]):
        raise ValueError(f"irfil.min_weight / max_weight: got ({clamp[0]:g}, {clamp[1]:g}); "
                         "allowed: min <= 1 <= max (the weights average 1)")
    sub = progress.sub(0.02, 0.25)
    sub.update(0.0, f"fitting the {m.model} model (IRFIL: {ir.iterations} iterations)")
    trace = fil.irfil(view.X, y, model=m.model, l2=m.l2, iterations=ir.iterations,
                      method=ir.weight_method, clamp=clamp,
                      columns=None if cols is None else cols.tolist(),
                      X_test=view.X_test, y_test=yt, progress=sub.update)
    rel_it = ir.iterations if ir.release else 0
    last = trace.steps[rel_it].fit
    progress.update(0.27, "per-example FIL of the released model")
    tc = target_columns(view, cfg.target)
    eta_example = fil.per_example_fil(last, view.X, y)
    eta_label = fil.per_example_fil(last, view.X, y, granularity="label")
    eta_attr = eta_label if cfg.target == "label" else fil.per_example_fil(
        last, view.X, y, granularity="attribute", columns=tc.tolist())
    groups = fil.group_fil(last, view.X, y, groups=view.y)
    group_eta = np.array([groups.get(c, np.nan) for c in (0, 1)])
    eta_dataset = fil.dataset_fil(last, view.X, y)
    arrays = {
        "weights": np.stack([s.weights for s in trace.steps]),
        "theta": np.stack([s.fit.theta for s in trace.steps]),
        "eta_iter": np.stack([s.eta for s in trace.steps]),
        "irfil_eta_mean": trace.series("eta_mean"), "irfil_eta_std": trace.series("eta_std"),
        "irfil_acc": trace.series("accuracy"),
        "eta_example": eta_example, "eta_label": eta_label, "eta_attr": eta_attr,
        "group_eta": group_eta, "eta_dataset": np.array([eta_dataset]),
        "loss": last.loss(view.X, y), "grad_norm": last.grad_norm_per_example(view.X, y),
    }
    return StageOutput(arrays=arrays, meta={"iterations": ir.iterations, "release": rel_it,
                                            "grad_norm": float(last.grad_norm)})


def refit(cfg: FisherInformationConfig, view, out: StageOutput, iteration: int):
    """The FittedGLM of IRFIL iterate ``iteration`` from its cached weights (a least-squares
    solve, or Newton from the cached θ: one step)."""
    from core.bounds import fil_regression as fil

    w = out.arrays["weights"][iteration]
    return fil.fit_glm(view.X, fit_labels(cfg.model.model, view.y), model=cfg.model.model,
                       l2=cfg.model.l2, weights=None if iteration == 0 else w,
                       theta0=out.arrays["theta"][iteration])


# ---------------------------------------------------------------------------------------------
# η at a granularity; σ comes from the defense's builder (core.defenses.fil_output)


def granularity_eta(granularity: str, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """η at σ = 1 at a granularity (an array: per example, per class, or one value)."""
    return {"example": arrays["eta_example"], "label": arrays["eta_label"],
            "attribute": arrays["eta_attr"], "group": arrays["group_eta"],
            "dataset": arrays["eta_dataset"]}[granularity]


def closed_form(arrays: dict[str, np.ndarray], *, defense, granularity: str, model: str,
                n: int, l2: float, feature_norm: float) -> dict[str, Any]:
    """Every closed-form number of a fitted model at the defense block's σ, from the η arrays
    at σ = 1 (η ∝ 1/σ, Eq. 17): σ, η at the granularity (max, mean, std), per-example /
    label / attribute / group maxima and means, the data set's η, k releases (η√k), the
    derived local RDP, and for logistic regression ε(σ, δ). Numpy only (the page calls it on
    every slider move)."""
    from core.bounds import fil as B
    from core.defenses.fil_output import resolve_sigma

    eta_g = granularity_eta(granularity, arrays)
    sigma, how = resolve_sigma(defense, eta_g, model=model, n=n, l2=l2, feature_norm=feature_norm)
    e = np.asarray(eta_g) / sigma
    ex = np.asarray(arrays["eta_example"]) / sigma
    out: dict[str, Any] = {
        "sigma": sigma, "how": how, "fil_sigma": sigma, "fil_releases": float(defense.releases),
        "fil_eta": float(e.max()), "fil_eta_mean": float(e.mean()), "fil_eta_std": float(e.std()),
        "fil_eta_max": float(ex.max()),
        "fil_eta_dataset": float(arrays["eta_dataset"][0] / sigma),
        "fil_eta_composed": float(B.compose_eta(float(e.max()), int(defense.releases))),
        "fil_local_rdp_max": float(B.local_rdp(float(ex.max()))),
    }
    for name, key in (("example", "eta_example"), ("label", "eta_label"), ("attr", "eta_attr"),
                      ("group", "group_eta")):
        out[f"fil_eta_{name}_mean"] = float(np.nanmean(arrays[key]) / sigma)
        out[f"fil_eta_{name}_max"] = float(np.nanmax(arrays[key]) / sigma)
    if model == "logistic":
        out["fil_sensitivity"] = B.sensitivity_l2(n=n, l2=l2, model="logistic",
                                                  feature_norm=feature_norm)
        out["fil_epsilon"] = B.epsilon_from_sigma(sigma, defense.delta, n=n, l2=l2,
                                                  feature_norm=feature_norm,
                                                  method=defense.dp_method)
        out["fil_delta"] = float(defense.delta)
    return out


# ---------------------------------------------------------------------------------------------
# attacks


class _Attacker:
    """The attackers' knowledge for one fitted model and target, so that the σ sweep and the
    IRFIL iterates only draw new releases; every attack runs through the protocol."""

    def __init__(self, cfg: FisherInformationConfig, view, fit, targets: np.ndarray) -> None:
        from core.attacks.fil_attacks import glm_knowledge

        self.cfg, self.view, self.fit, self.tg = cfg, view, fit, targets
        self.y = fit_labels(cfg.model.model, view.y)
        t = cfg.target
        columns = candidates = None
        if t == "label":
            self.codes = np.asarray(view.y)[targets]
            freq = np.bincount(view.y, minlength=2).astype(float)
        else:
            attr = view.attributes[t]
            columns, candidates = attr.columns, attr.candidates
            self.codes = np.asarray(attr.codes)[targets]
            freq = np.bincount(attr.codes, minlength=attr.k).astype(float)
        self.prior = freq / freq.sum()
        self.knowledge = glm_knowledge(fit=fit, X=view.X, y=self.y, targets=targets,
                                       prior=self.prior, columns=columns, candidates=candidates)

    def guesses(self, name: str, R: np.ndarray) -> np.ndarray:
        from core.attacks.fil_attacks import GLMRelease
        from core.attacks.protocol import run_attack

        return run_attack(name, GLMRelease(np.atleast_2d(R)), self.knowledge, family=FAMILY)

    def accuracy(self, name: str, R: np.ndarray) -> np.ndarray:
        """Accuracy per draw (scoring: the only place the true codes are read)."""
        return (self.guesses(name, R) == self.codes[None, :]).mean(axis=1)


def _utility(fit, view, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Test accuracy and test MSE (score vs the ±1 / {0,1} target) per release."""
    yt = fit_labels(fit.model, view.y_test)
    acc = np.array([fit.accuracy(view.X_test, yt, r) for r in R])
    mse = np.array([fit.mse(view.X_test, yt, r) for r in R])
    return acc, mse


def _interval(per_draw: np.ndarray, m: int) -> dict[str, float]:
    """95 % interval of a mean over noise draws (t over draws); n = guesses scored."""
    T = len(per_draw)
    half = 1.96 * float(per_draw.std(ddof=1)) / math.sqrt(T) if T > 1 else float("nan")
    mu = float(per_draw.mean())
    return {"lo": max(0.0, mu - half), "hi": min(1.0, mu + half), "n": float(T * m)}


# ---------------------------------------------------------------------------------------------
# the runner


def run_fisher_information(cfg: FisherInformationConfig, progress: Progress,
                           stages: Stages | None = None) -> Result:
    """Load the view → fit and IRFIL (a stage) → σ and every η → the release and the attacks
    at σ → Fig. 3, Fig. 6, Fig. 7 and the Cramér–Rao panel → FIL-LiRA → the Result."""
    stages = stages or Stages(None)
    t0 = time.perf_counter()
    progress.update(0.01, f"loading the {cfg.data.name} view")
    view = load_view(cfg)
    notes: list[str] = list(view.notes[:1])
    out, _ = stages.get(FIT_STAGE, fit_part(cfg), lambda: _compute_fit(cfg, view, progress))
    A = out.arrays
    rel_it = int(out.meta["release"])
    fit = refit(cfg, view, out, rel_it)
    t_fit = time.perf_counter() - t0
    metrics, sigma, how = _sigma_and_eta(cfg, view, A, notes)
    metrics.update(_irfil_metrics(A, int(out.meta["iterations"])))

    # the release and the attacks at σ; every draw below comes from this one generator, in
    # this order (targets, the release at σ, the σ sweep, Fig. 7, the Cramér–Rao panel)
    rng = stream(cfg.seed, "fil", "attack")
    tg = np.sort(rng.choice(view.n, size=min(view.n, cfg.attack.max_targets), replace=False))
    att = _Attacker(cfg, view, fit, tg)
    # the chosen attacks and every no-model baseline of the family (the chance level)
    baselines = [a.key for a in attacks_for(FAMILY) if a.role == "baseline"]
    names = list(dict.fromkeys([*cfg.attack.attackers, *baselines]))
    progress.update(0.35, f"attacking {len(tg)} rows over {cfg.attack.noise_trials} noise draws")
    intervals = _attacks_at_sigma(cfg, view, fit, att, names, sigma, rng, metrics)
    best = _strongest(cfg, metrics, intervals, notes)
    metrics.update(fil_noise_trials=float(cfg.attack.noise_trials),
                   fil_targets_attacked=float(len(tg)))
    refitting = _refitting_attack(cfg, notes)

    artifacts = _leak_artifacts(view, A)
    sweep, sig_grid = _sigma_sweep(cfg, view, fit, att, names, A, rng, progress.sub(0.45, 0.75))
    artifacts.update(sweep)
    if refitting is not None:
        artifacts.update(_deciles(cfg, view, out, fit, tg, refitting, sigma, rng,
                                  progress.sub(0.75, 0.88)))
    if cfg.model.model == "linear":
        progress.update(0.9, "Cramér–Rao panel")
        artifacts.update(_crb_panel(cfg, view, fit, att, A, sig_grid, rng, metrics))
    else:
        notes.append("Cramér–Rao panel: an unbiased reconstruction in closed form exists for "
                     "least squares only (the logistic minimiser is not linear in the data)")
    lira_setup = _lira(cfg, view, out, fit, sigma, stages, progress, metrics=metrics,
                       artifacts=artifacts, notes=notes)
    metrics["fil_seconds_fit"] = t_fit if stages.log.get(FIT_STAGE) == "computed" else 0.0
    metrics["seconds_total"] = time.perf_counter() - t0
    info = _info(cfg, view, stages, how, best, rel_it, lira_setup, metrics, notes)
    info["caveats"] = caveats.collect(cfg.kind, metrics, info, cfg.model_dump(mode="json"),
                                      intervals=intervals)
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed,
                  metrics=metrics, intervals=intervals, artifacts=artifacts, info=info)


# ---------------------------------------------------------------------------------------------
# the run's steps


def _sigma_and_eta(cfg: FisherInformationConfig, view, A: dict[str, np.ndarray],
                   notes: list[str]) -> tuple[dict[str, float], float, str]:
    """σ from the defense block and every η at σ (the page computes the same function live),
    η's rank correlation with the loss and the gradient norm, and a note on the (ε, δ)
    readout: (metrics, σ, how σ was set)."""
    from scipy.stats import spearmanr

    m = cfg.model
    R_norm = view.max_norm
    cf = closed_form(A, defense=cfg.defense, granularity=cfg.granularity, model=m.model,
                     n=view.n, l2=m.l2, feature_norm=R_norm)
    metrics: dict[str, float] = {k: v for k, v in cf.items() if k.startswith("fil_")}
    metrics.update({"fil_l2": m.l2, "fil_n_train": float(view.n), "fil_dim": float(view.d)})
    metrics["fil_spearman_loss"] = float(spearmanr(A["eta_example"], A["loss"]).statistic)
    metrics["fil_spearman_grad"] = float(spearmanr(A["eta_example"], A["grad_norm"]).statistic)
    if m.model == "logistic":
        if R_norm > 1 + 1e-9:
            notes.append(f"features are not in the unit ball (max ‖x‖ = {R_norm:.3g}): the "
                         "sensitivity uses R = max ‖x‖, 2R/(nλ)")
    else:
        notes.append("least squares has no finite L2 sensitivity: no (ε, δ) readout; FIL's η "
                     "needs no such bound")
    return metrics, cf["sigma"], cf["how"]


def _irfil_metrics(A: dict[str, np.ndarray], iterations: int) -> dict[str, float]:
    """IRFIL before and after (Fig. 5, Table 1): η's mean and spread, accuracy; none without
    IRFIL iterations."""
    if not iterations:
        return {}
    s0, s1 = float(A["irfil_eta_std"][0]), float(A["irfil_eta_std"][-1])
    return {"fil_irfil_iterations": float(iterations), "fil_irfil_eta_std_before": s0,
            "fil_irfil_eta_std_after": s1,
            "fil_irfil_eta_mean_before": float(A["irfil_eta_mean"][0]),
            "fil_irfil_eta_mean_after": float(A["irfil_eta_mean"][-1]),
            "fil_irfil_std_ratio": s1 / s0 if s0 > 0 else float("nan"),
            "fil_irfil_acc_before": float(A["irfil_acc"][0]),
            "fil_irfil_acc_after": float(A["irfil_acc"][-1])}


def _attacks_at_sigma(cfg: FisherInformationConfig, view, fit, att: _Attacker,
                      names: list[str], sigma: float, rng: np.random.Generator,
                      metrics: dict[str, float]) -> dict[str, dict[str, float]]:
    """``noise_trials`` releases at σ: utility over the draws and each attack's accuracy
    (mean over the draws) into ``metrics``; returns the attacks' intervals."""
    from core.bounds import fil_regression as fil

    R = fil.release(fit, sigma=sigma, trials=cfg.attack.noise_trials, rng=rng)
    acc_u, mse_u = _utility(fit, view, R)
    metrics["fil_utility_acc"] = float(acc_u.mean())
    metrics["fil_utility_acc_clean"] = fit.accuracy(view.X_test,
                                                    fit_labels(cfg.model.model, view.y_test))
    metrics["fil_test_mse"] = float(mse_u.mean())
    metrics["utility_majority"] = float(max(view.y_test.mean(), 1 - view.y_test.mean()))
    intervals: dict[str, dict[str, float]] = {}
    for name in names:
        acc = attack_part(name, FAMILY).metric_name("acc")
        per = att.accuracy(name, R)
        metrics[acc] = float(per.mean())
        intervals[acc] = _interval(per, len(att.tg))
    return intervals


def _strongest(cfg: FisherInformationConfig, metrics: dict[str, float],
               intervals: dict[str, dict[str, float]], notes: list[str]) -> str:
    """The strongest chosen attack, reported as ``fil_attack_acc_best``. An attack that reads
    the row's label (the black box) is, on the label itself, the model's own prediction of a
    training row: training accuracy, not leakage; it is left out (with a note)."""
    ran = list(cfg.attack.attackers)
    parts = {n: attack_part(n, FAMILY) for n in ran}
    acc = {n: parts[n].metric_name("acc") for n in ran}
    degenerate = [n for n in ran if cfg.target == "label" and "labels" in parts[n].needs]
    scored = [n for n in ran if n not in degenerate] or ran
    for n in degenerate:
        notes.append(f"on the label the {parts[n].title} attack is the model's own prediction "
                     "of a training row: it measures training accuracy, not leakage, and is left "
                     "out of the strongest attack")
    best = max(scored, key=lambda n: metrics[acc[n]])
    metrics["fil_attack_acc_best"] = metrics[acc[best]]
    intervals["fil_attack_acc_best"] = intervals[acc[best]]
    return best


def _refitting_attack(cfg: FisherInformationConfig, notes: list[str]) -> str | None:
    """The chosen attack that refits candidate models of the training data (the white box),
    if any; for logistic regression a note that its candidates are one Newton step."""
    parts = {n: attack_part(n, FAMILY) for n in cfg.attack.attackers}
    refitting = next((n for n in parts if "training_data" in parts[n].needs), None)
    if cfg.model.model == "logistic" and refitting is not None:
        notes.append(f"logistic regression: the {parts[refitting].title} attack's candidate "
                     "models are one Newton step from the release (an approximation; least "
                     "squares is exact)")
    return refitting


def _leak_artifacts(view, A: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every η at σ = 1, loss and gradient norm, the IRFIL trace, the labels, and Fig. 3: the
    most and least leaking examples (per-example η), with pictures for image views."""
    artifacts: dict[str, np.ndarray] = {k: np.asarray(A[k]) for k in (
        "eta_example", "eta_label", "eta_attr", "group_eta", "eta_dataset", "loss", "grad_norm",
        "irfil_eta_mean", "irfil_eta_std", "irfil_acc")}
    artifacts["y_train"] = np.asarray(view.y, dtype=np.int64)
    order = np.argsort(A["eta_example"], kind="stable")
    lo_idx, hi_idx = order[:TOP_K], order[::-1][:TOP_K]
    artifacts["least_idx"], artifacts["most_idx"] = lo_idx, hi_idx
    if view.images is not None:
        artifacts["least_images"] = np.asarray(view.images[lo_idx])
        artifacts["most_images"] = np.asarray(view.images[hi_idx])
    else:
        artifacts["least_rows"] = np.asarray(view.X[lo_idx])
        artifacts["most_rows"] = np.asarray(view.X[hi_idx])
    return artifacts


def _sigma_sweep(cfg: FisherInformationConfig, view, fit, att: _Attacker, names: list[str],
                 A: dict[str, np.ndarray], rng: np.random.Generator, sub: Progress
                 ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Fig. 6: utility and attack accuracy against η̄ (the mean η at σ) over a σ grid, from no
    leak to exact recovery of a ±1 / 0-1 value: (``sweep_*`` artifacts, the σ grid)."""
    from core.bounds import fil_regression as fil

    G = cfg.attack.sigma_grid
    trials = cfg.attack.noise_trials
    eta_bar_unit = float(np.mean(granularity_eta(cfg.granularity, A)))
    eta_bar = np.logspace(-2, 2, G)
    sig_grid = eta_bar_unit / eta_bar
    sweep = {"sigma": sig_grid, "eta_mean": eta_bar, "utility_acc": np.empty(G),
             "test_mse": np.empty(G)}
    for name in names:
        sweep[f"acc_{name}"] = np.empty(G)
        sweep[f"acc_{name}_std"] = np.empty(G)
    for j, s in enumerate(sig_grid):
        sub.update(j / G, f"σ sweep {j + 1}/{G}")
        Rg = fil.release(fit, sigma=float(s), trials=trials, rng=rng)
        a_u, m_u = _utility(fit, view, Rg)
        sweep["utility_acc"][j], sweep["test_mse"][j] = a_u.mean(), m_u.mean()
        for name in names:
            per = att.accuracy(name, Rg)
            sweep[f"acc_{name}"][j], sweep[f"acc_{name}_std"][j] = per.mean(), per.std()
    return {f"sweep_{k}": np.asarray(v) for k, v in sweep.items()}, sig_grid


def _deciles(cfg: FisherInformationConfig, view, out: StageOutput, fit, tg: np.ndarray,
             refitting: str, sigma: float, rng: np.random.Generator, sub: Progress
             ) -> dict[str, np.ndarray]:
    """Fig. 7: the refitting attack's accuracy per decile of the initial η at IRFIL
    iterations 0, 2 and T, each iterate released at σ."""
    from core.attacks import fil_attacks as FA
    from core.bounds import fil_regression as fil

    T_ir, rel_it = int(out.meta["iterations"]), int(out.meta["release"])
    its = sorted({0, min(2, T_ir), T_ir})
    e0 = out.arrays["eta_attr"] if rel_it == 0 else _initial_attr_eta(cfg, view, out)
    dec = np.empty((len(its), DECILES))
    dec_eta = None
    for r_i, it in enumerate(its):
        sub.update(r_i / len(its), f"white-box attack on IRFIL iterate {it}")
        f_it = fit if it == rel_it else refit(cfg, view, out, it)
        a_it = _Attacker(cfg, view, f_it, tg)
        g = a_it.guesses(refitting, fil.release(f_it, sigma=sigma, trials=cfg.attack.noise_trials,
                                                rng=rng))
        dec_eta, dec[r_i] = FA.accuracy_by_decile(g, a_it.codes, e0[tg], bins=DECILES)
    return {"decile_iterations": np.asarray(its, dtype=np.int64), "decile_acc": dec,
            "decile_eta0": np.asarray(dec_eta) / sigma}


def _crb_panel(cfg: FisherInformationConfig, view, fit, att: _Attacker,
               A: dict[str, np.ndarray], sig_grid: np.ndarray, rng: np.random.Generator,
               metrics: dict[str, float]) -> dict[str, np.ndarray]:
    """The Cramér–Rao panel (least squares): the unbiased label reconstruction's variance
    against 1/η² over the σ grid, for rows at quantiles of their label η; the smallest
    variance-to-bound ratio into ``metrics``."""
    from core.attacks import fil_attacks as FA
    from core.bounds import fil_regression as fil

    el = A["eta_label"]
    pick = np.unique(np.argsort(el, kind="stable")[
        np.linspace(0, view.n - 1, min(CRB_ROWS, view.n)).astype(int)])
    rows_b, rows_v, rows_s, rows_bias = [], [], [], []
    ratios_lo, ratios_hi = [], []
    for s in sig_grid:
        Rc = fil.release(fit, sigma=float(s), trials=cfg.attack.crb_trials, rng=rng)
        est = FA.reconstruct_label(Rc, fit=fit, X=view.X, y=att.y, targets=pick)
        rep = FA.crb_report(est, att.y[pick], el[pick] / s)
        rows_b.append(rep["bound"])
        rows_v.append(rep["variance"])
        rows_bias.append(rep["bias"])
        rows_s.append(np.full(pick.size, s))
        ratios_lo.append(rep["ratio_lo"])
        ratios_hi.append(rep["ratio_hi"])
    ratio = np.concatenate(rows_v) / np.concatenate(rows_b)
    metrics["fil_crb_min_ratio"] = float(ratio.min())
    metrics["fil_crb_trials"] = float(cfg.attack.crb_trials)
    return {"crb_bound": np.concatenate(rows_b), "crb_variance": np.concatenate(rows_v),
            "crb_sigma": np.concatenate(rows_s), "crb_bias": np.concatenate(rows_bias),
            "crb_ratio_lo": np.concatenate(ratios_lo), "crb_ratio_hi": np.concatenate(ratios_hi)}


def _lira(cfg: FisherInformationConfig, view, out: StageOutput, fit, sigma: float,
          stages: Stages, progress: Progress, *, metrics: dict[str, float],
          artifacts: dict[str, np.ndarray], notes: list[str]) -> str | None:
    """FIL against membership: LiRA on this page's own release (the shadow fits a stage), by
    default up to ``FIL_LIRA_AUTO_ROWS`` training rows. Returns how LiRA was run (the caveat
    ``fil_lira_setup`` beside its numbers), None when it did not run."""
    from core.config.schema import FIL_LIRA_AUTO_ROWS

    lira_on = cfg.lira.enabled if cfg.lira.enabled is not None else view.n <= FIL_LIRA_AUTO_ROWS
    if lira_on:
        progress.update(0.95, f"LiRA against the release ({cfg.lira.shadows} shadow fits)")
        sh, _ = stages.get(LIRA_STAGE, {**fit_part(cfg), "lira": cfg.lira.shadows},
                           lambda: _compute_lira_shadows(cfg, view))
        lm, la, lnote = _fil_lira(cfg, view, out, fit, sh, sigma)
        metrics.update(lm)
        artifacts.update(la)
        notes.append(lnote)
        return lnote.removeprefix("FIL-LiRA: ")
    if cfg.lira.enabled is None:
        notes.append(f"FIL-LiRA skipped: {view.n:,} training rows (it runs by default up to "
                     f"{FIL_LIRA_AUTO_ROWS:,}; set lira.enabled to run it)")
    return None


def _info(cfg: FisherInformationConfig, view, stages: Stages, how: str, best: str, rel_it: int,
          lira_setup: str | None, metrics: dict[str, float], notes: list[str]
          ) -> dict[str, Any]:
    """What the page names: how σ was set, the target and its values, the view, the strongest
    attack, the release iterate, the stage log and FIL-LiRA's setup and verdict."""
    info = {"notes": notes, "sigma_how": how, "target": cfg.target, "stages": dict(stages.log),
            "view": view.description, "feature_names": list(view.feature_names),
            "label_names": list(view.label_names), "image_shape": view.image_shape,
            "best_attack": best, "max_norm": view.max_norm, "release_iteration": rel_it,
            "target_values": (list(view.label_names) if cfg.target == "label"
                              else list(view.attributes[cfg.target].value_names)),
            "interval_note": "attack intervals: 95 % over noise draws (t), n = guesses scored"}
    if lira_setup is not None:
        info["fil_lira_setup"] = lira_setup
    if "fil_lira_spearman" in metrics:
        from core.attacks.fil_membership import eta_verdict

        info["fil_lira_sentence"] = eta_verdict(metrics["fil_lira_spearman"],
                                                metrics["fil_lira_spearman_lo"],
                                                metrics["fil_lira_spearman_hi"])
    return info


def _initial_attr_eta(cfg: FisherInformationConfig, view, out: StageOutput) -> np.ndarray:
    """The target's per-example η (σ = 1) of the unweighted model: Fig. 7 sorts by it."""
    from core.bounds import fil_regression as fil

    f0 = refit(cfg, view, out, 0)
    y = fit_labels(cfg.model.model, view.y)
    if cfg.target == "label":
        return fil.per_example_fil(f0, view.X, y, granularity="label")
    return fil.per_example_fil(f0, view.X, y, granularity="attribute",
                               columns=target_columns(view, cfg.target).tolist())


# ---------------------------------------------------------------------------------------------
# FIL against membership (issue #22 item 5): LiRA on the page's own output-perturbed release


def _lira_pool(cfg: FisherInformationConfig, view) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                             np.ndarray]:
    """(X, y, member, in_mask): train ∪ test, the training rows as members; K shadow subsets
    of the target's size (each row IN with probability n/(n + n_test))."""
    from core.engine.shadow_training import shadow_splits
    from core.foundation.seeds import derive

    X = np.vstack([view.X, view.X_test])
    y = np.r_[fit_labels(cfg.model.model, view.y), fit_labels(cfg.model.model, view.y_test)]
    n = len(view.y)
    member = np.r_[np.ones(n, bool), np.zeros(len(y) - n, bool)]
    in_mask = shadow_splits(len(y), cfg.lira.shadows, seed=derive(cfg.seed, "fil_lira", "splits"),
                            fraction=n / len(y))
    return X, y, member, in_mask


def _compute_lira_shadows(cfg: FisherInformationConfig, view) -> StageOutput:
    """The shadow GLMs (σ-free, so every σ / target η reuses them): the plain fit on each
    subset, and IRFIL run on each subset's own rows when IRFIL is configured."""
    from core.attacks import fil_membership as FM

    X, y, _, in_mask = _lira_pool(cfg, view)
    m, ir = cfg.model, cfg.irfil
    arrays = {"theta_plain": FM.shadow_fits(X, y, in_mask, model=m.model, l2=m.l2)}
    if ir.iterations:
        clamp = (ir.min_weight, math.inf if ir.max_weight is None else ir.max_weight)
        arrays["theta_irfil"] = FM.irfil_shadow_fits(
            X, y, in_mask, model=m.model, l2=m.l2, iterations=ir.iterations,
            method=ir.weight_method, clamp=clamp, columns=None if (
                c := irfil_columns(cfg, view)) is None else c.tolist())
    return StageOutput(arrays=arrays)


def _fil_lira(cfg: FisherInformationConfig, view, out: StageOutput, fit, sh: StageOutput,
              sigma: float) -> tuple[dict[str, float], dict[str, np.ndarray], str]:
    """LiRA (online, per-example variances) against the released model at σ over
    ``lira.draws`` release draws; Spearman ρ of per-example η and the per-example LiRA score
    (mean over draws) with its bootstrap interval; LiRA's most exposed training rows (top
    ``lira.top_fraction`` by score on the first half of the plain release's draws) scored on
    the second half, plain release against IRFIL's at the same σ (the attacker's shadows run
    IRFIL too)."""
    from core.attacks import fil_membership as FM
    from core.foundation.metrics import roc_curve_points, tpr_at_fpr
    from core.foundation.seeds import stream as seed_stream

    X, y, member, in_mask = _lira_pool(cfg, view)
    n, D = len(view.y), cfg.lira.draws
    rel_it = int(out.meta["release"])

    def scores(theta: np.ndarray, shadows: np.ndarray, tag: str) -> np.ndarray:
        rng = seed_stream(cfg.seed, "fil_lira", tag)
        st = FM.signed_margin(X, y, FM.releases(np.repeat(theta[None], D, 0), sigma=sigma,
                                                rng=rng))
        ss = FM.signed_margin(X, y, FM.releases(shadows, sigma=sigma, rng=rng))
        # a global variance below 64 shadows (Carlini et al. §VI-A): with ~20 % of the
        # shadows OUT of each row a per-example variance rests on a handful of fits
        return FM.fil_lira(st, ss, in_mask, fix_variance=cfg.lira.shadows < 64)  # (D, n_pool)

    def auc(sc: np.ndarray) -> float:
        fpr, tpr = roc_curve_points(member.astype(np.int64), sc, drop_intermediate=False)
        return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))

    def top_tpr(sc: np.ndarray, rows: np.ndarray) -> float:
        s = np.concatenate([sc[:, rows].ravel(), sc[:, ~member].ravel()])
        lab = np.r_[np.ones(sc[:, rows].size, np.int64), np.zeros(sc[:, ~member].size, np.int64)]
        return float(tpr_at_fpr(lab, s, 0.05))

    released = "theta_irfil" if rel_it and "theta_irfil" in sh.arrays else "theta_plain"
    sc = scores(fit.theta, sh.arrays[released], "release")
    per_ex = sc[:, :n].mean(0)
    rho, lo, hi = FM.spearman_interval(out.arrays["eta_example"], per_ex, seed=cfg.seed)
    m = {"fil_lira_auc": float(np.mean([auc(s) for s in sc])), "fil_lira_spearman": rho,
         "fil_lira_spearman_lo": lo, "fil_lira_spearman_hi": hi,
         "fil_lira_shadows": float(cfg.lira.shadows)}
    k_top = max(1, round(cfg.lira.top_fraction * n))
    half = max(1, D // 2)
    art = {"fil_lira_score": per_ex}
    note = (f"FIL-LiRA: online LiRA with {cfg.lira.shadows} shadow GLMs fitted the defender's "
            f"way on subsets of train ∪ test (each released with its own draw at σ = "
            f"{sigma:.3g}; {'one global' if cfg.lira.shadows < 64 else 'per-example'} "
            f"variance), {D} draws of the release; members = the {n} training rows, "
            f"non-members = the {len(y) - n} test rows")
    if "theta_irfil" in sh.arrays and D >= 2:
        # IRFIL's effect on LiRA's most exposed rows: chosen on the plain release's first
        # half of draws, scored on independent draws (choosing and scoring on the same draws
        # would favour them)
        plain_fit = fit if rel_it == 0 else refit(cfg, view, out, 0)
        irfil_fit = fit if rel_it else refit(cfg, view, out, int(out.meta["iterations"]))
        sc0 = sc if rel_it == 0 else scores(plain_fit.theta, sh.arrays["theta_plain"], "plain")
        sc1 = sc if rel_it else scores(irfil_fit.theta, sh.arrays["theta_irfil"], "irfil")
        exposed = np.argsort(-sc0[:half, :n].mean(0), kind="stable")[:k_top]
        by_eta = np.argsort(-out.arrays["eta_iter"][0], kind="stable")[:k_top]
        m.update(fil_lira_top_tpr_plain=top_tpr(sc0[half:], exposed),
                 fil_lira_top_tpr_irfil=top_tpr(sc1[half:], exposed),
                 fil_lira_top_score_plain=float(sc0[half:, exposed].mean()),
                 fil_lira_top_score_irfil=float(sc1[half:, exposed].mean()),
                 fil_lira_top_overlap_eta=float(np.intersect1d(exposed, by_eta).size / k_top))
        art["fil_lira_exposed_idx"] = exposed.astype(np.int64)
        note += (f"; IRFIL ({cfg.irfil.iterations} iterations) against LiRA's {k_top} most "
                 f"exposed training rows, scored on the {D - half} held-out draws")
    return m, art, note
