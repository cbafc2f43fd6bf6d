"""TAPPFL's bounds for a Result: Theorem 2 (attack accuracy vs H(u|r), with a live what-if H)
and Theorem 1 (task error vs attack advantage, with a live what-if Adv). The numbers come from
the Result; the what-ifs re-evaluate the closed forms of :mod:`core.bounds.tappfl` inside a
fragment, so a slider move recomputes only them."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from dashboard.base.format import fmt, fmt_interval, interval, metric
from dashboard.components._figures import figure
from dashboard.components.caveats import flag_for, flag_text, for_metrics, metric_tile, sentence


@st.fragment
def _theorem2_live(h_est: float | None, best_acc: float | None, chance: float | None,
                   key: str, run_key: str, flag: str | None = None) -> None:
    from core.bounds.tappfl import thm2_exact_bound, thm2_paper_bound

    left, right = st.columns([1, 1.3])
    with left:
        what_if = st.slider("What-if H(u | r) (bits)", 0.0, 1.0,
                            float(np.clip(h_est if h_est is not None else 1.0, 0.0, 1.0)),
                            step=0.01, key=f"{key}_what_if_h_{run_key}")
        w1, w2 = st.columns(2)
        w1.metric("paper bound at what-if H", f"{float(thm2_paper_bound(what_if)):.3f}")
        w2.metric("exact bound at what-if H", f"{float(thm2_exact_bound(what_if)):.3f}")
        st.caption("Both forms of Theorem 2 evaluated live by core.bounds.tappfl; the curve marks "
                   "Ĥ from this run, the measured attack, and the what-if H.")
    right.plotly_chart(figure("bounds_curve_figure", h_estimate=h_est, measured_acc=best_acc,
                              chance=chance, what_if=what_if, measured_flag=flag),
                       width="stretch", key=f"{key}_bounds_curve")


@st.fragment
def _theorem1_live(thm1: dict[str, float | None], threshold: float | None, key: str,
                   run_key: str) -> None:
    from core.bounds.tappfl import thm1_tradeoff

    what_adv = st.slider("What-if Adv", 0.0, 1.0, float(np.clip(thm1["adv"] or 0.0, 0, 1)),
                         step=0.01, key=f"{key}_what_if_adv_{run_key}")
    live = thm1_tradeoff(delta_y_u=thm1["delta"], R=thm1["R"], C_L=thm1["CL"], adv=what_adv)
    text = (f"At Adv = {what_adv:.2f}: right-hand side = {float(live['rhs']):.3f}"
            + (" (vacuous)" if bool(live["vacuous"]) else "") + ".")
    if threshold is not None:
        text += f" The bound is informative only for Adv < {threshold:.4f} (from the run)."
    st.caption(text)


def theorem2(result: Any, *, key: str) -> None:
    k = int(metric(result, "n_values") or len(result.info.get("attribute_values", [])) or 2)
    attr = result.info.get("private_attribute", "the attribute")
    chance = metric(result, "chance")
    h_est = metric(result, "h_u_given_r_bits")
    if metric(result, "bound_thm2_valid") == 0 or k > 2:
        st.info(result.info.get("thm2_message") or "Theorem 2 covers binary attributes only "
                f"({attr} has {k} values): no bound is drawn.")
        return
    best_acc = metric(result, "attack_acc_best")
    best = result.info.get("best_attacker")
    st.markdown("**Theorem 2**: no attacker's accuracy exceeds the bound at H(u | r).")
    t0, t1, t2, t3 = st.columns(4)
    t0.metric("Ĥ(u | r) (bits)", fmt(h_est))
    # the estimate caveat is one sentence for the two forms: under the paper form's tile
    metric_tile(t1, result, "paper form", fmt(metric(result, "bound_thm2_paper")),
                "bound_thm2_paper")
    t2.metric(f"exact form {flag_for(result, 'bound_thm2_exact')}".strip(),
              fmt(metric(result, "bound_thm2_exact")))
    iv = interval(result, "attack_acc_best")
    exceeded = [c for c in for_metrics(result, ["attack_acc_best"])
                if c["key"] == "tappfl_thm2_exceeded"]
    t3.metric(f"measured best {flag_text(exceeded)}".strip(), fmt(best_acc),
              help=f"Accuracy of the strongest attacker on the release ({best or 'n/a'}, chosen "
                   "by AUC)" + (f"; 95 % interval {fmt_interval(iv)}" if iv else "") + ".")
    st.caption("Ĥ(u | r) from the best fresh attacker's cross-entropy.")
    for c in exceeded:
        st.warning(sentence(c))
    _theorem2_live(h_est, best_acc, chance, key, (result.key or "")[:16],
                   flag_text(exceeded).removeprefix("⚠ ") or None)


def theorem1(result: Any, *, key: str) -> None:
    st.markdown("**Theorem 1**: Err(u=0) + Err(u=1) ≥ Δ(y|u) − 2·R·C_L·Adv for every task "
                "classifier on r.")
    thm1 = {n: metric(result, f"bound_thm1_{n}") for n in ("rhs", "delta", "R", "CL", "adv", "vacuous")}
    if thm1["rhs"] is None:
        st.info(result.info.get("thm1_message") or "Theorem 1 is stated for a binary task and a "
                "binary attribute; this result has no Theorem 1 numbers.")
        for c in for_metrics(result, ["bound_thm1_rhs"]):
            st.caption(sentence(c))
        return
    threshold = metric(result, "bound_thm1_adv_threshold")
    h1, h2, h3, h4, h5, h6 = st.columns(6)
    h1.metric("Δ(y | u)", fmt(thm1["delta"]))
    h2.metric("R = max‖r‖", fmt(thm1["R"]))
    h3.metric("C_L (Lipschitz)", fmt(thm1["CL"]))
    h4.metric("Adv (empirical)", fmt(thm1["adv"]))
    h5.metric(f"right-hand side {flag_for(result, 'bound_thm1_rhs')}".strip(), fmt(thm1["rhs"]))
    h6.metric("informative for Adv <", fmt(threshold, 4),
              help="Δ(y|u) / (2·R·C_L), computed by the engine: above it the right-hand side "
                   "is ≤ 0.")
    for c in for_metrics(result, ["bound_thm1_rhs"]):
        (st.warning if c["key"] == "tappfl_thm1_vacuous" else st.caption)(sentence(c))
    if None not in (thm1["delta"], thm1["R"], thm1["CL"]) and thm1["R"] * thm1["CL"] > 0:
        _theorem1_live(thm1, threshold, key, (result.key or "")[:16])


def bounds_panel(result: Any, *, key: str) -> None:
    """TAPPFL Theorems 2 and 1 for ``result`` (plot key ``{key}_bounds_curve``)."""
    theorem2(result, key=key)
    theorem1(result, key=key)
