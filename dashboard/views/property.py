"""Property: Inf2Guard's defense against property inference (spec 004 §2.2, Algorithm 2) and
the property attacks of §3.2 — can an attacker tell the share of women (or of bold digits) in
a subset of rows from the subset's aggregated representation?

``controls()`` turns the widgets into a ``property`` config (small ``*_ui()`` functions); the
rest draws the stored Result: utility beside the majority-class rate, each attacker's accuracy
against chance 1/K with intervals, the threat-model cards, the K-ary leakage bound with a live
what-if H, the tradeoff over λ (through the sweep machinery, the current λ starred) and a
projection of the target subsets coloured by their property bin.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from core.config.schema import PropertySubsetSpec, PropertyTrainSpec
from core.foundation.parts import DEFENSES, attack_by_config_name, attack_titles, config_names
from core.report.tradeoff import tradeoff_points
from dashboard import state
from dashboard.base.format import fmt, fmt_with_interval, interval, metric, near_chance_text
from dashboard.base.widgets import peek, run_with_progress
from dashboard.components import projection_pair, result_caption
from dashboard.components._figures import figure
from dashboard.components.caveats import flag_for, for_metrics, sentence
from dashboard.components.inputs import blocked_reason, number_ui
from dashboard.components.knob import knob_ui
from dashboard.components.run_panel import run_panel
from dashboard.components.tradeoff import filled, tradeoff_plot
from dashboard.property_settings import DEFAULTS, PRESETS
from dashboard.sidebar import dataset_label, dataset_rows, require_data

KIND = "property"
#: subsets embedded (t-SNE, raw and released) for the projection panel
PROJECTION_POINTS = 200
DEFENSE = "inf2guard_property"
# what a fresh clone has first; Adult needs its files (require_data says how to get them)
DATASETS = ["digits", "mnist5k", "adult"]
TITLES = attack_titles(KIND)
SHORT = {"in_training": "in-training Ψ", "mlp": "fresh MLP", "logreg": "fresh logistic",
         "prior": "prior"}


def _init_state() -> None:
    for k, v in DEFAULTS.items():
        st.session_state.setdefault(k, v)


def data_ui() -> str:
    rows = {r["name"]: r for r in dataset_rows()}
    names = [n for n in DATASETS if n in rows]
    state.follow_sidebar("pr_dataset", names, "digits")
    name = st.selectbox("Data set", names, key="pr_dataset",
                        format_func=lambda n: dataset_label(rows[n]))
    require_data(name, key="pr_dataset")
    if st.session_state.get("_pr_preset_for") != name:  # a new data set: its preset sizes
        p = PRESETS[name]
        st.session_state.update({"_pr_preset_for": name, "pr_sizes": p["sizes"],
                                 "pr_per_bin": p["per_bin"], "pr_epochs": p["epochs"]})
    return name


def defense_ui() -> dict[str, Any]:
    c1, c2, c3 = st.columns([2, 1, 1])
    lam = knob_ui(DEFENSE, key="pr_lambda", family=KIND, where=c1)
    k = c2.selectbox("K property bins", [4, 7, 11], key="pr_k",
                     help="The paper's ratio grids: K = 4 → 0.2–0.5 (Census), 7 → 0.2–0.8 "
                          "(RSNA), 11 → 0.0–1.0 (CelebA).")
    agg = c3.radio("Aggregation", ["mean", "max"], key="pr_agg", horizontal=True,
                   help="The subset representation: the mean (Table 3) or the element-wise "
                        "max (Table 4) of its rows' representations.")
    return {"defense": {"kind": DEFENSE, "tradeoff_lambda": float(lam), "aggregation": agg},
            "k": int(k)}


def subsets_ui(k: int) -> dict[str, Any]:
    c1, c2, c3 = st.columns([2, 1, 1])
    lo, hi = c1.slider("Subset size (rows)", 2, 512, key="pr_sizes")
    p = PRESETS[st.session_state.get("_pr_preset_for", "digits")]
    per_bin = number_ui("Subsets per bin", key="pr_per_bin", default=p["per_bin"], where=c2,
                        field=(PropertySubsetSpec, "train_per_bin"),
                        help="The defender's training subsets and the attacker's shadow "
                             "subsets per bin; the attacked target subsets get half.")
    epochs = number_ui("Epochs", key="pr_epochs", default=p["epochs"], where=c3,
                       field=(PropertyTrainSpec, "epochs"))
    return {"subsets": {"n_values": k, "size_min": int(lo), "size_max": int(hi),
                        "train_per_bin": per_bin, "aux_per_bin": per_bin,
                        "test_per_bin": None if per_bin is None else max(5, per_bin // 2)},
            "train": {"epochs": epochs}}


def attack_ui() -> dict[str, Any]:
    c1, c2 = st.columns([3, 1])
    chosen = c1.multiselect("Attackers", list(config_names(KIND)), key="pr_attackers",
                            format_func=TITLES.get)
    agg = c2.selectbox("Fresh attackers' aggregator", ["same", "mean", "max"],
                       key="pr_attack_agg",
                       help="'same' = the defender's; a substitute reproduces Table 17 (the "
                            "attacker does not know the aggregator).")
    return {"attackers": list(chosen), "aggregation": agg}


def controls() -> dict[str, Any]:
    _init_state()
    s = state.settings()
    top = st.columns([1, 3])
    with top[0]:
        name = data_ui()
    with top[1]:
        d = defense_ui()
    sub = subsets_ui(d["k"])
    attack = attack_ui()
    return {"kind": KIND, "seed": s.seed, "device": s.device,
            "data": {"name": name, "private_attribute": PRESETS[name]["attribute"]},
            "defense": d["defense"], **sub, "attack": attack,
            # two t-SNEs of 400 subsets took ~40 % of a cold default run (issue #20: ≤ 10 s)
            "projection_points": PROJECTION_POINTS}


# --------------------------------------------------------------------------------------------
# results


def attack_rows(result) -> list[dict[str, Any]]:
    rows = []
    for a in result.config["attack"]["attackers"]:
        if metric(result, f"property_{a}_acc") is None:
            continue
        row: dict[str, Any] = {"attacker": TITLES.get(a, a), "short": SHORT.get(a, a),
                               "accuracy": fmt_with_interval(result, f"property_{a}_acc"),
                               "balanced acc": fmt_with_interval(result, f"property_{a}_bacc"),
                               "AUC (1-vs-rest)": fmt_with_interval(result, f"property_{a}_auc"),
                               "gap to majority": fmt(metric(result, f"property_{a}_gap")),
                               "near chance?": near_chance_text(result, f"property_{a}_acc") or ""}
        for m, name in (("acc", "acc"), ("bacc", "bacc"), ("auc", "auc")):
            row[m] = metric(result, f"property_{a}_{name}")
            iv = interval(result, f"property_{a}_{name}")
            row[f"{m}_lo"], row[f"{m}_hi"] = iv if iv else (None, None)
        rows.append(row)
    return rows


def threat_cards(attackers: list[str]) -> None:
    with st.expander("Threat models: what each attacker sees and knows"):
        lines = []
        for a in attackers:
            t = attack_by_config_name(KIND, a).threat.as_dict()
            lines.append(f"- **{TITLES[a]}** — sees: {t['sees']}; knows: {t['knows']}; "
                         f"goal: {t['goal']}.")
        st.markdown("\n".join(lines))


def headline_section(result) -> None:
    k = int(metric(result, "n_values") or 4)
    chance = metric(result, "chance")
    c = st.columns(4)
    c[0].metric("utility (per-sample test accuracy)", fmt(metric(result, "utility_acc")),
                delta=f"{metric(result, 'utility_acc') - metric(result, 'utility_majority'):+.3f} "
                      "vs majority class", delta_color="off",
                help=f"Majority-class rate {fmt(metric(result, 'utility_majority'))}: a model "
                     "predicting it alone reaches this.")
    c[1].metric("majority-class rate", fmt(metric(result, "utility_majority")))
    for col, who in ((c[2], "in_training"), (c[3], "mlp")):
        v = metric(result, f"property_{who}_acc")
        if v is not None:
            col.metric(f"{SHORT[who]} attack accuracy", fmt(v),
                       delta=f"{v - chance:+.3f} vs chance {chance:.3f}", delta_color="inverse",
                       help=f"95 % interval {fmt_with_interval(result, f'property_{who}_acc')}; "
                            f"chance 1/K = 1/{k}.")


def attack_section(result) -> None:
    rows = attack_rows(result)
    if not rows:
        st.warning("This result has no attack metrics.")
        return
    cols = ["attacker", "accuracy", "balanced acc", "AUC (1-vs-rest)", "gap to majority",
            "near chance?"]
    # a table, not a data grid: its columns wrap at 1280 px instead of scrolling out of the box
    st.table([{c: r[c] for c in cols} for r in rows], hide_index=True, border="horizontal")
    n = int(metric(result, "subsets_test") or 0)
    st.caption(f"Each score with its 95 % interval over n = {n} target subsets (test split, "
               f"mean size {fmt(metric(result, 'subset_size_mean'), 1)} rows). Chance = 1/K = "
               f"{fmt(metric(result, 'chance'))}; the majority bin holds "
               f"{fmt(metric(result, 'property_majority'))} of the targets (the prior's rate: the "
               "bins are sampled equally; the gap is accuracy minus it). A score is called near "
               "chance only when its interval "
               "contains chance. As in the paper's Table 3, the defense fights its own "
               "adversary; the fresh attackers are trained afterwards on shadow subsets.")
    st.plotly_chart(figure("attack_bars_figure", rows, chance=metric(result, "chance"),
                           title="property attacks (95 % intervals)"),
                    width="stretch", key="pr_attack_bars")
    threat_cards([a for a in result.config["attack"]["attackers"]])


@st.fragment
def _bound_live(k: int, h_est: float | None, run_key: str) -> None:
    from core.bounds.property import kary_fano_bound
    from core.bounds.tappfl import fano_accuracy_bound

    hmax = float(np.log2(k))
    left, right = st.columns([1, 1.4])
    with left:
        h = st.slider("What-if H(u | R) (bits)", 0.0, hmax,
                      float(np.clip(h_est if h_est is not None else hmax / 2, 0.0, hmax)),
                      step=0.01, key=f"pr_what_if_h_{run_key}")
        w1, w2 = st.columns(2)
        w1.metric("K-ary form at what-if H", f"{float(kary_fano_bound(h, k)):.3f}")
        w2.metric("tight Fano at what-if H", f"{float(fano_accuracy_bound(h, k)):.3f}")
        st.caption("Both evaluated live by core.bounds.property; the K-ary form is 1 (vacuous) "
                   "for H ≤ 1 bit.")
    hs = tuple(float(x) for x in np.linspace(0.0, hmax, 81))
    right.plotly_chart(figure("lines_figure", hs, {
        "K-ary form 1 − (H − 1)/log₂(K − 1)": tuple(float(v) for v in kary_fano_bound(np.array(hs), k)),
        "tight Fano": tuple(float(v) for v in fano_accuracy_bound(np.array(hs), k)),
        "chance 1/K": tuple(1.0 / k for _ in hs)}, x_title="H(u | R) in bits",
        y_title="max property accuracy", height=320), width="stretch", key="pr_bound_curve")


def bound_section(result) -> None:
    k = int(metric(result, "n_values") or 4)
    h = metric(result, "property_h_bits")
    st.subheader("Leakage bound")
    if h is None:
        st.info("No bound: run at least one trained attacker (its cross-entropy estimates H(u|R)).")
        return
    c = st.columns(4)
    c[0].metric("Ĥ(u | R) (bits)", fmt(h), help=f"H(u) = log₂ {k} = {np.log2(k):.3f} bits for "
                "equal bins; from the lowest attacker cross-entropy "
                f"({TITLES.get(result.info.get('bound_from'), 'n/a')}).")
    c[1].metric(f"K-ary bound (paper's form) {flag_for(result, 'bound_pia_fano')}".strip(),
                fmt(metric(result, "bound_pia_fano")))
    c[2].metric(f"tight Fano bound {flag_for(result, 'bound_pia_fano_exact')}".strip(),
                fmt(metric(result, "bound_pia_fano_exact")))
    c[3].metric(f"measured best attack {flag_for(result, 'property_acc_best')}".strip(),
                fmt(metric(result, "property_acc_best")),
                help=f"{TITLES.get(result.info.get('best_attacker'), 'n/a')}")
    # each caveat once, under the tiles it flags (core.foundation.caveats builds the sentences)
    for cav in for_metrics(result, ["bound_pia_fano", "bound_pia_fano_exact", "property_acc_best"]):
        (st.caption if cav["key"] == "property_bound_estimate" else st.warning)(sentence(cav))
    st.caption(f"{result.info.get('bound_note', '')}.")
    _bound_live(k, h, (result.key or "")[:16])


def tradeoff_section(config: dict[str, Any], result) -> None:
    knob = DEFENSES.get(DEFENSE).knob.for_family(KIND)
    grid, sym = knob.teaching_grid(), knob.symbol
    st.subheader(f"Tradeoff over {sym}")
    cfgs = {g: {**config, "defense": {**config["defense"], knob.field: g}} for g in grid}
    got = {g: peek(c) for g, c in cfgs.items()}
    cur = float(config["defense"][knob.field])
    got[cur] = result
    series = {f"{SHORT[a]} accuracy": f"property_{a}_acc" for a in config["attack"]["attackers"]
              if attack_by_config_name(KIND, a).role != "baseline"}
    # every stored run of these settings (off-grid λ included) and the run just computed
    pts = tradeoff_points(filled(config, knob.field, got, result), kind=KIND,
                          attack_metrics=series)
    missing = [g for g, r in got.items() if r is None]
    start = st.button(f"Run the {sym} sweep ({len(missing)} missing)", key="pr_sweep",
                      disabled=not missing or blocked_reason() is not None,
                      help=blocked_reason())
    run_with_progress({"kind": "sweep", "base": config,
                       "grid": {f"defense.{knob.field}": list(grid)},
                       "seeds": [config.get("seed", 0)], "executor": "serial"},
                      label=f"property {sym} sweep", start=start)
    und = got.get(0.0)
    undefended = None if und is None else (metric(und, "utility_acc"),
                                           metric(und, "property_acc_best"))
    tradeoff_plot(pts, current=cur, undefended=undefended, chance=metric(result, "chance"),
                  symbol=sym, x_title="utility (per-sample test accuracy)",
                  y_title="property attack accuracy", key="pr", page=KIND, config=config)
    if len({p.knob for p in pts}) < 2:
        return
    st.caption(f"One point per stored λ (interval = 95 % of the attack accuracy); the star is the "
               f"current λ, the cross λ = 0 (no defense) with its strongest attack. The "
               f"majority-class utility is {fmt(metric(result, 'utility_majority'))}: a point left "
               "of it predicts no better than the majority class.")


def curves_section(result) -> None:
    c = result.curves
    if "property_train_adversary_acc" not in c:
        return
    xs = tuple(float(i + 1) for i in range(len(c["property_train_adversary_acc"])))
    st.plotly_chart(figure("lines_figure", xs, {
        "in-training adversary accuracy (batches)": tuple(c["property_train_adversary_acc"]),
        "chance 1/K": tuple(float(metric(result, "chance") or 0.0) for _ in xs)},
        x_title="defense epoch", y_title="accuracy", title="The game, epoch by epoch",
        height=300), width="stretch", key="pr_curves")


def show_result(config, result) -> None:
    result_caption(result)
    headline_section(result)
    attack_section(result)
    bound_section(result)
    tradeoff_section(config, result)
    projection_pair(result, key="pr", title="Target subsets: raw feature means vs released "
                                         "aggregates, coloured by property bin",
                    points="target subsets",
                    panels=("raw feature mean of each subset", "released aggregate (same subsets)"),
                    caption="Each point is one target subset: left, the mean of its raw "
                            "features; right, its released aggregate (what the attacker sees). "
                            "Colours ordered by share on the right mean the aggregate still "
                            "carries the property.")
    curves_section(result)


st.title("Property inference")
st.caption("Can an attacker learn a property of a whole data set — the share of women in a "
           "subset of Adult rows, the share of bold digits — from the subset's aggregated "
           "representation? Inf2Guard (λ) trains the encoder against a property adversary "
           "(Algorithm 2); fresh attackers trained afterwards on shadow subsets check what it "
           "really hid.")
run_panel(controls(), kind=KIND, page="property", key="pr", title="Property",
          label=lambda run: f"{DEFENSES.get(DEFENSE).title} on {run.cfg.data.name}",
          show=lambda run: show_result(run.config, run.result),
          idle="No stored result for these settings yet. Press **Run** (digits: a few seconds; "
               "Adult: about 20 s on a CPU). Runs are stored; then run the λ sweep for the "
               "tradeoff.")
