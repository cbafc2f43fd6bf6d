"""A page's lesson, measured: the sentences :func:`core.report.teaching.lesson_from` makes from the
page's figures (:func:`core.report.teaching.figures`, read from its stored teaching sweep), the table
of those figures (every number of a sentence is one of them), and a "Run the teaching sweep"
button that queues the sweep (and its reference runs) as one job of the shared queue, with
progress and cancel
(:func:`dashboard.base.widgets.run_many_with_progress`; every point is stored on its own). Once the
sweep is stored, the lesson comes from the store at once.

One call per page: ``lesson_panel(page, config, key=...)``; the Compare page hands in its
Comparison (``compare_lesson_panel``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from core.report.teaching import (
    Lesson,
    TeachingSweep,
    compare_figures,
    compare_lesson,
    figures,
    lesson_from,
    teaching_sweep,
)


def _peek(config: Mapping[str, Any]):
    from dashboard.base.widgets import peek

    try:
        return peek(config)
    except ValueError:  # a config the current engine refuses has no stored run
        return None


def _sentences(les: Lesson) -> None:
    """The lesson's sentences, parts named by their titles (the engine's sentences keep the
    registered names, which the number check and the README read)."""
    from dashboard.base.format import titled

    for s in les.sentences:
        if s in les.contradictions:
            st.warning(titled(s), icon=":material/report:")
        else:
            st.markdown(titled(s))


def figures_table(rows: list[dict[str, str]]) -> None:
    """The figures the lesson's sentences read, as a table (the same values, the same format:
    :meth:`core.report.teaching.Figures.rows`)."""
    import pandas as pd

    from dashboard.base.format import titled

    shown = [{k: titled(v) if isinstance(v, str) else v for k, v in r.items()} for r in rows]
    with st.expander("The figures this lesson reads", icon=":material/table:"):
        st.table(pd.DataFrame(shown).fillna("").set_index("figure"))


def sweep_button(spec: TeachingSweep, *, key: str, dim: int | None = None,
                 missing: int | None = None) -> bool:
    """The "Run the teaching sweep" button and its job (one job: the sweep, then the reference
    runs). True when the sweep has just finished (the caller reads the store again)."""
    from dashboard.base.widgets import run_many_with_progress
    from dashboard.components.inputs import blocked_reason

    grid = ", ".join(f"{v:g}" for v in spec.values(dim))
    sym = spec.knob.symbol
    n = len(spec.values(dim)) * len(spec.seeds) + len(spec.reference_configs())
    label = "Run the teaching sweep" + (f" ({missing} of {n} points missing)" if missing else "")
    blocked = blocked_reason()  # missing data: off like Run, with the same message
    clicked = st.button(label, key=f"{key}_teaching_sweep",
                        disabled=missing == 0 or blocked is not None, icon=":material/school:",
                        help=blocked or f"{sym} ∈ {{{grid}}} × seeds {list(spec.seeds)}"
                        + (f" on {spec.variant_words}" if spec.variant_words else "")
                        + (" and the undefended reference" if spec.reference else "")
                        + ", the other settings as they are; one job, each point stored.")
    done = run_many_with_progress(spec.job_configs(dim), label=f"{spec.title}: teaching sweep",
                                  start=clicked)
    return done is not None


def lesson_panel(page: str, config: Mapping[str, Any] | None = None, *, key: str,
                 dim: int | None = None, title: str = "What this page teaches") -> Lesson | None:
    """The page's measured lesson under ``config`` (its current settings; None: its default),
    with the teaching-sweep button. Returns the Lesson (None when the page has no sweep)."""
    try:
        spec = teaching_sweep(page, config)
        fig = figures(spec, _peek, dim)
    except ValueError as exc:  # no knob on this setting, or a config the sweep cannot take
        st.caption(f"No teaching sweep for these settings: {exc}")
        return None
    with st.container(border=True):
        st.markdown(f"**{title}** · measured from the teaching sweep "
                    f"({spec.knob.symbol}: {spec.knob.label}"
                    + (f", on {spec.variant_words}" if spec.variant_words else "") + ")")
        if sweep_button(spec, key=key, dim=dim, missing=fig.missing) and fig.missing:
            fresh = figures(spec, _peek, dim)
            if fresh.missing != fig.missing:
                # the button above was drawn before the job ended: draw the page again so that
                # its "(k of n points missing)" reads the store, like the lesson does
                st.rerun()
            fig = fresh
        les = lesson_from(spec, fig)
        _sentences(les)
        if fig.ends is not None:
            figures_table(fig.rows())
    return les


def compare_lesson_panel(comparison: Any, *, title: str = "What this comparison teaches"
                         ) -> Lesson:
    """The Compare page's lesson from its Comparison (seed means with intervals)."""
    les = compare_lesson(comparison)
    with st.container(border=True):
        st.markdown(f"**{title}** · measured from the stored sweeps")
        _sentences(les)
        rows = compare_figures(comparison).rows()
        if rows:
            figures_table(rows)
    return les
