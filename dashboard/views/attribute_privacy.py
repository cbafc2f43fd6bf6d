"""Attribute privacy in federated learning: TAPPFL against DP-Gaussian, DP-Laplace and pruning.

Every number comes from a stored ``tappfl`` Result (contract: notes/TAPPFL_RESULT.md) or from
the closed-form bounds of :mod:`core.bounds.tappfl`. A λ sweep stores one Result per grid point,
so moving the λ slider afterwards shows the nearest cached point at once.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from core.bounds.tappfl import thm1_tradeoff, thm2_exact_bound, thm2_paper_bound
from core.config import TappflConfig
from dashboard import state
from dashboard.sidebar import dataset_label, dataset_rows, missing_reason
from dashboard.tappfl_settings import LAMBDA_GRID, WIDGETS, preset_widgets
from dashboard.tappfl_settings import build_config as build_tappfl_config
from dashboard.widgets import (
    attack_bars_figure,
    bounds_curve_figure,
    get_store,
    lines_figure,
    result_caption,
    roc_figure,
    run_many_with_progress,
    run_with_progress,
    running_jobs_panel,
    scatter_figure,
    tradeoff_figure,
    validate,
)

DATASETS = ["synthetic", "adult", "digits", "mnist5k"]
DEFENSES = {
    "none": "none (plain FedAvg encoder)",
    "tappfl": "TAPPFL (λ)",
    "dp_gaussian": "DP-Gaussian on uploads",
    "dp_laplace": "DP-Laplace on uploads",
    "pruning": "magnitude pruning of uploads",
}
_DEFAULTS = TappflConfig()
ATTACKERS = {
    "in_training": "in-training adversary Ψ",
    "logreg": "fresh logistic regression",
    "mlp": "fresh MLP",
    "prior": "prior (no model)",
    "raw_logreg": "raw x · logistic regression",
    "raw_mlp": "raw x · MLP",
}
SHORT = {"in_training": "in-training Ψ", "logreg": "fresh logreg", "mlp": "fresh MLP",
         "prior": "prior", "raw_logreg": "raw x<br>logreg", "raw_mlp": "raw x<br>MLP"}
FRESH = ("in_training", "logreg", "mlp")
DEFENSE_METRICS = {
    "dp_sigma": "Gaussian noise σ", "dp_laplace_b": "Laplace scale b",
    "dp_epsilon_round": "ε per round", "dp_epsilon_total": "ε total (all rounds)",
    "dp_delta_total": "δ total", "pruning_rate": "pruning rate",
}


def _apply_preset() -> None:
    st.session_state.update(preset_widgets(st.session_state["ap_preset"]))


def _init_state() -> None:
    ss = st.session_state
    ss.setdefault("ap_preset", "quick")
    for k, v in preset_widgets(ss["ap_preset"]).items():
        ss.setdefault(k, v)
    defaults = {
        "ap_lambda": _DEFAULTS.tradeoff_lambda, "ap_defense": "tappfl",
        "ap_eps": _DEFAULTS.dp.epsilon, "ap_delta": _DEFAULTS.dp.delta,
        "ap_clip": _DEFAULTS.dp.clip_norm, "ap_prune": _DEFAULTS.pruning_rate,
        "ap_partition": _DEFAULTS.fl.partition,
    }
    for k, v in defaults.items():
        ss.setdefault(k, v)


def metric(result, name: str) -> float | None:
    v = result.metrics.get(name)
    return None if v is None or not math.isfinite(v) else float(v)


def fmt(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


# --------------------------------------------------------------------------------------------
# controls

st.title("Attribute privacy in federated learning")
st.caption("TAPPFL trains each device's encoder with −λ·CE(adversary) − (1−λ)·I_JSD(x; r | u) "
           "and federates it with FedAvg; baselines perturb or prune the uploads instead. "
           "λ here is TAPPFL's privacy weight (not FIL's regulariser).")
_init_state()
s = state.settings()
rows = {r["name"]: r for r in dataset_rows()}
state.follow_sidebar("ap_dataset", DATASETS, "synthetic")

c1, c2, c3, c4 = st.columns([1.2, 1, 1.3, 1])
name = c1.selectbox("Data set", DATASETS, key="ap_dataset",
                    format_func=lambda n: dataset_label(rows[n]))
attr = c2.selectbox("Private attribute", list(rows[name]["attributes"]), key=f"ap_attr_{name}")
defense = c3.selectbox("Defense", list(DEFENSES), key="ap_defense", format_func=DEFENSES.get)
c4.segmented_control("Preset", ["quick", "paper"], key="ap_preset", on_change=_apply_preset,
                     required=True,
                     help="The engine's presets (core.defenses.tappfl): quick = sized for a "
                          "laptop CPU; paper = TAPPFL's setting (100 devices, 10% per round, 20 "
                          "rounds, 10 local epochs).")
if not rows[name]["available"]:
    st.warning(f"**{name}** is a real data set; {missing_reason(name)} A run will fail with a "
               "message and store nothing.")

f1, f2, f3, f4, f5 = st.columns(5)
f1.number_input("Devices", 1, 1000, step=1, key="ap_devices")
f2.number_input("Rounds", 1, 200, step=1, key="ap_rounds")
f3.number_input("Fraction per round", 0.01, 1.0, step=0.05, key="ap_fraction", format="%.2f")
f4.number_input("Local epochs", 1, 100, step=1, key="ap_epochs")
f5.number_input("Adversary steps", 1, 20, step=1, key="ap_adv_steps",
                help="Attribute-adversary (Ψ) steps per encoder (Θ) step.")

lam = st.session_state["ap_lambda"]
if defense == "tappfl":
    lam = st.slider("λ (TAPPFL privacy weight): 0 = utility only, 1 = privacy only", 0.0, 1.0,
                    step=0.05, key="ap_lambda")
elif defense in ("dp_gaussian", "dp_laplace"):
    d1, d2, d3 = st.columns(3)
    d1.number_input("ε per round (DP budget)", min_value=0.01, max_value=10_000.0, step=0.5,
                    key="ap_eps")
    d2.number_input("δ", min_value=1e-9, max_value=0.5, step=1e-5, format="%.1e", key="ap_delta",
                    disabled=defense == "dp_laplace",
                    help="Gaussian mechanism only; Laplace is pure ε-DP.")
    d3.number_input("clip norm of the update", min_value=0.01, max_value=1000.0, step=0.1,
                    key="ap_clip")
elif defense == "pruning":
    st.slider("Pruning rate (fraction of upload entries zeroed)", 0.0, 0.95, step=0.05,
              key="ap_prune")

with st.expander("Advanced"):
    a1, a2, a3, a4, a5, a6 = st.columns(6)
    a1.number_input("Local batch size", 1, 4096, step=1, key="ap_batch")
    a2.number_input("Learning rate", 1e-4, 10.0, step=0.005, format="%.4f", key="ap_lr")
    a3.selectbox("Partition", ["iid", "dirichlet", "attribute"], key="ap_partition")
    a4.number_input("Row cap (0 = all rows)", 0, 1_000_000, step=500, key="ap_max_samples",
                    help="Seeded, stratified subsample of the data set (speed).")
    a5.number_input("Projection points (0 = none)", 0, 5000, step=100, key="ap_proj_points",
                    help="Test rows embedded (t-SNE) for the raw vs learned plot.")
    a6.number_input("Adversary lr ×", 0.01, 100.0, step=0.5, key="ap_adv_lr",
                    help="The adversary Ψ's learning rate as a multiple of the encoder's "
                         "(TAPPFL Algorithm 1's lr1 / lr3). A stronger in-training adversary "
                         "pushes the encoder harder to remove u.")


_preset = st.session_state["ap_preset"]
_edited = [WIDGETS[k] for k, v in preset_widgets(_preset).items() if st.session_state.get(k) != v]
if _edited:
    st.caption(f"Edited from the {_preset} preset: {', '.join(_edited)}.")


def build_config(lam_value: float) -> dict[str, Any]:
    """The TappflConfig mapping of the current controls (λ given)."""
    ss = st.session_state
    dp = None
    if defense in ("dp_gaussian", "dp_laplace"):
        dp = {"epsilon": ss["ap_eps"], "clip_norm": ss["ap_clip"]}
        if defense == "dp_gaussian":
            dp["delta"] = ss["ap_delta"]
    return build_tappfl_config(
        preset=ss["ap_preset"], dataset=name, attribute=attr, seed=s.seed, device=s.device,
        defense=defense, lam=lam_value, values={k: ss[k] for k in WIDGETS},
        partition=ss["ap_partition"], dp=dp,
        pruning_rate=ss["ap_prune"] if defense == "pruning" else None)


config = build_config(lam)
if validate(config, label="Attribute privacy") is None:
    st.stop()

buttons = st.container(horizontal=True)
run_clicked = buttons.button("Run", type="primary", key="ap_run")
sweep_clicked = buttons.button("Run λ sweep", key="ap_sweep", disabled=defense != "tappfl",
                          help="Precompute λ ∈ {" + ", ".join(f"{g:g}" for g in LAMBDA_GRID)
                               + "} with the other settings as they are; each point is stored.")

label = f"{DEFENSES[defense]} on {name}/{attr}" + (f", λ={lam:g}" if defense == "tappfl" else "")
if defense == "tappfl":
    run_many_with_progress([build_config(g) for g in LAMBDA_GRID], label="λ sweep",
                           start=sweep_clicked)
result = run_with_progress(config, label=label, start=run_clicked)

# nearest cached grid point when the current λ has no result yet
store = get_store()
grid_results = {g: store.peek(build_config(g)) for g in LAMBDA_GRID} if defense == "tappfl" else {}
shown_lam = lam
if result is None and defense == "tappfl":
    cached = [g for g, r in grid_results.items() if r is not None]
    if cached:
        shown_lam = min(cached, key=lambda g: (abs(g - lam), g))
        result = grid_results[shown_lam]
        st.info(f"No run for λ = {lam:g} yet: showing the nearest cached grid point λ = "
                f"{shown_lam:g}. Press **Run** to compute λ = {lam:g}.")
if result is None:
    st.info("No stored result for these settings yet. Press **Run** (or **Run λ sweep** for the "
            "TAPPFL tradeoff). Runs are stored: the same settings show at once next time.")
    running_jobs_panel()
    st.stop()

# --------------------------------------------------------------------------------------------
# results

info = result.info
k = int(metric(result, "n_values") or len(info.get("attribute_values", [])) or 2)
chance = metric(result, "chance")
result_caption(result)

st.subheader("Utility")
u1, u2, u3 = st.columns(3)
raw = metric(result, "utility_acc_raw")
for col, key, title, help_ in (
    (u1, "utility_acc", "task accuracy on r (logistic head)",
     "Logistic task head trained on the frozen representations r of the train split."),
    (u2, "utility_acc_paper", "task accuracy on r (paper's MLP eval head)",
     "TAPPFL's protocol: a separate MLP head on frozen r (Adam 1e-3, 5 epochs)."),
    (u3, "utility_acc_raw", "reference: logistic head on raw x",
     "What the data allows without any encoder."),
):
    v = metric(result, key)
    delta = None if (v is None or raw is None or key == "utility_acc_raw") else f"{v - raw:+.3f} vs raw"
    col.metric(title, fmt(v), delta=delta, help=help_)

st.subheader("Attacks on the private attribute")
rows_att = []
for who, title in ATTACKERS.items():
    vals = {m: metric(result, f"attack_{who}_{m}") for m in ("acc", "bacc", "auc", "adv")}
    if all(v is None for v in vals.values()):
        continue
    gap = metric(result, f"gap_{who}")
    if gap is None and vals["acc"] is not None and chance is not None:
        gap = vals["acc"] - chance
    rows_att.append({"attacker": title, **vals, "gap to chance": gap, "short": SHORT[who]})
if rows_att:
    table = pd.DataFrame(rows_att).drop(columns="short").rename(columns={"acc": "accuracy", "bacc": "balanced acc",
                                                   "auc": "AUC", "adv": "advantage"})
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in table.columns if c != "attacker"})
    st.caption(f"Chance = {fmt(chance)} (1/k, k = {k} values of {attr}). The raw-x rows are "
               "attacks against the undefended data: the leakage the defense starts from.")
    left, right = st.columns(2)
    left.plotly_chart(attack_bars_figure(rows_att, chance=chance, title="attack scores"),
                      width="stretch", key="ap_attack_bars")
    rocs = {ATTACKERS[w]: (result.artifacts[f"roc_{w}_fpr"], result.artifacts[f"roc_{w}_tpr"])
            for w in FRESH if f"roc_{w}_fpr" in result.artifacts and f"roc_{w}_tpr" in result.artifacts}
    if rocs:
        right.plotly_chart(roc_figure(rocs, title="ROC on the test representations"),
                           width="stretch", key="ap_roc")
else:
    st.warning("This result has no attack metrics.")
st.caption("Why can a fresh attacker beat the in-training adversary? The encoder is trained to "
           "fool the adversary Ψ it trains against; a fresh non-linear attacker, trained afterwards "
           "on the frozen representations, can still recover what Ψ no longer sees. That gap is a "
           "finding about the defense, not a bug.")

# --------------------------------------------------------------------------------------------
# bounds

st.subheader("Bounds (TAPPFL Theorems 1 and 2)")
measured = [metric(result, f"attack_{w}_acc") for w in FRESH]
measured = [v for v in measured if v is not None]
best_acc = max(measured) if measured else None
h_est = metric(result, "h_u_given_r_bits")
thm2_valid = metric(result, "bound_thm2_valid")


@st.fragment
def theorem2_live(h_est: float | None, best_acc: float | None, chance: float | None, key: str) -> None:
    """What-if H slider, both bound forms at it, and the curve: reruns alone (fragment), so a
    slider move recomputes only the closed-form bounds."""
    left, right = st.columns([1, 1.3])
    with left:
        what_if = st.slider("What-if H(u | r) (bits)", 0.0, 1.0,
                            float(np.clip(h_est if h_est is not None else 1.0, 0.0, 1.0)),
                            step=0.01, key=f"ap_what_if_h_{key}")
        w1, w2 = st.columns(2)
        w1.metric("paper bound at what-if H", f"{float(thm2_paper_bound(what_if)):.3f}")
        w2.metric("exact bound at what-if H", f"{float(thm2_exact_bound(what_if)):.3f}")
        st.caption("Both forms of Theorem 2 evaluated live by core.bounds.tappfl; the curve marks "
                   "Ĥ from this run, the measured attack, and the what-if H.")
    right.plotly_chart(bounds_curve_figure(h_estimate=h_est, measured_acc=best_acc, chance=chance,
                                           what_if=what_if), width="stretch", key="ap_bounds_curve")


if thm2_valid == 0 or k > 2:
    st.info(info.get("thm2_message") or "Theorem 2 covers binary attributes only "
            f"({attr} has {k} values): no bound is drawn.")
else:
    st.markdown("**Theorem 2**: no attacker's accuracy exceeds the bound at H(u | r).")
    t0, t1, t2, t3 = st.columns(4)
    t0.metric("Ĥ(u | r) (bits)", fmt(h_est))
    t1.metric("paper form", fmt(metric(result, "bound_thm2_paper")))
    t2.metric("exact form", fmt(metric(result, "bound_thm2_exact")))
    t3.metric("measured best", fmt(best_acc),
              help="Best accuracy of the in-training adversary and the fresh attackers.")
    st.caption("Ĥ(u | r) from the best fresh attacker's cross-entropy. "
               + (info.get("bound_caveat") or ""))
    exact = metric(result, "bound_thm2_exact")
    if best_acc is not None and exact is not None and best_acc > exact:
        st.warning(f"The measured accuracy {best_acc:.3f} exceeds the exact bound "
                   f"{exact:.3f} at Ĥ: Ĥ over-estimates H(u|r), so this bound is optimistic "
                   "here, not a certificate.")
    theorem2_live(h_est, best_acc, chance, result.key or "")


@st.fragment
def theorem1_live(thm1: dict[str, float | None], key: str) -> None:
    """What-if Adv: Theorem 1's right-hand side recomputed live (fragment)."""
    adv_star = thm1["delta"] / (2 * thm1["R"] * thm1["CL"])
    what_adv = st.slider("What-if Adv", 0.0, 1.0, float(np.clip(thm1["adv"] or 0.0, 0, 1)),
                         step=0.01, key=f"ap_what_if_adv_{key}")
    live = thm1_tradeoff(delta_y_u=thm1["delta"], R=thm1["R"], C_L=thm1["CL"], adv=what_adv)
    st.caption(f"At Adv = {what_adv:.2f}: right-hand side = {live['rhs']:.3f}"
               + (" (vacuous)" if live["vacuous"] else "")
               + f". The bound is informative only for Adv < Δ/(2·R·C_L) = {adv_star:.4f}.")


st.markdown("**Theorem 1**: Err(u=0) + Err(u=1) ≥ Δ(y|u) − 2·R·C_L·Adv for every task "
            "classifier on r.")
thm1 = {n: metric(result, f"bound_thm1_{n}") for n in ("rhs", "delta", "R", "CL", "adv", "vacuous")}
if thm1["rhs"] is None:
    st.info(info.get("thm1_message") or "Theorem 1 is stated for a binary task and a binary "
            "attribute; this result has no Theorem 1 numbers.")
else:
    h1, h2, h3, h4, h5 = st.columns(5)
    h1.metric("Δ(y | u)", fmt(thm1["delta"]))
    h2.metric("R = max‖r‖", fmt(thm1["R"]))
    h3.metric("C_L (Lipschitz)", fmt(thm1["CL"]))
    h4.metric("Adv (empirical)", fmt(thm1["adv"]))
    h5.metric("right-hand side", fmt(thm1["rhs"]))
    if thm1["vacuous"] == 1:
        st.warning("Vacuous at this setting: the right-hand side is ≤ 0, so Theorem 1 says "
                   "nothing about the task error here (2·R·C_L·Adv outweighs Δ(y|u)).")
    if None not in (thm1["delta"], thm1["R"], thm1["CL"]) and thm1["R"] * thm1["CL"] > 0:
        theorem1_live(thm1, result.key or "")
    if info.get("thm1_caveat"):
        st.caption(info["thm1_caveat"])

dp_bits = [(n, metric(result, n)) for n in ("dp_sigma", "dp_laplace_b", "dp_epsilon_round",
                                            "dp_epsilon_total", "dp_delta_total", "pruning_rate")]
dp_bits = [(n, v) for n, v in dp_bits if v is not None]
if dp_bits:
    st.markdown("**Defense parameters**" + (f" (accountant: {info['accountant']})"
                                             if info.get("accountant") else ""))
    cols = st.columns(len(dp_bits))
    for col, (n, v) in zip(cols, dp_bits):
        col.metric(DEFENSE_METRICS[n], f"{v:.4g}", help=n)

# --------------------------------------------------------------------------------------------
# curves, tradeoff, projections

curves = result.curves
if curves.get("round"):
    st.subheader("Per round")
    x = curves["round"]
    g1, g2 = st.columns(2)
    losses = {n: curves[n] for n in ("ce_loss", "jsd_loss") if n in curves}
    accs = {n: curves[n] for n in ("utility_acc", "in_training_acc", "attack_logreg_auc") if n in curves}
    if losses:
        g1.plotly_chart(lines_figure(x, losses, title="losses (mean over sampled devices)",
                                     x_title="round"), width="stretch", key="ap_curve_losses")
    if accs:
        g2.plotly_chart(lines_figure(x, accs, title="utility and attack", x_title="round"),
                        width="stretch", key="ap_curve_accs")

if defense == "tappfl":
    st.subheader("λ tradeoff")
    pts = []
    lam_results = dict(grid_results)
    if shown_lam not in lam_results:
        lam_results[shown_lam] = result
    y_key = "auc" if k == 2 else "acc"
    for g, r in sorted(lam_results.items()):
        if r is None:
            continue
        ys = [metric(r, f"attack_{w}_{y_key}") for w in ("logreg", "mlp")]
        ys = [v for v in ys if v is not None]
        util = metric(r, "utility_acc")
        if util is not None:
            pts.append({"lam": g, "utility": util, "fresh": max(ys) if ys else None,
                        "in_training": metric(r, f"attack_in_training_{y_key}")})
    if pts:
        st.plotly_chart(tradeoff_figure(
            pts, current=shown_lam, y_title=f"attack {y_key.upper()}",
            y_keys={"strongest fresh attacker": "fresh", "in-training adversary Ψ": "in_training"},
            chance=0.5 if y_key == "auc" else chance), width="stretch", key="ap_tradeoff")
        st.caption("One point per cached λ. The in-training adversary is what TAPPFL optimises "
                   "against; the fresh attacker is trained afterwards on the frozen r.")
        missing = [g for g in LAMBDA_GRID if grid_results.get(g) is None]
        if missing:
            st.caption("Not cached yet: λ = " + ", ".join(f"{g:g}" for g in missing)
                       + ". **Run λ sweep** computes them.")

if "proj_raw" in result.artifacts and "proj_repr" in result.artifacts:
    st.subheader("Raw data vs learned representations")
    codes = result.artifacts.get("proj_attribute")
    names = info.get("attribute_values") or [str(v) for v in np.unique(codes)]
    if isinstance(names, dict):
        names = names.get(attr, [])
    p1, p2 = st.columns(2)
    p1.plotly_chart(scatter_figure(result.artifacts["proj_raw"], codes, names,
                                   title="raw x (test rows)", legend_title=attr),
                    width="stretch", key="ap_proj_raw")
    p2.plotly_chart(scatter_figure(result.artifacts["proj_repr"], codes, names,
                                   title="learned r (same rows)", legend_title=attr),
                    width="stretch", key="ap_proj_repr")
    st.caption(f"Coloured by the private attribute {attr}. Well-separated colours on the right "
               "mean r still carries it.")

for note in info.get("notes", []):
    st.caption(f"note: {note}")
with st.expander("Config and all metrics"):
    j1, j2 = st.columns(2)
    j1.json(result.config, expanded=1)
    j2.dataframe(pd.DataFrame({"metric": list(result.metrics), "value": list(result.metrics.values())}),
                 hide_index=True, width="stretch")
running_jobs_panel()
