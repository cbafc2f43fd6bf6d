"""Membership: Inf2Guard's defense, DP-SGD and the κ channel against loss, LiRA, RMIA and the
representation attack, with one ROC report per attack and ε audited from below.

``controls()`` turns the widgets into a ``membership`` config (small ``*_ui()`` functions); the
rest draws the stored Result: utility and the train–test gap, the attack table with intervals,
ROC curves (linear and log-log) with the DP region, and the tradeoff over the defense's knob.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from core.config.schema import MembershipAttackSpec, MembershipTrainSpec
from core.foundation.caveats import FEW_FALSE_POSITIVES, REGISTRY

#: the flag of a rate read off too few non-members (core.foundation.caveats)
FEW_LABEL = REGISTRY["tpr_0p1pct_few_negatives"].label
from core.foundation.metric_schema import HEADLINES
from core.foundation.parts import DEFENSES, attack_titles, attacks_for, defenses_for
from core.report.tradeoff import tradeoff_points
from dashboard import state
from dashboard.base.format import fmt, fmt_with_interval, format_value, metric
from dashboard.base.widgets import peek, run_with_progress
from dashboard.components import result_caption, threat_card_lines
from dashboard.components._figures import figure
from dashboard.components.caveats import (
    flag_for,
    flag_rows,
    flagged_caption,
    grey_flagged,
    metric_tile,
    roc_grey_below,
)
from dashboard.components.exposure import exposure_ui
from dashboard.components.inputs import blocked_reason, inputs_ok, number_ui
from dashboard.components.lira_preset import lira_reference_panel
from dashboard.components.part_controls import defense_block_ui
from dashboard.components.run_panel import run_panel
from dashboard.components.tradeoff import filled, tradeoff_plot
from dashboard.sidebar import dataset_label, dataset_rows, require_data

KIND = "membership"
#: test rows embedded (t-SNE) for the release's projection panel
PROJECTION_POINTS = 300
DATASETS = ["mnist5k", "digits", "faces", "adult"]
#: config name -> the attack's one title (core.foundation.parts)
TITLES = attack_titles(KIND)
#: widget keys of the defenses' knobs (returning users and tests rely on them); a defense
#: registered later gets mi_<defense>
KNOB_KEYS = {"inf2guard": "mi_lambda", "dp_sgd": "mi_eps", "channel": "mi_kappa"}


#: the page's defaults, one place (the number boxes read theirs from here); 150 members
#: trained 300 epochs overfit enough that the undefended attack is a visible threat
#: (core.report.teaching's membership default is the same config)
DEFAULTS = {"mi_defense": "none", "mi_lambda": 0.5, "mi_eps": 8.0, "mi_kappa": 80.0,
            "mi_members": 150, "mi_epochs": 300, "mi_shadows": 8, "mi_refs": 2, "mi_targets": 8,
            "mi_attackers": ["loss", "lira_offline", "lira_online", "rmia"]}


def _init_state() -> None:
    for k, v in DEFAULTS.items():
        st.session_state.setdefault(k, v)


def data_ui() -> str:
    rows = {r["name"]: r for r in dataset_rows()}
    names = [n for n in DATASETS if n in rows]
    state.follow_sidebar("mi_dataset", names, "mnist5k")
    name = st.selectbox("Data set", names, key="mi_dataset",
                        format_func=lambda n: dataset_label(rows[n]))
    require_data(name, key="mi_dataset")
    return name


def widget_key(defense: str, field: str) -> str:
    """The widget key of a defense's field: its knob's :data:`KNOB_KEYS` entry (else
    mi_<defense>), any other field mi_<defense>_<field>."""
    knob = DEFENSES.get(defense).knob
    if knob is not None and field == knob.field:
        return KNOB_KEYS.get(defense, f"mi_{defense}")
    return f"mi_{defense}_{field}"


def defense_ui() -> dict[str, Any]:
    """The defense block: every registered defense of the family, its knob and declared
    controls drawn from its part (:mod:`dashboard.components.part_controls`)."""
    names = defenses_for(KIND)
    c1, c2 = st.columns([1, 2])
    kind = c1.selectbox("Defense", names, key="mi_defense",
                        format_func=lambda n: DEFENSES.get(n).title)
    part = DEFENSES.get(kind)
    if part.baseline:
        c2.caption("No defense: the target is trained plainly on its members (the shadow models "
                   "too); the released model is queried for its outputs.")
    elif part.knob is None:
        c2.caption(part.description)
    return defense_block_ui(KIND, kind, key=lambda f: widget_key(kind, f), knob_where=c2)


def attack_ui(defense: str) -> dict[str, Any]:
    # the registered attacks that read what this defense releases (Inf2Guard's r included)
    releases = set(DEFENSES.get(defense).releases_for(KIND))
    ok = [a.key for a in attacks_for(KIND) if a.selectable and releases & set(a.accepts)]
    kept = [a for a in st.session_state.get("mi_attackers", []) if a in ok]
    if kept != st.session_state.get("mi_attackers"):
        st.session_state["mi_attackers"] = kept
    c1, c2, c3, c4, c5, c6 = st.columns([2.4, 0.8, 0.8, 0.8, 0.8, 0.8])
    chosen = c1.multiselect("Attacks", ok, key="mi_attackers", format_func=TITLES.get)
    members = number_ui("Members", key="mi_members", default=DEFAULTS["mi_members"], where=c2,
                        field=(MembershipTrainSpec, "members"),
                        help="The target trains on this many rows; as many non-members are "
                             "scored.")
    epochs = number_ui("Epochs", key="mi_epochs", default=DEFAULTS["mi_epochs"], where=c3,
                       field=(MembershipTrainSpec, "epochs"))
    shadows = number_ui("Shadows", key="mi_shadows", default=DEFAULTS["mi_shadows"], where=c4,
                        field=(MembershipAttackSpec, "shadows"),
                        help="Shadow / reference models, trained with the target's own "
                             "procedure (its defense included) on halves of the pool.")
    refs = number_ui("RMIA refs", key="mi_refs", default=DEFAULTS["mi_refs"], where=c5,
                     field=(MembershipAttackSpec, "rmia_references"))
    targets = number_ui("Targets pooled", key="mi_targets", default=DEFAULTS["mi_targets"], where=c6,
                        field=(MembershipAttackSpec, "targets"),
                        help="Score the target and targets − 1 shadow models (each against "
                             "the others) and pool the scores, as ML Privacy Meter does: "
                             "TPR at 0.1 % FPR needs thousands of non-members.")
    return {"attack": {"attackers": list(chosen), "shadows": shadows,
                       "rmia_references": refs, "targets": targets},
            "train": {"members": members, "epochs": epochs}}


def pre_run_text(config: dict[str, Any], runs: list[tuple[dict, float]] = ()) -> str:
    """The pre-run box, from the config itself: data set, members, shadows, targets pooled,
    and the estimated time (:mod:`core.foundation.costs`, saying what it is based on)."""
    from core.foundation.costs import estimate, format_seconds

    tr, at = config["train"], config["attack"]
    if config.get("target"):
        return (f"No stored audit for these settings yet. Press **Run** ({config['data']['name']}"
                f", a target trained elsewhere: {tr['members']:,} members; privlab trains "
                f"{at['shadows']} shadow models under its recipe). Runs are stored.")
    what = (f"{config['data']['name']}, {tr['members']:,} members, {tr['epochs']} epochs, "
            f"{at['shadows']} shadow models, {at['targets']} target(s) pooled")
    est = estimate(KIND, config, runs)
    when = "" if est is None else f": {format_seconds(est[0])} ({est[1]})"
    return (f"No stored result for these settings yet. Press **Run** ({what}{when}). "
            "Runs are stored.")


def pre_run_info(run) -> None:
    """The pre-run box (:func:`pre_run_text`); without a valid input the line under Run says
    why it is off instead."""
    if inputs_ok():
        st.info(pre_run_text(run.config, stored_timings()))


def stored_timings() -> list[tuple[dict, float]]:
    """(config, seconds) of the stored membership runs of the current engine (the cost fit)."""
    from core.foundation.fingerprint import same_engine
    from dashboard.base.widgets import get_store

    try:
        return [(r.config, r.seconds) for r in get_store().list(kind=KIND, limit=200)
                if r.seconds is not None and same_engine(r.engine_version)]
    except (OSError, ValueError):  # a damaged index: the measured constants instead
        return []


#: the target control's choices: privlab trains the target here, or a registered trained model
TARGETS = {"here": "train here", "trained": "a trained model"}
#: how to register a trained model (the dashboard never registers or reads files itself)
REGISTER_CMD = ("privlab model add-weights NAME --model ARCH --weights FILE --data {data} "
                "--members FILE")


def target_ui(data: str, where: Any) -> dict[str, Any] | None:
    """The target: trained here (None) or a trained model registered from the command line
    for ``data`` (:mod:`core.config.trained_registry`; beyond loopback only the operator's
    ``privlab model add-weights`` registrations), its files re-hashed first: a file changed
    since registration is refused in one line and nothing is shown or served."""
    from core.config import trained_registry as TR
    from dashboard.base import auth

    st.session_state.setdefault("mi_target", "here")
    kind = where.radio("Target", list(TARGETS), key="mi_target", format_func=TARGETS.get,
                       horizontal=True, help="Train the target here (with a defense), or audit "
                       "a model trained elsewhere that the operator registered on the command "
                       "line for this data set.")
    if kind == "here":
        return None
    regs = TR.for_data(data, operator_only=auth.beyond_loopback())
    if not regs:
        where.info(f"No trained model is registered for data {data!r}. Register one on the "
                   f"command line: `{REGISTER_CMD.format(data=data)}`")
        st.stop()
    name = where.selectbox("Trained model", list(regs), key="mi_trained",
                           format_func=lambda n: f"{n}: {regs[n]['model'] or 'scikit-learn (skops)'}"
                                                 f", {regs[n]['members']:,} members")
    why = TR.problem(regs[name])
    if why is not None:
        st.error(why)
        st.stop()
    return regs[name]


def trained_attack_ui(entry: dict[str, Any]) -> dict[str, Any]:
    """The attacks and shadows of an audit of ``entry``: the shadow and reference models
    train here under its registered recipe; members and training are the file's."""
    releases = set(DEFENSES.get("none").releases_for(KIND))
    ok = [a.key for a in attacks_for(KIND) if a.selectable and releases & set(a.accepts)]
    kept = [a for a in st.session_state.get("mi_attackers", []) if a in ok]
    if kept != st.session_state.get("mi_attackers"):
        st.session_state["mi_attackers"] = kept
    c1, c2 = st.columns([4, 1])
    chosen = c1.multiselect("Attacks", ok, key="mi_attackers", format_func=TITLES.get)
    shadows = number_ui("Shadows", key="mi_shadows", default=DEFAULTS["mi_shadows"], where=c2,
                        field=(MembershipAttackSpec, "shadows"),
                        help="Shadow / reference models privlab trains under the trained "
                             "model's registered recipe on halves of the pool.")
    return {"attackers": list(chosen), "shadows": shadows}


def controls() -> dict[str, Any]:
    _init_state()
    s = state.settings()
    top = st.columns([1, 2.5])
    with top[0]:
        name = data_ui()
        trained = target_ui(name, st)
    if trained is not None:
        weights = Path(trained["target"]["weights"]).name
        top[1].caption(f"**Target trained elsewhere**: {trained['name']}, weights `{weights}`. "
                       "privlab loads it and trains only the shadow and reference models. "
                       "Defenses do not apply: the weights carry whatever training they had.")
        from core.config.trained_registry import audit_config

        got = trained_attack_ui(trained)
        # an invalid Shadows box blocks Run (stop_if_invalid) before this config is validated
        shadows = got["shadows"] if got["shadows"] is not None else DEFAULTS["mi_shadows"]
        return {**audit_config(trained, attackers=got["attackers"], shadows=shadows,
                               seed=s.seed),
                "device": s.device, "projection_points": PROJECTION_POINTS}
    with top[1]:
        defense = defense_ui()
    rest = attack_ui(defense["kind"])
    # speed of the default (issue #20): 8 shadows and a 300-point t-SNE (1000 took ~40 % of a
    # cold run) keep the default under 10 s on 2 cores; the lesson still exceeds its intervals
    return {"kind": KIND, "seed": s.seed, "device": s.device, "data": {"name": name},
            "defense": defense, **rest, "projection_points": PROJECTION_POINTS}


# --------------------------------------------------------------------------------------------
# results


def attack_rows(result) -> list[dict[str, str]]:
    """One row per attack; a ``caveat`` column flags (and greys) the rates the run qualifies."""
    rows, names = [], []
    scored = result.info.get("scored", {})
    for a in result.config["attack"]["attackers"]:
        names.append([f"mia_{a}_{s}" for s in ("auc", "adv", "tpr_at_1pct_fpr",
                                                "tpr_at_0p1pct_fpr", "epsilon_lower_bound")])
        n = scored.get(a)
        rows.append({"attack": TITLES.get(a, a),
                     "scored (in / out)": f"{n[0]:,} / {n[1]:,}" if n else "",
                     "AUC": fmt_with_interval(result, f"mia_{a}_auc", 3),
                     "TPR @ 1 % FPR": fmt(metric(result, f"mia_{a}_tpr_at_1pct_fpr"), 3),
                     "TPR @ 0.1 % FPR": fmt(metric(result, f"mia_{a}_tpr_at_0p1pct_fpr"), 3),
                     "advantage": fmt_with_interval(result, f"mia_{a}_adv", 3),
                     "ε lower bound": fmt(metric(result, f"mia_{a}_epsilon_lower_bound"), 2)})
    return flag_rows(rows, result, names)


def roc_section(result) -> None:
    arts = result.artifacts
    curves = tuple((TITLES.get(a, a), tuple(arts[f"roc_{a}_fpr"]), tuple(arts[f"roc_{a}_tpr"]))
                   for a in result.config["attack"]["attackers"] if f"roc_{a}_fpr" in arts)
    region = None
    eps = metric(result, "epsilon_accountant")
    if eps is not None:  # None for ε = ∞ (clipping only): it bounds nothing
        from core.bounds.dp_region import dp_region

        f = np.logspace(-4, 0, 60)
        # the accountant's ε holds at the run's δ
        delta = float((result.config.get("defense") or {}).get("delta") or 1e-5)
        region = (tuple(f), tuple(np.minimum(1.0, dp_region(eps, delta, f))))
    left, right = st.columns(2)
    grey = roc_grey_below(result)
    left.plotly_chart(figure("membership_roc_figure", curves, log=False, dp_region=region,
                             grey_below=grey), width="stretch", key="mi_roc")
    right.plotly_chart(figure("membership_roc_figure", curves, log=True, dp_region=region,
                              grey_below=grey), width="stretch", key="mi_roc_log")
    if grey is not None:
        st.caption(f"⚠ Greyed: FPR below {grey:.2g}, read off fewer than "
                   f"{FEW_FALSE_POSITIVES} false positives (too few non-members scored).")
    if "epsilon_accountant" in result.metrics:
        best = max(metric(result, f"mia_{a}_epsilon_lower_bound") or 0.0
                   for a in result.config["attack"]["attackers"])
        promised = format_value(result.metrics["epsilon_accountant"], 3)
        flagged_caption(st, result, f"ε audit: the accountant promises ε = {promised} "
                        f"({result.info.get('accountant')}); the best attack proves ε ≥ "
                        f"{best:.3g} (Clopper–Pearson). The gap is what DP promises beyond what "
                        "these attacks can show.", "epsilon_accountant")
    if "audit_epsilon_lower" in result.metrics:
        audit = result.info.get("audit") or {}
        norm = (f"; gradient canaries of norm C = {audit['canary_norm']:g}"
                if "canary_norm" in audit else "")
        flagged_caption(st, result, f"One-run audit of this run ({audit.get('kind', '')}"
                        f"{norm}): ε ≥ {result.metrics['audit_epsilon_lower']:.3g} at "
                        f"{result.metrics.get('audit_confidence', float('nan')):.3g} "
                        "confidence.", "audit_epsilon_lower")


def tradeoff_section(config: dict[str, Any], result) -> None:
    kind = config["defense"]["kind"]
    if DEFENSES.get(kind).knob is None:
        return
    knob = DEFENSES.get(kind).knob.for_family(KIND)
    field, grid = knob.field, knob.teaching_grid()
    head = HEADLINES[KIND]
    st.subheader(f"Tradeoff over {knob.symbol}")
    cfgs = {g: {**config, "defense": {**config["defense"], field: g}} for g in grid}
    got = {g: peek(c) for g, c in cfgs.items()}
    cur = float(config["defense"][field])
    got[cur] = result
    missing = [g for g, r in got.items() if r is None]
    start = st.button(f"Run the {knob.symbol} sweep ({len(missing)} missing)",
                      key="mi_sweep", disabled=not missing or blocked_reason() is not None,
                      help=blocked_reason())
    run_with_progress({"kind": "sweep", "base": config,
                       "grid": {f"defense.{field}": list(grid)},
                       "seeds": [config.get("seed", 0)], "executor": "serial"},
                      label="membership sweep", start=start)
    und = peek({**config, "defense": {"kind": "none"}})
    sym = knob.symbol
    left, right = st.columns(2)
    for col, name, title, key in (
            (left, head.attack, "membership AUC (strongest attack)", "mi_tradeoff"),
            (right, "mia_tpr_at_0p1pct_fpr_best", "TPR at 0.1 % FPR (best attack)", "mi_tradeoff_tpr")):
        # every stored run of these settings (off-grid values included), the current one too
        pts = tradeoff_points(filled(config, field, got, result), kind=KIND,
                              attack_metrics={title: name})
        undefended = None if und is None else (metric(und, head.utility), metric(und, name))
        # runs whose number here carries a caveat (too few non-members) are ringed grey
        flagged = tuple((g, flag_for(r, name).removeprefix("⚠ ")) for g, r in got.items()
                        if r is not None and flag_for(r, name))
        tradeoff_plot(pts, current=cur, undefended=undefended,
                      chance=0.5 if name == head.attack else 0.001, symbol=sym, y_title=title,
                      flagged=flagged, key=key, page=KIND if col is left else None, config=config, where=col)
    if missing:
        st.caption(f"{len(missing)} of {len(grid)} grid points not run yet; the undefended point "
                   "(black cross) appears once the 'none' defense has been run with these settings.")


def audit_section(config: dict[str, Any]) -> None:
    """Claimed (accountant) against audited ε over DP-SGD's target-ε grid and its ε = ∞ point
    (Steinke, Nasr & Jagielski 2023: one training run per point, white-box canaries)."""
    from dashboard.components.audit_plot import (
        AUDIT_CONFIDENCE,
        audit_caption,
        audit_configs,
        audit_figure,
        audit_points,
    )

    st.subheader("Claimed vs audited ε (one-run audit)")
    st.session_state.setdefault("mi_audit_canaries", 1000)
    canaries = st.select_slider("Canaries", [100, 250, 500, 1000, 2000], key="mi_audit_canaries",
                                help="Gradient canaries, each included with probability ½; "
                                     "more canaries can prove a larger ε.")
    cfgs = audit_configs(config, canaries)
    got = {t: peek(c) for t, c in cfgs.items()}
    missing = [t for t, r in got.items() if r is None]
    start = st.button(f"Audit DP-SGD over its ε grid ({len(missing)} missing)", key="mi_audit",
                      disabled=not missing or blocked_reason() is not None,
                      help=blocked_reason())
    finite = {t: c for t, c in cfgs.items() if np.isfinite(t)}
    base = next(iter(finite.values()))
    got_sweep = run_with_progress(
        {"kind": "sweep", "base": base,
         "grid": {"defense.target_epsilon": sorted(finite)}, "seeds": [config.get("seed", 0)],
         "executor": "serial"}, label="membership audit sweep", start=start)
    got_inf = run_with_progress(cfgs[float("inf")], label="audit at ε = ∞", start=start)
    if got_sweep is not None or got_inf is not None:
        got = {t: peek(c) for t, c in cfgs.items()}
    pts = audit_points(got)
    tests = len(cfgs)
    if pts:
        st.plotly_chart(audit_figure(pts, confidence=AUDIT_CONFIDENCE, tests=tests,
                                     canaries=int(canaries)), width="stretch", key="mi_audit_fig")
    st.caption(audit_caption(pts, confidence=AUDIT_CONFIDENCE, tests=tests) + " Each point trains "
               "DP-SGD once more with the canaries (the page's data and training; only the loss "
               "attack, so no shadow model is trained); white-box canaries of norm C are added "
               "to the summed clipped gradient before the noise.")


def projection_section(result) -> None:
    arts = result.artifacts
    if "proj_release" not in arts:
        return
    what = ("Inf2Guard's representations r" if result.info.get("projection_release") == "r"
            else "the released model's outputs (log-probabilities)")
    left, right = st.columns(2)
    left.plotly_chart(figure("scatter_figure", arts["proj_release"], arts["proj_member"],
                             ["non-member", "member"], title="coloured by membership",
                             legend_title="membership"), width="stretch", key="mi_proj_member")
    labels = arts["proj_label"]
    right.plotly_chart(figure("scatter_figure", arts["proj_release"], labels,
                              [str(v) for v in range(int(labels.max()) + 1)],
                              title="the same points coloured by class", legend_title="class"),
                       width="stretch", key="mi_proj_class")
    st.caption(f"t-SNE of {what} for {len(arts['proj_member'])} pool rows. Classes separate; "
               "if members and non-members mixed within each class cluster, this release "
               "hides membership from an attacker that sees only it (LiRA reads the loss, "
               "which needs the label as well).")


def trained_elsewhere_note(result) -> None:
    """A target trained elsewhere said plainly above its numbers (the run's own note)."""
    from core.runs.trained_target import trained_elsewhere_text

    text = trained_elsewhere_text(result)
    if text is not None:
        st.info(text)


def show_result(config, result) -> None:
    trained_elsewhere_note(result)
    result_caption(result)
    c = st.columns(4)
    c[0].metric("utility (test accuracy)", fmt(metric(result, "utility_acc"), 3),
                help=f"majority class {fmt(metric(result, 'utility_majority'), 3)}")
    c[1].metric("train–test gap", fmt(metric(result, "train_test_gap"), 3))
    c[2].metric("strongest AUC", fmt(metric(result, "mia_auc_best"), 3))
    metric_tile(c[3], result, "best TPR @ 0.1 % FPR",
                fmt(metric(result, "mia_tpr_at_0p1pct_fpr_best"), 3), "mia_tpr_at_0p1pct_fpr_best")
    rows = attack_rows(result)
    # a table, not a data grid: its eight columns wrap at 1280 px instead of scrolling the
    # last ones (and their headers) out of the box
    st.table(grey_flagged(rows, {"TPR @ 0.1 % FPR": [FEW_LABEL]}), hide_index=True,
             border="horizontal")
    st.caption(f"The target trained on {int(metric(result, 'members') or 0)} members; "
               f"{int(metric(result, 'nonmembers') or 0)} non-members. 'scored' counts the "
               "members / non-members each attack was scored on (pooled over target models "
               "where the table says so). As with TAPPFL, "
               "a defense can fool the adversary it trained against while LiRA or RMIA still "
               "read membership: compare the rows.")
    if metric(result, "bound_mia_exact") is not None:
        flagged_caption(st, result, f"Inf2Guard Theorem 1 at H(u|r) ≈ {fmt(metric(result, 'h_u_given_r_bits'), 3)} "
                   f"bits (the representation attacker's cross-entropy: an estimate, so the bound "
                   f"is optimistic): membership accuracy ≤ "
                   f"{fmt(metric(result, 'bound_mia_exact'), 3)} (tight form 1 − H₂⁻¹(H)), "
                   f"≤ {fmt(metric(result, 'bound_mia_paper'), 3)} (paper form). The "
                   f"representation attack measured "
                   f"{fmt(metric(result, 'mia_representation_bacc'), 3)} (balanced accuracy).",
                        "bound_mia_exact")
    with st.expander("Threat models"):
        st.markdown("\n".join(threat_card_lines(
            {f"mia_{a}": TITLES.get(a, a) for a in result.config["attack"]["attackers"]})))
    roc_section(result)
    exposure_ui(result, key="mi_exposure")
    projection_section(result)
    if config.get("target"):  # no defense knob or DP-SGD audit for weights trained elsewhere
        return
    tradeoff_section(config, result)
    audit_section(config)


st.title("Membership inference")
st.caption("Can an attacker tell whether a record was in the training set? Loss and confidence "
           "thresholds, LiRA (shadow models trained the target's way) and RMIA (reference "
           "models against population samples) attack a model trained under Inf2Guard (λ), "
           "DP-SGD (z, ε from the accountant) or the κ channel. The target can also be a "
           "model trained elsewhere that the operator registered on the command line "
           "(`privlab model add-weights`).")
lira_reference_panel()
run_panel(controls(), kind=KIND, page="membership", key="mi", title="Membership",
          label=lambda run: (f"trained model on {run.cfg.data.name}" if run.cfg.target
                             else f"{DEFENSES.get(run.cfg.defense.kind).title} on "
                                  f"{run.cfg.data.name}"),
          show=lambda run: show_result(run.config, run.result),
          idle=pre_run_info)
