"""Compare: every defense that applies to an attack family on one utility–privacy plane.

``controls()`` turns the widgets into a :class:`core.runs.compare.ComparisonSpec` (a preset, or a
family, data set, utility and privacy metric, defenses and their knob grids, seeds); the
engine (:mod:`core.runs.compare`) builds one sweep per defense; a comparison whose points are all
stored is read at once, otherwise ``run_comparison`` runs as one job of the shared queue
(progress, cancel) and submits the missing points to the process's local pool (started in the
background when the server starts: :func:`core.runs.pool.prewarm_in_background`), storing
each as it finishes. The comparison is drawn: one curve per defense with seeds as error bars, the Pareto front, chance
and the no-defense point, a slider that scrubs the cached grid, the equal-privacy table, and
exports (standalone HTML figure, CSV table). Defenses that do not apply are listed with the
registry's reason.
"""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from core.config.schema import cache_key, parse_config
from core.foundation import metric_schema as S
from core.foundation.parts import DEFENSES, is_baseline
from core.report.advisor import Advice
from core.runs import compare as C
from core.runs.experiments import RUNNERS
from dashboard import state
from dashboard.base.format import display_name
from dashboard.base.widgets import get_store, run_job_with_progress, running_jobs_panel
from dashboard.components.advisor import advice_sections, advisor_ui, highlights, last_advice
from dashboard.components.bundle_button import bundle_button
from dashboard.components.compare_plot import (
    comparison_figure,
    figure_html,
    points_frame,
    table_frame,
)
from dashboard.components.exposure import overlap_ui
from dashboard.components.inputs import inputs_ok, report_problem
from dashboard.components.knob import knob_help, knob_label
from dashboard.components.lesson import compare_lesson_panel
from dashboard.components.part_controls import architecture_ui
from dashboard.components.report_button import report_button
from dashboard.sidebar import require_data


def _family_title(family: str) -> str:
    """An attack family by its registered title (its name is an identifier)."""
    from core.foundation.parts import FAMILIES

    return FAMILIES.get(family).title if family in FAMILIES else family


def _cell(value: float) -> float | str:
    """A scrub-table cell: the seed mean to 4 digits, or "not reported" where the defense does
    not report the metric (a κ channel's capacity on a DP-SGD point: NaN in the means)."""
    import math

    v = float(value)
    if math.isnan(v):
        return "not reported"
    return round(v, 4) if math.isfinite(v) else ("∞" if v > 0 else "−∞")

CUSTOM = "custom"
TEACHING = next(iter(C.PRESETS))


def families() -> list[str]:
    """Kinds with a runner, a headline and at least one registered defense besides none."""
    fams = {f for d in DEFENSES.values() for f in d.families}
    return [f for f in sorted(fams) if f in RUNNERS and f in S.HEADLINES
            and any(not is_baseline(n) for n in C.applicable_defenses(f))]


#: widget keys of the registered fixed points' checkboxes (returning users and tests rely on
#: them); one not listed gets cmp_fixed_<defense>_<i>
FIXED_KEYS = {("dp_sgd", 0): "cmp_dpsgd_inf"}


def fixed_point_key(defense: str, i: int) -> str:
    return FIXED_KEYS.get((defense, i), f"cmp_fixed_{defense}_{i}")


def fixed_points() -> dict[C.DefenseSpec, str]:
    """Every registered fixed point (:class:`core.foundation.parts.FixedPoint`) as a spec -> its
    checkbox's key."""
    return {spec: fixed_point_key(n, i) for n in DEFENSES.names()
            for i, spec in enumerate(C.fixed_point_specs(n))}


def option_of(d: C.DefenseSpec) -> str:
    """``dp_sgd`` or ``channel:white`` (a defense and the value of its variant field)."""
    field = DEFENSES.get(d.defense).page.variants
    return d.defense + "".join(f":{v}" for f, v in d.params if f == field)


def spec_of_option(family: str, opt: str, grid: tuple[float, ...] | None) -> C.DefenseSpec:
    name, *vals = opt.split(":")
    field = DEFENSES.get(name).page.variants
    return C.DefenseSpec(name, tuple((field, v) for v in vals[:1] if field), grid)


def defense_options(family: str) -> list[str]:
    """Every applicable defense; a defense that registers a ``variants`` field (the κ
    channel's Natural / White / Personalized / Laplace, Inf2Guard's learned or fixed noise)
    as one option per value, since each is a defense of its own."""
    out = []
    for n in C.applicable_defenses(family):
        if is_baseline(n):
            continue
        field = DEFENSES.get(n).page.variants
        variants = C.block_variants(family, n).get(field) if field else None
        if variants:
            out.extend(f"{n}:{v}" for v in variants)
        else:
            out.append(n)
    return out


def option_label(opt: str) -> str:
    name, *vals = opt.split(":")
    return DEFENSES.get(name).title + "".join(f" · {v}" for v in vals)


def apply_preset(name: str) -> None:
    """Put a preset's choices into the widgets' state (before they are drawn)."""
    spec = C.PRESETS[name]()
    st.session_state["cmp_family"] = spec.family
    st.session_state["cmp_data"] = spec.data
    st.session_state["cmp_utility"] = spec.utility
    st.session_state["cmp_privacy"] = spec.privacy
    fixed = fixed_points()
    swept = [d for d in spec.defenses if d not in fixed]
    st.session_state["cmp_defenses"] = [option_of(d) for d in swept]
    for point, key in fixed.items():
        st.session_state[key] = point in spec.defenses
    for d in swept:
        st.session_state[f"cmp_grid_{option_of(d)}"] = ", ".join(f"{g:g}" for g in d.grid or ())
    st.session_state["cmp_seeds"] = len(spec.seeds)
    st.session_state["_cmp_applied"] = name


def _grid_specs(family: str, chosen: list[str]) -> tuple[list[C.DefenseSpec], bool]:
    """One knob-grid box per chosen defense option (a knobless one is its single point):
    the specs of the boxes that parse, and whether any box was refused."""
    specs: list[C.DefenseSpec] = []
    bad = False
    if not chosen:
        return specs, bad
    cols = st.columns(min(len(chosen), 4))
    for i, opt in enumerate(chosen):
        part = DEFENSES.get(opt.split(":")[0])
        if part.knob is None:
            specs.append(spec_of_option(family, opt, None))
            continue
        key = f"cmp_grid_{opt}"
        st.session_state.setdefault(key, ", ".join(f"{g:g}" for g in C.default_grid(part)))
        col = cols[i % len(cols)]
        label = f"{option_label(opt)}: {part.knob.symbol} grid"
        text = col.text_input(label, key=key,
                              help=f"{knob_label(part.knob)}. {knob_help(part, part.knob)}")
        # every box and the seeds slider are drawn whatever this box holds: a widget left
        # undrawn in a run loses its state (it came back reset)
        grid, message = C.parse_grid(str(text), label, part.knob)
        report_problem(key, message)
        if message is not None:
            col.error(message, icon=":material/error:")
            bad = True
        else:
            specs.append(spec_of_option(family, opt, grid))
    return specs, bad


def _fixed_point_choices(chosen: list[str]) -> list[C.DefenseSpec]:
    """A checkbox per fixed point of each chosen defense; the specs of those ticked."""
    specs: list[C.DefenseSpec] = []
    for name in dict.fromkeys(o.split(":")[0] for o in chosen):  # the parts' fixed points
        for i, (point, spec) in enumerate(zip(DEFENSES.get(name).page.fixed_points,
                                              C.fixed_point_specs(name), strict=True)):
            if st.checkbox(point.question or f"{DEFENSES.get(name).title}: add {point.label}",
                           key=fixed_point_key(name, i), help=point.help or None):
                specs.append(spec)
    return specs


def _refusals(family: str) -> None:
    """The registered defenses that do not apply to ``family``, each with its reason."""
    refused_names = [n for n in DEFENSES.names() if C.refusal(family, n) is not None]
    if refused_names:
        with st.expander(f"{len(refused_names)} registered defenses do not apply to "
                         f"{_family_title(family)}"):
            for n in refused_names:
                st.caption(f"**{DEFENSES.get(n).title}**: {C.refusal(family, n)}")


def controls() -> C.ComparisonSpec | None:
    st.session_state.setdefault("cmp_preset", TEACHING)
    preset = st.selectbox("Comparison", [*C.PRESETS, CUSTOM], key="cmp_preset",
                          help="A preset fills every choice below; change any of them to make "
                               "it your own (the preset's training sizes are kept).")
    if preset != CUSTOM and st.session_state.get("_cmp_applied") != preset:
        apply_preset(preset)
    base_spec = C.PRESETS[st.session_state.get("_cmp_applied", TEACHING)]()
    # two selects a row: family titles and metric names run to 40-70 characters, which four
    # columns a row cut at 1280 px
    c1, c2 = st.columns([1.5, 1])
    family = c1.selectbox("Attack family", families(), key="cmp_family",
                          format_func=_family_title)
    datasets = _datasets(family)
    if st.session_state.get("cmp_data") not in datasets:
        st.session_state["cmp_data"] = datasets[0]
    data = c2.selectbox("Data set", datasets, key="cmp_data")
    require_data(data, key="cmp_data")  # a preset on Adult without its files: Run is off
    store = get_store()
    utilities = C.metric_choices(family, "utility", store)
    privacies = C.metric_choices(family, "leakage", store)
    for k, opts in (("cmp_utility", utilities), ("cmp_privacy", privacies)):
        if st.session_state.get(k) not in opts:
            st.session_state[k] = opts[0]
    c3, c4 = st.columns([1, 1.5])
    utility = c3.selectbox("Utility metric", utilities, key="cmp_utility",
                           format_func=display_name,
                           help="more is better; from the metric schema")
    privacy = c4.selectbox("Privacy metric", privacies, key="cmp_privacy",
                           format_func=display_name,
                           help="attack success: lower is more private")
    model = _architecture(family, data)
    opts = defense_options(family)
    kept = [o for o in st.session_state.get("cmp_defenses", []) if o in opts]
    if kept != st.session_state.get("cmp_defenses"):
        firsts = list({o.split(":")[0]: o for o in reversed(opts)}.values())[::-1]
        st.session_state["cmp_defenses"] = kept or firsts[:4]  # one per defense
    chosen = st.multiselect("Defenses (the undefended point is always drawn)", opts,
                            key="cmp_defenses", format_func=option_label)
    specs, bad = _grid_specs(family, chosen)
    specs += _fixed_point_choices(chosen)
    st.session_state.setdefault("cmp_seeds", 2)
    seeds = st.slider("Seeds per point", 1, 5, key="cmp_seeds")
    _refusals(family)
    if bad:
        return None
    base = dict(base_spec.base) if base_spec.family == family else {}
    s = state.settings()
    # the missing points run on the process's local pool over the usable cores: its workers
    # start under a clean __main__ (core.runs.pool), so the server's script is not re-run there
    return C.ComparisonSpec(family=family, data=data, utility=utility, privacy=privacy,
                            defenses=tuple(specs), seeds=tuple(range(s.seed, s.seed + seeds)),
                            base=base, executor="local", model=model)


def _architecture(family: str, data: str) -> dict[str, Any] | None:
    """The network every point trains (the pages' architecture control, with its cost per
    point); None for the family's default, so that the presets' points keep their keys."""
    from core.config.schema import ModelSpec

    cfg = C.family_defaults(family)
    cfg["data"] = {**(cfg.get("data") or {}), "name": data}
    model = architecture_ui(cfg, kind=family, key="cmp").get("model")
    return None if model is None or model == ModelSpec().model_dump(mode="json") else model


def _datasets(family: str) -> list[str]:
    """Data sets a family's config accepts (validated: image families take image sets)."""
    from dashboard.sidebar import dataset_rows

    out = []
    base = C.family_defaults(family)
    for row in dataset_rows():
        try:
            parse_config({**base, "data": {**base.get("data", {}), "name": row["name"]}})
        except ValueError:  # ConfigError: a set this family cannot use
            continue
        out.append(row["name"])
    return out


@st.cache_resource(max_entries=64, show_spinner=False)
def _comparison(_spec: C.ComparisonSpec, keys: tuple[str, ...], metrics: tuple[str, str]
                ) -> C.Comparison:
    """The comparison read from the store once per set of sweeps (``keys``) and pair of
    metrics, when every point is stored (:class:`core.runs.compare.MissingPoints` otherwise, which
    is not cached): scrubbing the slider or switching tables reruns the page without touching
    the store."""
    return C.read_comparison(_spec, get_store(), imported=True)


def show(cmp: C.Comparison, advice: Advice | None = None) -> None:
    n = max((len(c.knob) for c in cmp.defended), default=1)
    position = None
    if n > 1:
        position = st.slider("Scrub the grid (cached points: nothing recomputes)", 1, n,
                             key="cmp_position") - 1
    fig = comparison_figure(cmp, position, highlights=highlights(advice),
                            level=None if advice is None else advice.threat.level)
    st.plotly_chart(fig, width="stretch", key="cmp_plane")
    now = f"{cmp.points_run} computed now in {cmp.seconds:.1f} s" if cmp.points_run else \
        "0 computed now"
    st.caption(f"{cmp.points_cached + cmp.points_run} points ({now}, "
               f"{cmp.points_cached} from the store) · lines join each defense's settings in knob "
               "order · bars: ± one standard deviation over seeds · dashed: the Pareto front "
               "(no other point has more utility and less leakage) · star: no defense.")
    if position is not None:
        rows = []
        for c in cmp.defended:
            j = min(position, len(c.knob) - 1)
            rows.append({"defense": c.name, "knob": f"{c.symbol} = {c.knob[j]:g}",
                         display_name(cmp.spec.utility): _cell(c.utility_mean[j]),
                         display_name(cmp.spec.privacy): _cell(c.leakage_mean[j])})
        # a static table wraps the metrics' long display names (a data grid cut the last off)
        st.table(rows)
    st.subheader("Utility at equal privacy")
    levels = cmp.levels()
    rows = cmp.table(levels)
    frame = table_frame(rows, [c.name for c in cmp.defended])
    # a static table wraps its cells: the dominance verdicts stay whole at 1280 px, where a
    # data grid cut the last column off
    st.table(frame.set_index("attack level ≤"))
    st.caption(f"Each defense's best {display_name(cmp.spec.utility).lower()} over its settings "
               f"whose {display_name(cmp.spec.privacy).lower()} is at or below the level (TAPPFL's Fig. 4 protocol); "
               "* = read on the segment between two grid points that crosses the level; "
               "— = no setting gets that private. The dominance test pairs seeds: a difference "
               "within two standard errors is a tie.")
    d1, d2, d3 = st.columns(3)
    d1.download_button("Table (CSV)", frame.to_csv(index=False), file_name="compare_table.csv",
                       mime="text/csv", key="cmp_csv")
    d2.download_button("Points (CSV)", points_frame(cmp).to_csv(index=False),
                       file_name="compare_points.csv", mime="text/csv", key="cmp_points_csv")
    d3.download_button("Figure (standalone HTML)", lambda: figure_html(fig),
                       file_name="compare.html", mime="text/html", key="cmp_html")
    bundle_button(cmp.spec, key="cmp")
    if cmp.imported:
        n = sum(len(row) for c in cmp.curves for row in c.keys)
        st.caption(f"{len(cmp.imported)} of {n} points were imported from a bundle, not "
                   "computed here: History names where each came from, and `privlab verify "
                   "--recompute KEY` runs one here.")
    overlap_ui(cmp, position)
    with st.expander("Every point"):
        st.dataframe(points_frame(cmp), hide_index=True, width="stretch")
    for name, why in cmp.refused:
        st.caption(f"not compared: {name}: {why}")


st.title("Compare defenses")
st.caption("Every registered defense that applies to an attack family, on one utility–privacy "
           "plane: each defense's knob swept over seeds (one stored sweep per defense: only "
           "missing points run), the Pareto front, and each defense's utility at matched "
           "attack levels.")
LAST = "_cmp_last"  # (spec, keys) of the comparison drawn last: kept while an input is invalid


def show_last(why: str) -> None:
    """The last comparison drawn, unchanged, under a line saying why it is not updated."""
    last = st.session_state.get(LAST)
    if last is None:
        return
    spec, keys = last
    st.caption(f"{why} The plot and tables below are the last comparison run "
               f"({spec.data}, {display_name(spec.privacy)}), unchanged.")
    try:
        last_cmp = _comparison(spec, keys, (spec.utility, spec.privacy))
    except (C.MissingPoints, ValueError):  # its points were deleted meanwhile
        return
    show(last_cmp, last_advice(last_cmp))


@st.cache_resource(show_spinner=False)
def _preset_keys(name: str) -> tuple[str, ...]:
    """The sweep keys of preset ``name`` as shipped (where points run is not in a key)."""
    return tuple(cache_key(parse_config(c)) for _, c in C.comparison_sweeps(C.PRESETS[name]())[0])


spec = controls()
if spec is None or not inputs_ok():
    st.button("Run the comparison", type="primary", key="cmp_run", disabled=True)
    show_last("Run is off until the box marked above is fixed.")
    running_jobs_panel()
    st.stop()
try:
    sweeps, refused = C.comparison_sweeps(spec)
    configs = [cfg for _, cfg in sweeps]
    keys = tuple(cache_key(parse_config(c)) for c in configs)
except ValueError as exc:  # ConfigError included: one line per problem
    st.error(f"Comparison: invalid settings: {exc}\n\nNothing was stored.")
    st.button("Run the comparison", type="primary", key="cmp_run", disabled=True)
    show_last("These settings are invalid.")
    st.stop()
for d, why in refused:
    st.warning(f"{d.name}: {why}")
# the teaching preset as shipped starts by itself; a changed one waits for the button
auto = st.session_state.get("cmp_preset") == TEACHING and keys == _preset_keys(TEACHING)
run_clicked = st.button("Run the comparison", type="primary", key="cmp_run")
metrics = (spec.utility, spec.privacy)
cmp: C.Comparison | None = None
problem: ValueError | None = None
try:
    cmp = _comparison(spec, keys, metrics)
except C.MissingPoints:
    store = get_store()
    job = "compare-" + hashlib.sha256("|".join(keys).encode()).hexdigest()
    cmp = run_job_with_progress(
        job, lambda j: C.run_comparison(spec, store, progress=j.report, cancel=j.token),
        label=f"comparison on {spec.data}", start=run_clicked or auto)
except ValueError as exc:  # a metric these runs do not report: one line, nothing stored
    problem = exc
if problem is not None:
    st.error(f"Comparison: {problem}")
elif cmp is None:
    st.info(f"{len(configs)} sweeps ({sum(len(c['seeds']) * max(1, len(next(iter(c['grid'].values()), [0]))) for c in configs)} "
            "points) not all stored yet. Press **Run the comparison**; every point is stored "
            "as it finishes, so a cancelled comparison keeps them.")
    show_last("These settings have not run yet.")
else:
    st.session_state[LAST] = (spec, keys)
    top = st.container()  # the plane and tables above the advisor, drawn with its picks
    advice = advisor_ui(cmp)
    with top:
        show(cmp, advice)
    # one recommendation on the page: the advisor's block also says the release rule's
    report_button(cmp, key="cmp", sections=advice_sections(cmp, advice),
                  said_above=advice is not None)
    compare_lesson_panel(cmp)
running_jobs_panel()
