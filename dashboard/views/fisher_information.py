"""Fisher information: how much an output-perturbed linear / logistic regression leaks about
each training example, attribute or group (Hannun, Guo & van der Maaten, UAI 2021; spec 002
Part A), IRFIL, the white-box / black-box / prior attacks and the Cramér–Rao bound.

``controls()`` turns the widgets into a ``fisher_information`` config (small ``*_ui()``
functions returning values). A fit (new data, model, L2 weight or IRFIL setting) runs through
the store and the shared job queue with progress. Everything σ only rescales (η ∝ 1/σ: the
σ ↔ η ↔ ε numbers, the η histogram, the examples, the scatter, IRFIL's trace, the σ sweep's
marker, the Cramér–Rao panel) is redrawn on every slider move from the stored η at σ = 1 of a
run with the same fit (:func:`core.runs.fisher_information.closed_form`); the attacks at a new
σ need a run (automatic on the small data sets, one button on Adult).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import streamlit as st

from core.catalog.fil_output_perturbation import FilOutputPerturbation
from core.config.schema import FilAttackSpec, FilDataSpec, IRFILSpec
from core.foundation.parts import ATTACKS, attack_titles, attacks_for, config_names
from core.runs.fisher_information import closed_form, fit_part
from dashboard import state
from dashboard.base.format import fmt, fmt_with_interval, metric
from dashboard.base.widgets import peek
from dashboard.components import result_caption, threat_card_lines
from dashboard.components.caveats import (
    caveats_of,
    flag_rows,
    flagged_caption,
    for_metrics,
    metric_tile,
    sentence,
)
from dashboard.components.exposure import exposure_ui
from dashboard.components.fil_figures import fil_figure
from dashboard.components.inputs import number_ui
from dashboard.components.knob import knob_ui
from dashboard.components.run_panel import run_panel
from dashboard.sidebar import require_data

KIND = "fisher_information"
DATASETS = {"digits": "digits · two classes, PCA 20", "mnist5k": "mnist5k · two classes, PCA 20",
            "synthetic": "synthetic GLM with outliers", "adult": "adult · UCI (real files)"}
#: data sets small enough that a run starts by itself (a fit takes seconds)
QUICK = frozenset({"digits", "synthetic", "mnist5k"})
MODELS = {"linear": "least squares (±1 targets)", "logistic": "logistic regression"}
GRANULARITIES = {"example": "per example (x_i, y_i)", "attribute": "per example, target attribute",
                 "label": "per example, label only", "group": "per class (group FIL)",
                 "dataset": "whole data set"}
NOISE_MODES = {"eta": "target η", "sigma": "σ", "dp": "(ε, δ)"}
L2_GRID = [0.0, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0]
SIGMA_GRID = [float(f"{v:.2g}") for v in np.logspace(-5, 2, 29)]
EPS_GRID = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
#: config name -> the attack's one title (core.foundation.parts)
ATTACK_TITLES = attack_titles(KIND)
#: the no-model baseline attack (its accuracy is the line every attack must beat)
PRIOR = next(a.key for a in attacks_for(KIND) if a.role == "baseline")
_FITS = "_fi_fits"  # fit key -> the newest Result of that fit this session saw


def _init_state() -> None:
    for k, v in {"fi_dataset": "digits", "fi_class_a": 0, "fi_class_b": 1, "fi_adult_view": "paper",
                 "fi_adult_cap": 0, "fi_syn_n": 1000, "fi_syn_out": 0.02, "fi_model": "linear",
                 "fi_l2": 1e-3, "fi_noise": "eta", "fi_sigma": 0.01, "fi_eta": 3.0,
                 "fi_eta_reduce": "max", "fi_eps": 1.0, "fi_delta": 1e-5, "fi_k": 1,
                 "fi_gran": "example", "fi_T": 5, "fi_method": "sample", "fi_irfil_release": False,
                 "fi_trials": 20, "fi_attackers": list(ATTACK_TITLES)}.items():
        st.session_state.setdefault(k, v)


# --------------------------------------------------------------------------------------------
# controls


def data_ui() -> dict[str, Any]:
    c1, c2, c3 = st.columns([1.4, 1, 1])
    name = c1.selectbox("Data set", list(DATASETS), key="fi_dataset", format_func=DATASETS.get)
    require_data(name, key="fi_dataset")
    data: dict[str, Any] = {"name": name}
    if name in ("digits", "mnist5k"):
        a = c2.selectbox("Class 0", list(range(10)), key="fi_class_a")
        # the second class never offers the first's digit (the config needs two different)
        others = [c for c in range(10) if c != a]
        if st.session_state.get("fi_class_b") not in others:
            st.session_state["fi_class_b"] = others[0]
        b = c3.selectbox("Class 1", others, key="fi_class_b")
        data["classes"] = [int(a), int(b)]
    elif name == "adult":
        data["adult_view"] = c2.selectbox(
            "View", ["paper", "standard"], key="fi_adult_view",
            format_func={"paper": "the paper's (86 columns)", "standard": "the other pages'"}.get)
        cap = number_ui("Training rows", key="fi_adult_cap", default=0, where=c3,
                        field=(FilDataSpec, "max_samples"), zero="all rows",
                        help="A seeded cap on the 30,162 training rows (speed).")
        if cap:
            data["max_samples"] = cap
    else:
        data["n_samples"] = number_ui("Rows", key="fi_syn_n", default=1000, where=c2,
                                      field=(FilDataSpec, "n_samples"))
        data["outlier_fraction"] = float(c3.slider("Outlier fraction", 0.0, 0.2, step=0.01,
                                                   key="fi_syn_out"))
    return data


def model_ui() -> dict[str, Any]:
    c1, c2 = st.columns([1, 2.6])
    model = c1.segmented_control("Model", list(MODELS), key="fi_model", required=True,
                                 format_func=lambda m: m, help=" · ".join(
                                     f"{k}: {v}" for k, v in MODELS.items()))
    l2 = c2.select_slider("L2 weight λ of Σℓ + (nλ/2)‖w‖² (FIL's λ, not TAPPFL's)", L2_GRID,
                          key="fi_l2", format_func=lambda v: "0" if v == 0 else f"{v:g}")
    return {"model": model, "l2": float(l2)}


def defense_ui() -> dict[str, Any]:
    """The output-perturbation block: σ given, solved from a target η, or from (ε, δ)."""
    c1, c2, c3, c4 = st.columns([1.6, 2.3, 1.1, 0.9])  # the segmented buttons whole at 1280 px
    mode = c1.segmented_control("Noise from", list(NOISE_MODES), key="fi_noise", required=True,
                                format_func=NOISE_MODES.get)
    block: dict[str, Any] = {"kind": "fil_output_perturbation", "sigma": None,
                             "eta_target": None, "epsilon": None}
    if mode == "sigma":
        block["sigma"] = float(c2.select_slider("σ · noise std of the released weights (higher "
                                                "is more private)", SIGMA_GRID, key="fi_sigma"))
    elif mode == "eta":
        block["eta_target"] = knob_ui("fil_output_perturbation", key="fi_eta", family=KIND,
                                      where=c2)
        block["eta_reduce"] = c3.segmented_control("η", ["max", "mean"], key="fi_eta_reduce",
                                                   required=True,
                                                   help="worst-case example or the mean η̄")
    else:
        block["epsilon"] = float(c2.select_slider("ε (logistic regression: sensitivity 2/(nλ))",
                                                  EPS_GRID, key="fi_eps"))
        block["delta"] = float(c3.select_slider("δ", [1e-3, 1e-4, 1e-5, 1e-6, 1e-7],
                                                key="fi_delta", format_func=lambda v: f"{v:g}"))
    block["releases"] = number_ui("Releases k", key="fi_k", default=1, where=c4,
                                  field=(FilOutputPerturbation, "releases"),
                                  help="k independent noisy releases: FIL η√k")
    return block


def analysis_ui(data: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    # the attackable attributes depend on the data set and view, not on a number box (which
    # may be empty while the user types)
    targets = FilDataSpec(**{k: v for k, v in data.items() if v is not None}).targets()
    c1, c2, c3, c4, c5 = st.columns([1.3, 1.2, 0.9, 0.9, 1.1], vertical_alignment="bottom")
    gran = c1.selectbox("Granularity", list(GRANULARITIES), key="fi_gran",
                        format_func=GRANULARITIES.get)
    if st.session_state.get("fi_target") not in targets:
        st.session_state["fi_target"] = targets[1] if len(targets) > 1 else "label"
    target = c2.selectbox("Attacked attribute", targets, key="fi_target",
                          format_func=lambda t: "the label y" if t == "label" else t)
    T = number_ui("IRFIL iterations", key="fi_T", default=5, where=c3,
                  field=(IRFILSpec, "iterations"))
    method = c4.selectbox("IRFIL weights", ["sample", "class", "hybrid"], key="fi_method")
    release = c5.toggle("Release IRFIL", key="fi_irfil_release",
                        help="On: IRFIL's last iterate is the released model. Off: the plain "
                             "model is released and IRFIL is shown beside it.")
    c6, c7 = st.columns([3, 1])
    attackers = c6.multiselect("Attacks", list(config_names(KIND)), key="fi_attackers",
                               format_func=ATTACK_TITLES.get)
    trials = number_ui("Noise trials", key="fi_trials", default=20, where=c7,
                       field=(FilAttackSpec, "noise_trials"))
    irfil = {"iterations": T, "weight_method": method, "release": bool(release)}
    # the view's default target is left unset, as the config's own default (FisherInformation
    # Config.target) and the teaching sweep's configs have it: the same run, the same key
    default = targets[1] if len(targets) > 1 else "label"
    attack = {"attackers": list(attackers), "target": None if target == default else target,
              "noise_trials": trials}
    return gran, irfil, attack


def controls() -> dict[str, Any]:
    _init_state()
    s = state.settings()
    data = data_ui()
    model = model_ui()
    defense = defense_ui()
    gran, irfil, attack = analysis_ui(data)
    return {"kind": KIND, "seed": s.seed, "device": s.device, "data": data, "model": model,
            "defense": defense, "granularity": gran, "irfil": irfil, "attack": attack}


# --------------------------------------------------------------------------------------------
# the closed-form parts (from any stored run of the same fit)


def fit_key(cfg) -> str:
    return json.dumps(fit_part(cfg), sort_keys=True)


def live_numbers(cfg, base) -> dict[str, Any]:
    """σ, η, ε and friends at the page's defense block, from ``base``'s η at σ = 1."""
    return closed_form(base.artifacts, defense=cfg.defense, granularity=cfg.granularity,
                       model=cfg.model.model, n=int(base.metrics["fil_n_train"]),
                       l2=cfg.model.l2, feature_norm=float(base.info.get("max_norm", 1.0)))


def numbers_section(cfg, live: dict[str, Any], run: Any = None) -> None:
    """The closed-form numbers at the page's σ; ``run`` (the stored Result) carries the
    caveats flagged on them (core.foundation.caveats)."""
    c = st.columns(6)
    c[0].metric("σ", f"{live['sigma']:.3g}", help=live["how"])
    c[1].metric(f"η ({cfg.granularity}, worst)", f"{live['fil_eta']:.3g}",
                help="FIL η = ‖J‖₂/σ (Eq. 17) at the chosen granularity")
    c[2].metric("mean η̄", f"{live['fil_eta_mean']:.3g}")
    c[3].metric("Cramér–Rao: std ≥", f"{1 / live['fil_eta']:.3g}",
                help="any unbiased estimate of a coordinate of the worst example has standard "
                     "deviation ≥ 1/η (Eq. 3)")
    k = int(cfg.defense.releases)
    c[4].metric(f"η after k = {k} releases", f"{live['fil_eta_composed']:.3g}", help="η√k")
    if "fil_epsilon" in live:
        metric_tile(c[5], run, "DP ε at this σ", f"{live['fil_epsilon']:.3g}", "fil_epsilon",
                    help=f"(ε, {cfg.defense.delta:g})-DP, {cfg.defense.dp_method}; sensitivity "
                         f"Δ₂ = 2R/(nλ) = {live['fil_sensitivity']:.3g}")
    else:
        metric_tile(c[5], run, "DP ε at this σ", "none", "fil_epsilon",
                    help="least squares has no finite L2 sensitivity: no σ buys (ε, δ)-DP; "
                         "FIL's η needs no such bound")
    st.caption(f"{live['how']}. Per example: max η {live['fil_eta_example_max']:.3g}, label "
               f"max η {live['fil_eta_label_max']:.3g}, target attribute max η "
               f"{live['fil_eta_attr_max']:.3g}; per class (group) max η "
               f"{live['fil_eta_group_max']:.3g}; whole data set η "
               f"{live['fil_eta_dataset']:.3g}; derived local RDP (α = 1, ‖Δ‖ = 2) of the worst "
               f"example {live['fil_local_rdp_max']:.3g} nats (first order; not in the paper).")


def examples_section(base, sigma: float) -> None:
    """Figs. 2-4: the η histogram by class, the most / least leaking examples, η vs loss."""
    a = base.artifacts
    names = base.info.get("label_names", ["0", "1"])
    eta = a["eta_example"] / sigma
    st.plotly_chart(fil_figure("eta_histogram_figure", eta, a["y_train"], tuple(names),
                               sigma=float(sigma)), width="stretch", key="fi_hist")
    shape = base.info.get("image_shape")
    if shape and "most_images" in a:
        st.plotly_chart(fil_figure("image_strip_figure", a["most_images"],
                                   tuple(eta[a["most_idx"]]), tuple(shape),
                                   title="Most leaking training examples (largest η)"),
                        width="stretch", key="fi_most")
        st.plotly_chart(fil_figure("image_strip_figure", a["least_images"],
                                   tuple(eta[a["least_idx"]]), tuple(shape),
                                   title="Least leaking training examples (smallest η)"),
                        width="stretch", key="fi_least")
    elif "most_rows" in a:
        feats = base.info.get("feature_names", [])
        with st.expander("Most and least leaking rows (feature values)"):
            for title, rows, idx in (("most", a["most_rows"], a["most_idx"]),
                                     ("least", a["least_rows"], a["least_idx"])):
                st.caption(f"{title} leaking")
                table = [{"row": int(i), "η": float(eta[i]),
                          **{f: float(v) for f, v in zip(feats, r)}} for i, r in zip(idx, rows)]
                st.dataframe(table, hide_index=True, width="stretch")
    st.plotly_chart(fil_figure("eta_scatter_figure", a["loss"], a["grad_norm"], eta,
                               rho_loss=metric(base, "fil_spearman_loss"),
                               rho_grad=metric(base, "fil_spearman_grad"), sigma=float(sigma)),
                    width="stretch", key="fi_scatter")
    st.caption("Low η always comes with a low loss, but high η occurs across the whole range: "
               "loss-based heuristics find leaking examples with high precision and low recall "
               "(the paper's Fig. 4).")


def irfil_section(base, sigma: float) -> None:
    """Fig. 5 and the Table-1-style before / after."""
    a = base.artifacts
    if len(a["irfil_eta_std"]) < 2:
        st.caption("IRFIL: set IRFIL iterations > 0 to reweight the examples until every η is "
                   "equal (Algorithm 1).")
        return
    left, right = st.columns([1.6, 1])
    left.plotly_chart(fil_figure("irfil_figure", a["irfil_eta_std"], a["irfil_eta_mean"],
                                 sigma=float(sigma)), width="stretch", key="fi_irfil")
    T = len(a["irfil_eta_std"]) - 1
    acc = "test accuracy" if base.config["model"]["model"] else "test score"
    rows = [{"model": f"{base.config['model']['model']}", "η̄ ± std (σ = 1)":
             f"{a['irfil_eta_mean'][0]:.3g} ± {a['irfil_eta_std'][0]:.2g}",
             acc: f"{100 * a['irfil_acc'][0]:.1f} %"},
            {"model": f"+IRFIL (T = {T}, {base.config['irfil']['weight_method']})",
             "η̄ ± std (σ = 1)": f"{a['irfil_eta_mean'][-1]:.3g} ± {a['irfil_eta_std'][-1]:.2g}",
             acc: f"{100 * a['irfil_acc'][-1]:.1f} %"}]
    with right:
        st.markdown("**Table 1 analogue** (noise-free model)")
        st.dataframe(rows, hide_index=True, width="stretch")
        ratio = metric(base, "fil_irfil_std_ratio")
        st.caption(f"std(η) shrinks by {1 / ratio:.0f}× over {T} iterations." if ratio else "")
        st.caption("The paper (MNIST 0 vs 1, σ = 1): linear 0.040 ± 0.014 → 0.047 ± 0.000, "
                   "accuracy 100 → 99.8 %; logistic 0.027 ± 0.012 → 0.024 ± 0.000, 99.8 → 99.7 %.")


def sweep_section(base, live: dict[str, Any]) -> None:
    """Fig. 6: utility and attack accuracy against η̄, the current η̄ marked."""
    a = base.artifacts
    if "sweep_eta_mean" not in a:
        return
    attacks = {n: a[f"sweep_acc_{n}"] for n in ATTACK_TITLES if n != PRIOR
               and f"sweep_acc_{n}" in a and n in base.config["attack"]["attackers"]}
    stds = {n: a[f"sweep_acc_{n}_std"] for n in attacks}
    prior = float(np.mean(a[f"sweep_acc_{PRIOR}"])) if f"sweep_acc_{PRIOR}" in a else None
    st.plotly_chart(fil_figure("sweep_figure", a["sweep_eta_mean"], a["sweep_utility_acc"],
                               attacks, attack_std=stds, prior=prior,
                               current=float(live["fil_eta_mean"])),
                    width="stretch", key="fi_sweep")
    st.caption(f"σ swept so that the mean η̄ (granularity: {base.config['granularity']}) runs "
               f"from 0.01 to 100; {base.config['attack']['noise_trials']} noise draws per point "
               "(error bars: std over draws). The attacks fall to the prior as η̄ falls.")


def crb_section(base) -> None:
    a = base.artifacts
    if "crb_bound" not in a:
        st.info("Cramér–Rao panel: an unbiased reconstruction in closed form exists for least "
                "squares only (its minimiser is linear in the labels); switch the model to linear.")
        for c in caveats_of(base):
            if c["key"] == "fil_crb_least_squares_only":
                st.caption(sentence(c))
        return
    st.plotly_chart(fil_figure("crb_figure", a["crb_bound"], a["crb_variance"], a["crb_sigma"]),
                    width="stretch", key="fi_crb")
    ratio = a["crb_variance"] / a["crb_bound"]
    hi = a.get("crb_ratio_hi", ratio)
    st.caption(f"Unbiased label reconstruction ŷ_i = a_iᵀ(w' − A Σ_(j≠i) ω_j x_j y_j)/‖a_i‖² over "
               f"{int(metric(base, 'fil_crb_trials') or 0)} noise draws per σ, for rows spread "
               f"over the label-η range. Smallest variance / bound: "
               f"{fmt(metric(base, 'fil_crb_min_ratio'), 3)}; {int(np.sum(ratio < 1))} of "
               f"{ratio.size} points fall below 1 by Monte Carlo error, and "
               f"{int(np.sum(hi < 1))} lie below it beyond their 95 % χ² interval (about "
               f"{0.025 * ratio.size:.1f} expected by chance). This "
               "estimator attains the bound (its points sit on the line); any unbiased "
               "estimator must stay on or above it, a biased one need not (the threat model's "
               "caveat).")


def attack_section(cfg, result) -> None:
    """The attacks at this σ (table with intervals, threat cards) and Fig. 7."""
    rows, keys = [], []
    for n in [*cfg.attack.attackers, *([PRIOR] if PRIOR not in cfg.attack.attackers else [])]:
        key = f"fil_attack_{n.removeprefix('fil_')}_acc"
        keys.append([key])
        rows.append({"attack": ATTACK_TITLES.get(n, n),
                     "accuracy (95 % over draws)": fmt_with_interval(result, key, 3)})
    c1, c2 = st.columns([1.2, 1])
    with c1:
        st.dataframe(flag_rows(rows, result, keys), hide_index=True, width="stretch")
        for c in for_metrics(result, [k for ks in keys for k in ks]):
            st.caption(sentence(c))
        u = metric(result, "fil_utility_acc")
        st.caption(f"Target: {result.info.get('target')} "
                   f"({', '.join(map(str, result.info.get('target_values', [])))}); "
                   f"{int(metric(result, 'fil_targets_attacked') or 0)} training rows attacked "
                   f"in each of {int(metric(result, 'fil_noise_trials') or 0)} noise draws. "
                   f"Utility of the noisy model: test accuracy {fmt(u, 3)} (noise-free "
                   f"{fmt(metric(result, 'fil_utility_acc_clean'), 3)}).")
    with c2:
        st.markdown("**Threat model**")
        st.markdown("\n".join(threat_card_lines(
            {n: ATTACK_TITLES[n] for n in [*cfg.attack.attackers, "fil_prior"]
             if n in ATTACKS})))
    a = result.artifacts
    if "decile_acc" in a:
        st.plotly_chart(fil_figure("decile_figure", a["decile_eta0"], a["decile_acc"],
                                   tuple(int(i) for i in a["decile_iterations"]),
                                   prior=metric(result, "fil_attack_prior_acc")),
                        width="stretch", key="fi_deciles")
        st.caption("Examples sorted into deciles of their initial η (the unweighted model): "
                   "the top decile starts out more exposed; IRFIL flattens the curve (the "
                   "paper's Fig. 7).")


def lira_section(result) -> None:
    """FIL against membership (issue #22): LiRA on this page's own release, η against the
    per-example LiRA score, IRFIL on LiRA's most exposed rows; the verdict from the numbers."""
    from core.attacks.fil_membership import eta_verdict

    rho = metric(result, "fil_lira_spearman")
    if rho is None:
        st.caption("FIL against membership (LiRA on this release): not run for this config "
                   "(lira.enabled; it runs by default on views of at most 5,000 training rows).")
        return
    st.markdown("**Does η identify the examples that leak? LiRA against this release**")
    lo, hi = metric(result, "fil_lira_spearman_lo"), metric(result, "fil_lira_spearman_hi")
    st.markdown(eta_verdict(rho, lo, hi))
    a = result.artifacts
    import plotly.graph_objects as go

    fig = go.Figure(go.Scattergl(x=a["eta_example"], y=a["fil_lira_score"], mode="markers",
                                 marker={"size": 5, "opacity": 0.6}, name="training rows"))
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis={"title": "per-example η (σ = 1)", "type": "log"},
                      yaxis={"title": "per-example LiRA score (mean over draws)"},
                      title=f"η vs LiRA score: Spearman ρ = {rho:.2f} [{lo:.2f}, {hi:.2f}]")
    st.plotly_chart(fig, width="stretch", key="fi_lira_scatter")
    # how LiRA was run (caveat fil_lira_setup) stands right under the figure it qualifies
    flagged_caption(st, result, "η against LiRA's per-example score on this release.",
                    "fil_lira_spearman")
    rows = [{"": "LiRA AUC (members: training rows; non-members: test rows)",
             "value": fmt(metric(result, "fil_lira_auc"), 3)}]
    if metric(result, "fil_lira_top_tpr_plain") is not None:
        rows += [
            {"": "LiRA's most exposed rows: TPR at 5 % FPR, plain release",
             "value": fmt(metric(result, "fil_lira_top_tpr_plain"), 3)},
            {"": "the same rows under IRFIL's release (same σ)",
             "value": fmt(metric(result, "fil_lira_top_tpr_irfil"), 3)},
            {"": "their mean LiRA score, plain → IRFIL",
             "value": f"{fmt(metric(result, 'fil_lira_top_score_plain'), 3)} → "
                      f"{fmt(metric(result, 'fil_lira_top_score_irfil'), 3)}"},
            {"": "share of them among the highest-η rows",
             "value": fmt(metric(result, "fil_lira_top_overlap_eta"), 3)}]
    names = [["fil_lira_auc"]] + [[n] for n in ("fil_lira_top_tpr_plain",
                                                 "fil_lira_top_tpr_irfil",
                                                 "fil_lira_top_score_plain",
                                                 "fil_lira_top_overlap_eta")][:len(rows) - 1]
    st.dataframe(flag_rows(rows, result, names), hide_index=True, width="stretch")
    st.caption("LiRA's most exposed rows are chosen on the first half of the release "
               "draws and scored on the second (choosing and scoring on the same draws would "
               "favour them). The interval of ρ is a paired percentile bootstrap over the "
               "training rows.")


def show(cfg, base, result) -> None:
    """Everything: the closed-form parts from ``base`` (same fit), the attacks from ``result``
    (this exact config; None when it has not run)."""
    live = live_numbers(cfg, base)
    numbers_section(cfg, live, result or base)
    tab1, tab2, tab3, tab4 = st.tabs(["η by example", "Attacks", "IRFIL", "Cramér–Rao"])
    with tab1:
        examples_section(base, live["sigma"])
        exposure_ui(result or base, key="fi_exposure")
    with tab2:
        if result is None:
            st.info("The attacks at this σ have not run yet: press **Run** (the fit is reused).")
        else:
            attack_section(cfg, result)
            lira_section(result)
        sweep_section(base, live)
    with tab3:
        irfil_section(base, live["sigma"])
    with tab4:
        crb_section(base)


# --------------------------------------------------------------------------------------------
# the page


def fit_panel(run) -> None:
    """The closed-form parts from a stored run of the same fit (this run, the session's newest
    run of the fit, or the fit at the default noise setting) and the attacks of this run
    (none yet: the σ, η and ε sliders still redraw from the fit)."""
    cfg, result = run.cfg, run.result
    fits: dict[str, Any] = st.session_state.setdefault(_FITS, {})
    fk = fit_key(cfg)
    if result is not None:
        fits[fk] = result
    base = result or fits.get(fk)
    if base is None:  # a stored run of the same fit at the default noise setting
        base = peek({**run.config, "defense": {"kind": "fil_output_perturbation",
                                               "releases": run.config["defense"]["releases"]}})
    if base is None:
        st.info("No stored fit for these settings yet. Press **Run** (Adult: the full per-example "
                "FIL of 30,162 rows and IRFIL take about a minute on a busy CPU; the σ, η and ε "
                "sliders then redraw at once).")
    else:
        try:
            show(cfg, base, result)
        except ValueError as exc:  # e.g. a target η no σ reaches
            st.error(f"Fisher information: {exc}")
    if result is not None:
        result_caption(result)


st.title("Fisher information")
st.caption("How much does a released linear or logistic regression say about each training "
           "example? Fisher information loss η = ‖J‖₂/σ (Hannun et al., UAI 2021) bounds every "
           "unbiased reconstruction: variance ≥ 1/η². Move σ (or a target η, or ε) and watch η, "
           "the attacks and the bound; IRFIL reweights the data until every example leaks "
           "equally.")
run_panel(controls(), kind=KIND, page="fisher_information", key="fi", title="Fisher information",
          label=lambda run: f"Fisher information on {run.cfg.data.name}",
          auto=lambda run: run.cfg.data.name in QUICK, show=fit_panel, idle=fit_panel,
          result_first=True)
