"""Compare's Advisor panel: state a threat (the comparison's privacy metric and a level) and a
utility floor, read the advice of :func:`core.report.advisor.advise` on the comparison drawn, and run
its missing points as one comparison job of the page's queue.

The threat's metric is the page's privacy metric (choosing another here switches the page's,
so the plane's y axis and the advice speak of the same metric). The defaults put the level a
quarter of the way from the undefended point towards chance (:func:`core.report.advisor.
default_threat`) and the floor at 90 % of the undefended utility, which on the teaching preset
picks a setting, a runner-up and crossings worth running. The view draws the advice's picks on
its plane (:func:`highlights`).
"""

from __future__ import annotations

import hashlib
import math

import streamlit as st

from core.foundation.parts import DEFENSES
from core.foundation.wording import counted
from core.report import advisor as A
from core.runs import compare as C
from dashboard.base.format import display_name
from dashboard.base.widgets import get_store, run_job_with_progress
from dashboard.components.compare_plot import Highlight, short_name
from dashboard.components.inputs import number_ui

SHARE, ABSOLUTE = "share of the undefended utility", "absolute utility"
#: the floor's default share of the undefended utility
DEFAULT_SHARE = 0.9
_FOR = "_adv_for"  # (comparison identity, metric) the level's default was set for
_DONE = "_adv_done"  # the missing-points job last finished: its spec
_LAST = "_adv_last"  # (comparison identity, the advice drawn last on it)


def _identity(cmp: C.Comparison) -> tuple:
    return (tuple(cmp.sweep_keys), cmp.spec.family, cmp.spec.data)


def _sync_privacy() -> None:
    """The advisor's metric box moved: the page's privacy metric follows (a callback runs
    before the page's widgets are drawn, so their state may change)."""
    st.session_state["cmp_privacy"] = st.session_state["adv_metric"]


def _floor_kind_changed(base: float | None) -> None:
    share = st.session_state.get("adv_floor_kind") == SHARE
    st.session_state["adv_floor"] = DEFAULT_SHARE if share or base is None else \
        round(DEFAULT_SHARE * base, 3)


def grid_key(d: C.DefenseSpec) -> str:
    """The page's grid box of a curve (``cmp_grid_dp_sgd``, ``cmp_grid_channel:white``)."""
    field = DEFENSES.get(d.defense).page.variants
    return "cmp_grid_" + d.defense + "".join(f":{v}" for f, v in d.params if f == field)


def _add_to_grids(missing: C.ComparisonSpec) -> None:
    """Merge the missing knob values into the page's grid boxes (a callback: before the boxes
    are drawn), so the comparison drawn next holds them, read from the store."""
    ss = st.session_state
    for d in missing.defenses:
        key = grid_key(d)
        have = [v.strip() for v in str(ss.get(key, "")).replace(";", ",").split(",") if v.strip()]
        vals = sorted({float(v) for v in have} | set(d.grid or ()))
        ss[key] = ", ".join(f"{v:g}" for v in vals)
    ss.pop(_DONE, None)


def highlights(advice: A.Advice | None) -> list[Highlight]:
    """The advice's points for the plane: chosen, runner-up, closest (measured) and the best
    interpolated setting to run (at the level: where its segment crosses it)."""
    if advice is None:
        return []
    out = []
    for role, p in (("chosen", advice.chosen), ("runner-up", advice.runner_up),
                    ("closest", advice.closest)):
        if p is not None:
            out.append(Highlight(role, f"{role}: {short_name(p.label)}", p.utility, p.privacy))
    x = advice.best_crossing
    if x is not None:
        out.append(Highlight("to run", f"to run: {short_name(x.curve)} at {x.symbol} ≈ "
                             f"{x.knob:g} (interpolated)", x.utility, advice.threat.level,
                             interpolated=True))
    return out


def _inputs(cmp: C.Comparison) -> tuple[A.Threat, A.Floor] | None:
    """The threat and floor boxes; None (with the box's one-line error) when one is invalid."""
    ss = st.session_state
    family, metric = cmp.spec.family, cmp.spec.privacy
    choices = C.metric_choices(family, "leakage", get_store())
    if metric not in choices:
        choices.insert(0, metric)
    ss["adv_metric"] = metric  # the page's metric: this box follows it
    base = cmp.undefended
    base_u = float(base.utility_mean[0]) if base is not None else None
    if ss.get(_FOR) != (_identity(cmp), metric):  # a new comparison or metric: fresh default
        ss[_FOR] = (_identity(cmp), metric)
        ss["adv_level"] = A.default_threat(cmp).level
    ss.setdefault("adv_floor_kind", SHARE if base_u is not None and math.isfinite(base_u)
                  else ABSOLUTE)
    # the metric on a row of its own: metric names run to 70 characters
    st.selectbox("Threat: privacy metric", choices, key="adv_metric", on_change=_sync_privacy,
                 format_func=display_name,
                 help="The attack success to hold down (the page's privacy metric).")
    lo, hi = A.metric_range(metric)
    rel = "at least" if A.higher_is_private(metric) else "at most"
    c2, c3, c4 = st.columns(3)
    level = number_ui(f"Level: {rel}", key="adv_level", default=ss["adv_level"], where=c2,
                      lo=lo, hi=None if math.isinf(hi) else hi, name="threat level",
                      help=f"The metric must be {rel} this.")
    kind = c3.radio("Utility floor as", [SHARE, ABSOLUTE], key="adv_floor_kind",
                    on_change=_floor_kind_changed, args=(base_u,))
    share = kind == SHARE
    ulo, uhi = A.metric_range(cmp.spec.utility)
    floor = number_ui("Utility floor", key="adv_floor", default=DEFAULT_SHARE, where=c4,
                      lo=0.0 if share else ulo, hi=1.0 if share else uhi, name="floor",
                      help="A share in [0, 1] of the undefended utility" if share else
                      f"The least {display_name(cmp.spec.utility).lower()} to keep.")
    if level is None or floor is None:
        return None
    try:
        return A.Threat(family, metric, float(level)), A.Floor(float(floor), share=share)
    except ValueError as exc:  # one line naming the field and its range
        st.error(str(exc), icon=":material/error:")
        return None


def _run_missing(advice: A.Advice) -> None:
    """The "Run the missing points" button and its job (the page's queue; its progress and
    Cancel); when it has stored them, a button to add them to the grids."""
    missing = advice.missing
    if missing is None:
        st.button("Run the missing points", key="adv_run", disabled=True,
                  help="No segment between measured settings crosses the level with room "
                       "above the floor.")
        return
    n = advice.missing_points
    clicked = st.button(f"Run the missing points ({counted(n, 'run')})", key="adv_run",
                        help="One comparison job: each crossing's knob value on every seed of "
                             "this comparison; every point is stored as it finishes.")
    job = "advisor-" + hashlib.sha256(repr(missing).encode()).hexdigest()
    store = get_store()
    done = run_job_with_progress(
        job, lambda j: C.run_comparison(missing, store, progress=j.report, cancel=j.token),
        label=f"missing points on {missing.data}", start=clicked)
    if done is not None:
        st.session_state[_DONE] = missing
    if st.session_state.get(_DONE) == missing:
        st.success(f"{n} points stored.")
        st.button("Add them to the comparison's grids", key="adv_merge", on_click=_add_to_grids,
                  args=(missing,), type="primary")


def advisor_ui(comparison: C.Comparison) -> A.Advice | None:
    """The Advisor panel under the comparison: threat and floor inputs, the answer sentence,
    its points as a table, and the missing-points job. Returns the advice (None while an input
    is invalid) for the plane's highlights."""
    st.subheader("Advisor")
    st.caption("State the threat (an attack level not to pass) and the utility you need: the "
               "advisor reads this comparison's measured points and names the defense and "
               "setting to use, the runner-up and whether their gap survives the paired-seed "
               "test, or which points to run.")
    st.session_state.pop(_LAST, None)
    got = _inputs(comparison)
    if got is None:
        return None
    threat, floor = got
    try:
        advice = A.advise(comparison, threat=threat, floor=floor)
    except ValueError as exc:
        st.error(str(exc), icon=":material/error:")
        return None
    (st.success if advice.status == "met" else st.warning)(
        advice.sentence + release_rule_words(comparison, advice))
    rows = [{k: short_name(v) if k == "defense" else v for k, v in r.items()}
            for r in advice.rows()]
    if rows:
        st.table(rows)
    st.session_state[_LAST] = (_identity(comparison), advice)
    _run_missing(advice)
    return advice


def release_rule_words(comparison: C.Comparison, advice: A.Advice) -> str:
    """The privacy report's release rule on the same seed-mean points, said in the advisor's
    block (:func:`core.report.beside_advice`); "" when the report cannot be read."""
    from core.report import beside_advice, recommend
    from dashboard.components.report_button import DEFAULT_LEVEL

    try:
        rec = recommend(comparison, store=get_store(), level=st.session_state.get(
            "cmp_report_level", DEFAULT_LEVEL))
    except (LookupError, ValueError, OSError):
        return ""
    c = advice.chosen
    return "\n\n" + beside_advice(rec, None if c is None else (c.curve, c.index))


def last_advice(comparison: C.Comparison) -> A.Advice | None:
    """The advice drawn last on ``comparison`` (the page redraws the last comparison, picks
    included, while an input above is invalid)."""
    last = st.session_state.get(_LAST)
    return last[1] if last is not None and last[0] == _identity(comparison) else None


def advice_sections(comparison: C.Comparison, advice: A.Advice | None) -> tuple[dict, ...]:
    """The advice as a privacy-report section, with the plane and its picks highlighted (the
    engine's section has no figure: figures are drawn at this level)."""
    if advice is None:
        return ()
    from dashboard.components.compare_plot import comparison_figure

    section = dict(advice.report_section())
    section["figure"] = comparison_figure(comparison, highlights=highlights(advice),
                                          level=advice.threat.level)
    return (section,)
