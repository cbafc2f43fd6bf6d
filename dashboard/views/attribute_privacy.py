"""Attribute privacy in federated learning: TAPPFL against DP-Gaussian, DP-Laplace and pruning.

``controls()`` turns the widgets into a config mapping (small ``*_ui()`` functions, each
returning its values); the rest is component calls on the stored ``attribute_privacy`` Result.
The defenses, their knobs and the attackers come from :mod:`core.foundation.parts`; the strongest
attacker, Theorem 1's threshold and the nearest cached knob value come from the Result and
:mod:`core.report.tradeoff`. A λ sweep stores one Result per grid point, so moving the λ slider
afterwards shows the nearest cached point at once.
"""

from __future__ import annotations

import typing
from typing import Any

import streamlit as st

from core.config.schema import AttributePrivacyConfig, DataSpec, FedAvgSpec
from core.foundation.metric_schema import HEADLINES
from core.foundation.metric_schema import get as metric_spec
from core.foundation.parts import (
    DEFENSES,
    attack_by_config_name,
    attack_titles,
    attacks_for,
    baseline_for,
    config_names,
    is_baseline,
)
from core.report.tradeoff import nearest_point, tradeoff_points
from dashboard import state
from dashboard.base.format import metric
from dashboard.base.widgets import peek, run_with_progress
from dashboard.components import (
    attack_table,
    bounds_panel,
    defense_panel,
    deferred,
    projection_pair,
    result_caption,
    round_curves,
    tradeoff_plot,
    utility_panel,
)
from dashboard.components.exposure import exposure_ui
from dashboard.components.inputs import blocked_reason, number_ui, stop_if_invalid
from dashboard.components.part_controls import controls_ui, knob_control
from dashboard.components.run_panel import run_panel
from dashboard.components.tradeoff import filled
from dashboard.sidebar import dataset_label, dataset_rows, require_data
from dashboard.tappfl_settings import (
    DEFAULT_ATTRIBUTE,
    WIDGETS,
    preset_config,
    preset_widgets,
    with_defense,
    with_knob,
)
from dashboard.tappfl_settings import build_config as build_tappfl_config

KIND = "attribute_privacy"
DATASETS = ["synthetic", "adult", "digits", "mnist5k"]
#: widget keys of the defense blocks' fields (tests and returning users rely on them)
FIELD_KEYS = {"tradeoff_lambda": "ap_lambda", "epsilon": "ap_eps", "rate": "ap_prune",
              "delta": "ap_delta", "clip_norm": "ap_clip", "target": "ap_prune_target"}
SHORT = {"in_training": "in-training Ψ", "logreg": "fresh logistic", "mlp": "fresh MLP",
         "prior": "prior", "raw_logreg": "raw x<br>logistic", "raw_mlp": "raw x<br>MLP"}


def defense_names() -> list[str]:
    """The registered defenses of this page's family, in registration order."""
    return [n for n, d in DEFENSES.items() if KIND in d.families]


def block_models() -> dict[str, Any]:
    """Defense kind -> its config block model (fields, defaults, ranges)."""
    ann = AttributePrivacyConfig.model_fields["defense"].annotation
    return {m.model_fields["kind"].default: m for m in typing.get_args(ann)}


def attacker_titles() -> dict[str, str]:
    """Table rows: every attack of the family, then each fresh one again on raw x."""
    out = attack_titles(KIND)
    out.update({f"raw_{a.key}": f"raw x · {a.title}" for a in attacks_for(KIND)
                if a.fresh and "raw" in a.accepts})
    return out


def field_key(defense: str, field: str) -> str:
    return FIELD_KEYS.get(field, f"ap_{defense}_{field}")


# --------------------------------------------------------------------------------------------
# controls


def _apply_preset() -> None:
    preset = st.session_state.get("ap_preset")
    if preset is None:  # the control lost its value (a run interrupted mid-draw): keep the widgets
        st.session_state["ap_preset"] = "quick"
        return
    st.session_state.update(preset_widgets(preset))


def _init_state() -> None:
    ss = st.session_state
    if ss.get("ap_preset") is None:
        ss["ap_preset"] = "quick"
    for k, v in preset_widgets(ss["ap_preset"]).items():
        ss.setdefault(k, v)
    ss.setdefault("ap_defense", "tappfl")
    ss.setdefault("ap_partition", AttributePrivacyConfig().fl.partition)
    ss.setdefault("ap_attackers", list(preset_config(ss["ap_preset"]).attack.attackers))
    for kind, model in block_models().items():
        for field, info in model.model_fields.items():
            if field != "kind":
                ss.setdefault(field_key(kind, field), info.default)


def data_ui() -> tuple[str, str]:
    """Data set and private attribute (the data set follows the sidebar)."""
    rows = {r["name"]: r for r in dataset_rows()}
    # the built-in sets this page suits, plus every set a user registered (privlab data add)
    names = DATASETS + [n for n, r in rows.items() if r.get("source") == "user"]
    state.follow_sidebar("ap_dataset", names, "synthetic")
    c1, c2 = st.columns([1.2, 1])
    name = c1.selectbox("Data set", names, key="ap_dataset",
                        format_func=lambda n: dataset_label(rows[n]))
    if name in DEFAULT_ATTRIBUTE:
        st.session_state.setdefault(f"ap_attr_{name}", DEFAULT_ATTRIBUTE[name])
    attr = c2.selectbox("Private attribute", list(rows[name]["attributes"]), key=f"ap_attr_{name}")
    require_data(name, key="ap_dataset")
    return name, attr


def defense_ui() -> str:
    """The defense (registered parts of this family) and the preset."""
    c3, c4 = st.columns([1.3, 1])
    defense = c3.selectbox("Defense", defense_names(), key="ap_defense",
                           format_func=lambda n: DEFENSES.get(n).title)
    c4.segmented_control("Preset", ["quick", "paper"], key="ap_preset", on_change=_apply_preset,
                         required=True,
                         help="The engine's presets (core.defenses.tappfl): quick = sized for a "
                              "laptop CPU; paper = TAPPFL's setting (100 devices, 10% per round, "
                              "20 rounds, 10 local epochs).")
    return defense


def federation_ui() -> None:
    f1, f2, f3, f4, f5 = st.columns(5)
    quick = preset_widgets("quick")
    number_ui("Devices", key="ap_devices", default=quick["ap_devices"], where=f1,
              field=(FedAvgSpec, "num_devices"))
    number_ui("Rounds", key="ap_rounds", default=quick["ap_rounds"], where=f2,
              field=(FedAvgSpec, "rounds"))
    number_ui("Fraction per round", key="ap_fraction", default=quick["ap_fraction"], where=f3,
              field=(FedAvgSpec, "fraction_fit"))
    number_ui("Local epochs", key="ap_epochs", default=quick["ap_epochs"], where=f4,
              field=(FedAvgSpec, "local_epochs"))
    number_ui("Adversary steps", key="ap_adv_steps", default=quick["ap_adv_steps"], where=f5,
              field=(AttributePrivacyConfig, "adversary_steps"),
              help="Attribute-adversary (Ψ) steps per encoder (Θ) step.")


def defense_knob_ui(defense: str) -> dict[str, Any]:
    """The defense's knob (:func:`dashboard.components.knob.knob_ui`, from its part):
    ``{field: value}``, empty for a defense without a knob."""
    part = DEFENSES.get(defense)
    if part.knob is None:
        st.caption(f"{part.title}: no privacy knob. {part.description}")
        return {}
    return knob_control(KIND, defense, key=lambda f: field_key(defense, f))


def params_ui(defense: str) -> dict[str, Any]:
    """The defense block's other fields its part declares for this page
    (:attr:`core.foundation.parts.PageSpec.controls`), in a row of columns."""
    return controls_ui(KIND, defense, key=lambda f: field_key(defense, f))


def attackers_ui(defense: str) -> tuple[str, ...]:
    """Fresh attackers that accept the defense's release; the others named as not applicable."""
    release = DEFENSES.get(defense).release_for(KIND)
    titles = attack_titles(KIND)
    fresh = list(config_names(KIND))
    ok = [n for n in fresh if release in attack_by_config_name(KIND, n).accepts]
    ss = st.session_state
    kept = [a for a in ss.get("ap_attackers", []) if a in ok]
    if kept != ss.get("ap_attackers"):
        ss["ap_attackers"] = kept
    chosen = st.multiselect("Fresh attackers (trained after the defense on the released r)", ok,
                            key="ap_attackers", format_func=titles.get,
                            help="Each also runs on raw x (the undefended reference).")
    always = [a.title for a in attacks_for(KIND) if not a.selectable and release in a.accepts]
    st.caption("Always scored: " + ", ".join(always) + ".")
    not_ok = [titles[n] for n in fresh if n not in ok]
    if not_ok:
        st.caption(f"Not applicable to {release} releases: {', '.join(not_ok)}.")
    return tuple(chosen)


def advanced_ui() -> None:
    with st.expander("Advanced"):
        a1, a2, a3, a4, a5, a6 = st.columns(6)
        quick = preset_widgets("quick")
        number_ui("Local batch size", key="ap_batch", default=quick["ap_batch"], where=a1,
                  field=(FedAvgSpec, "batch_size"))
        number_ui("Learning rate", key="ap_lr", default=quick["ap_lr"], where=a2,
                  field=(FedAvgSpec, "lr"))
        a3.selectbox("Partition", ["iid", "dirichlet", "attribute"], key="ap_partition")
        number_ui("Row cap", key="ap_max_samples", default=quick["ap_max_samples"], where=a4,
                  field=(DataSpec, "max_samples"), zero="all rows",
                  help="Seeded, stratified subsample of the data set (speed).")
        number_ui("Projection points (0 = none)", key="ap_proj_points",
                  default=quick["ap_proj_points"], where=a5,
                  field=(AttributePrivacyConfig, "projection_points"),
                  help="Test rows embedded (t-SNE) for the raw vs learned plot.")
        number_ui("Adversary lr ×", key="ap_adv_lr", default=quick["ap_adv_lr"], where=a6,
                  field=(AttributePrivacyConfig, "adversary_lr_scale"),
                  help="The adversary Ψ's learning rate as a multiple of the encoder's "
                       "(TAPPFL Algorithm 1's lr1 / lr3). A stronger in-training adversary "
                       "pushes the encoder harder to remove u.")


def preset_edits_ui() -> None:
    preset = st.session_state["ap_preset"]
    edited = [WIDGETS[k] for k, v in preset_widgets(preset).items() if st.session_state.get(k) != v]
    if edited:
        st.caption(f"Edited from the {preset} preset: {', '.join(edited)}.")


def controls() -> dict[str, Any]:
    """Every control of the page -> the config mapping (validated by the caller)."""
    _init_state()
    s = state.settings()
    top = st.columns([2.2, 2.3])
    with top[0]:
        name, attr = data_ui()
    with top[1]:
        defense = defense_ui()
    federation_ui()
    part = DEFENSES.get(defense)
    k1, k2 = st.columns([1, 1])
    with k1:
        block = {**defense_knob_ui(defense), **params_ui(defense)}
        st.caption(part.description + (f" Accounting: {part.accounting}." if part.accounting
                                       else ""))
    with k2:
        attackers = attackers_ui(defense)
    advanced_ui()
    preset_edits_ui()
    stop_if_invalid(key="ap_run")  # before a config is built from an empty or invalid box
    ss = st.session_state
    return build_tappfl_config(
        preset=ss["ap_preset"], dataset=name, attribute=attr, seed=s.seed, device=s.device,
        defense=defense, lam=float(block.get("tradeoff_lambda", 0.0)),
        values={k: ss[k] for k in WIDGETS}, partition=ss["ap_partition"],
        attackers=attackers, params=block)


# --------------------------------------------------------------------------------------------
# results


def sweep_config(config: dict[str, Any], field: str, grid: tuple[float, ...]) -> dict[str, Any]:
    """The knob's sweep (kind sweep, core.config.sweeps) over the page's config: serial, since the
    dashboard's job runs it in a background thread; each point is stored under its own key."""
    return {"kind": "sweep", "base": config, "grid": {f"defense.{field}": [float(g) for g in grid]},
            "seeds": [config.get("seed", 0)], "executor": "serial"}


def undefended_point(result) -> tuple[float, float] | None:
    head = HEADLINES[KIND]
    u, a = metric(result, head.utility), metric(result, head.attack)
    return None if u is None or a is None else (u, a)


def tradeoff_section(config: dict[str, Any], result, grid_results: dict[float, Any],
                     shown: float | None) -> None:
    defense = config["defense"]["kind"]
    knob = DEFENSES.get(defense).knob
    head = HEADLINES[KIND]
    st.subheader(f"{knob.symbol} tradeoff" if knob else "Tradeoff")
    by_knob = {g: r for g, r in grid_results.items() if r is not None}
    if knob is not None and shown is not None:
        by_knob[shown] = result
    if knob is not None:  # every stored run of these settings, off-grid ones included
        by_knob = filled(config, knob.field, by_knob, result)
    points = tradeoff_points(by_knob, kind=KIND, attack_metrics={
        "strongest attacker": head.attack, "in-training adversary Ψ": "attack_in_training_auc"})
    plot_box = st.container()
    if is_baseline(defense):
        undefended = undefended_point(result)
    else:
        none_cfg = with_defense(config, {"kind": baseline_for(KIND)})
        r0 = peek(none_cfg)
        if r0 is None:
            slot = st.empty()
            clicked = slot.button("Run the undefended point", key="ap_run_undefended",
                                  disabled=blocked_reason() is not None,
                                  help=blocked_reason() or "The same settings with defense "
                                       "none: the point every defense is compared with.")
            r0 = run_with_progress(none_cfg, label="undefended (no defense)", start=clicked,
                                   slot="ap_undefended")
            if r0 is not None:
                slot.empty()
        undefended = undefended_point(r0) if r0 is not None else None
    with plot_box:
        tradeoff_plot(points, current=shown, undefended=undefended,
                      chance=metric_spec(head.attack).chance, key="ap",
                      symbol=knob.symbol if knob else "", y_title="attack AUC",
                      page=KIND, config=config)
    st.caption("Utility on x, attack AUC on y, with 95 % intervals. The strongest attacker "
               "is the engine's pick among the attackers on the release (by AUC); the "
               "in-training adversary is what TAPPFL optimises against.")
    if knob is not None:
        missing = [g for g in knob.for_family(KIND).teaching_grid() if grid_results.get(g) is None]
        if missing:
            st.caption(f"Not cached yet: {knob.symbol} = " + ", ".join(f"{g:g}" for g in missing)
                       + f". **Run {knob.symbol} sweep** computes them.")


def show_result(config: dict[str, Any], result, grid_results: dict[float, Any],
                shown: float | None) -> None:
    result_caption(result)
    st.subheader("Utility")
    utility_panel(result)

    st.subheader("Attacks on the private attribute")
    attack_table(result, attackers=attacker_titles(), key="ap", short=SHORT)
    st.caption("Why can a fresh attacker beat the in-training adversary? The encoder is trained "
               "to fool the adversary Ψ it trains against; a fresh non-linear attacker, trained "
               "afterwards on the frozen representations, can still recover what Ψ no longer "
               "sees. That gap is a finding about the defense, not a bug.")

    st.subheader("Bounds (TAPPFL Theorems 1 and 2)")
    bounds_panel(result, key="ap")
    defense_panel(result)
    exposure_ui(result, key="ap_exposure")

    tradeoff_section(config, result, grid_results, shown)
    # secondary panels: computed, sent and drawn only when opened (light pages on shared servers)
    if result.curves.get("round") and (box := deferred(
            "Per-round curves (losses, utility and attack)", key="ap_show_curves",
            icon=":material/show_chart:")):
        with box:
            round_curves(result, key="ap", title=None)
    if "proj_raw" in result.artifacts and (box := deferred(
            "Raw data vs learned representations (projection of the test rows)",
            key="ap_show_projections", icon=":material/scatter_plot:")):
        with box:
            projection_pair(result, key="ap", title=None)


# --------------------------------------------------------------------------------------------
# page (the run section: dashboard.components.run_panel, with these hooks)


def knob_grid(cfg) -> tuple[Any, tuple[float, ...] | None, float | None]:
    """(the defense's knob, its teaching grid, the page's value of it); (None, None, None)
    for a defense without a knob."""
    knob = DEFENSES.get(cfg.defense.kind).knob
    if knob is None:
        return None, None, None
    return knob, knob.for_family(KIND).teaching_grid(), float(getattr(cfg.defense, knob.field))


def run_label(run) -> str:
    knob, _, value = knob_grid(run.cfg)
    return (f"{DEFENSES.get(run.cfg.defense.kind).title} on {run.cfg.data.name}/"
            f"{run.cfg.data.private_attribute}" + (f", {knob.symbol}={value:g}" if knob else ""))


def sweep_button(row, run) -> bool:
    """The knob's sweep button beside Run; True when clicked."""
    knob, grid, _ = knob_grid(run.cfg)
    blocked = blocked_reason()  # missing data: every job button is off like Run, same message
    return row.button(
        f"Run {knob.symbol if knob else 'the'} sweep", key="ap_sweep",
        disabled=grid is None or blocked is not None,
        help=blocked or (None if grid is None else f"Precompute {knob.symbol} ∈ {{"
                         + ", ".join(f"{g:g}" for g in grid) + "} with the other settings as "
                         "they are; each point is stored."))


def sweep_job(run) -> None:
    knob, grid, _ = knob_grid(run.cfg)
    if grid:
        run_with_progress(sweep_config(run.config, knob.field, grid),
                          label=f"{knob.symbol} sweep", start=bool(run.extra))


def grid_results(run) -> dict[float, Any]:
    """Knob value -> the stored Result of each teaching-grid point (None: not stored)."""
    knob, grid, _ = knob_grid(run.cfg)
    return {g: peek(with_knob(run.config, knob.field, g)) for g in grid} if grid else {}


def shown_value(run) -> float | None:
    """The knob value of the Result shown (the page's own, or the nearest stored grid point)."""
    knob, _, value = knob_grid(run.cfg)
    if knob is None or run.result is None:
        return value
    return float((run.result.config or {}).get("defense", {}).get(knob.field, value))


def nearest_result(run):
    """No run for the page's knob value yet: the nearest stored grid point, said so."""
    knob, grid, value = knob_grid(run.cfg)
    if not grid:
        return None
    got = grid_results(run)
    near = nearest_point([g for g, r in got.items() if r is not None], value)
    if near is None:
        return None
    st.info(f"No run for {knob.symbol} = {value:g} yet: showing the nearest cached grid "
            f"point {knob.symbol} = {near:g}. Press **Run** to compute "
            f"{knob.symbol} = {value:g}.")
    return got[near]


def idle_text(run) -> None:
    knob = knob_grid(run.cfg)[0]
    st.info("No stored result for these settings yet. Press **Run** (or **Run "
            f"{knob.symbol if knob else 'the'} sweep** for the tradeoff). Runs are stored: the "
            "same settings show at once next time.")


st.title("Attribute privacy in federated learning")
st.caption("TAPPFL trains each device's encoder with −λ·CE(adversary) − (1−λ)·I_JSD(x; r | u) "
           "and federates it with FedAvg; baselines perturb or prune the uploads instead. "
           "λ here is TAPPFL's privacy weight (not FIL's regulariser).")
run_panel(controls(), kind=KIND, page="attribute_privacy", key="ap", title="Attribute privacy",
          label=run_label, buttons=sweep_button, jobs=sweep_job, fallback=nearest_result,
          show=lambda run: show_result(run.config, run.result, grid_results(run),
                                       shown_value(run)),
          idle=idle_text)
