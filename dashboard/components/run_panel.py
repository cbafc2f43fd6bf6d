"""The one Run path of a page: its settings validated once, the Run button, the copy box, the
run through the shared job queue, the lesson, the result (or what to do without one), the
closing section.

Every page that runs an experiment ends with one call::

    run_panel(controls(), kind=KIND, page="membership", key="mi", title="Membership",
              label=lambda run: ..., show=show_result, idle="No stored result ...")

and draws its own panels in the hooks, which receive a :class:`PageRun`. The config is
validated here, once, into its typed model (:func:`dashboard.base.widgets.validate`); the model,
never a re-parsed copy, goes to the queue, the store and the runner. What the scaffold draws,
in order:

0. where the kind trains a registered architecture, the Architecture control and the run's
   cost (:func:`dashboard.components.part_controls.architecture_ui`: it adds ``model`` to
   the settings when not the default MLP);
1. a disabled Run button and the reason when a number box is invalid, and nothing else
   (:func:`dashboard.components.inputs.stop_if_invalid`); the ConfigError in one line when
   the settings do not validate ("... Nothing was stored."), and nothing else;
2. ``before(run)`` (panels that need the validated settings but no run: live bounds);
3. Run (widget ``<key>_run``, off while an input blocks it) and ``buttons(row, run)`` beside it
   (what it returns is :attr:`PageRun.extra`);
4. the copy box (the config as YAML / a CLI command), then ``jobs(run)``: the jobs the page's
   own buttons start (a sweep);
5. the run (:func:`dashboard.base.widgets.run_with_progress`: a stored result at once, else progress
   and Cancel, a failure in one line); ``auto(run)`` starts it without a click;
6. the page's lesson (:func:`dashboard.components.lesson.lesson_panel`);
7. ``show(run)`` with a result (``fallback(run)`` may offer one, e.g. the nearest stored grid
   point), else ``idle``: an info line, or a hook that draws what the page shows without one;
   with ``result_first`` this section sits above the lesson;
8. ``after(run)`` whatever the outcome, then the closing section (:func:`page_tail`) and the
   session's background runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from dashboard.components.copy_run import copy_run
from dashboard.components.inputs import inputs_ok, stop_if_invalid
from dashboard.components.lesson import lesson_panel
from dashboard.components.page_tail import page_tail
from dashboard.components.part_controls import architecture_ui

__all__ = ["PageRun", "run_panel"]


@dataclass(frozen=True)
class PageRun:
    """What a page's hooks draw from: its settings as built, their model, the result."""

    #: the page's settings as its controls built them (a mapping, for reading and for the
    #: grid points a page derives from it)
    config: Mapping[str, Any]
    #: the validated model of :attr:`config` (validated once, by the scaffold)
    cfg: Any
    #: the stored or just computed Result (None: none yet); ``fallback``'s result if it gave one
    result: Any = None
    #: True when Run was clicked in this script run
    clicked: bool = False
    #: what the page's ``buttons`` hook returned (e.g. whether its sweep button was clicked)
    extra: Any = None


Hook = Callable[[PageRun], Any]


def run_panel(config: Mapping[str, Any], *, kind: str, page: str, key: str, title: str,
              label: str | Callable[[PageRun], str], show: Hook, idle: str | Hook,
              before: Hook | None = None,
              buttons: Callable[[Any, PageRun], Any] | None = None, jobs: Hook | None = None,
              auto: Callable[[PageRun], bool] | None = None,
              fallback: Callable[[PageRun], Any] | None = None,
              after: Hook | None = None, lesson_dim: Callable[[PageRun], int] | None = None,
              result_first: bool = False) -> PageRun:
    """Draw the page's run section (see the module docstring); returns its :class:`PageRun`.

    ``kind``: the experiment kind (the closing section's history); ``page``: the lesson's page
    name (:mod:`core.report.teaching`); ``key``: the page's widget-key prefix; ``title``: the page's
    name in messages; ``label``: the job's label (a text or a function of the run)."""
    from dashboard.base.widgets import run_with_progress, running_jobs_panel, validate

    # the architecture the run trains, on every page whose kind takes one (its cost before Run)
    config = architecture_ui(config, kind=kind, key=key)
    run_key = f"{key}_run"
    stop_if_invalid(key=run_key)
    cfg = validate(config, label=title)
    if cfg is None:
        st.stop()
    run = PageRun(config=config, cfg=cfg)
    if before is not None:
        before(run)
    row = st.container(horizontal=True)
    clicked = row.button("Run", type="primary", key=run_key, disabled=not inputs_ok())
    run = replace(run, clicked=clicked)
    if buttons is not None:
        run = replace(run, extra=buttons(row, run))
    copy_run(cfg)
    if jobs is not None:
        jobs(run)
    slot = st.container() if result_first else None
    result = run_with_progress(cfg, label=label(run) if callable(label) else label,
                               start=clicked or (auto is not None and bool(auto(run))))
    lesson_panel(page, config, key=key,
                 **({} if lesson_dim is None else {"dim": lesson_dim(run)}))
    run = replace(run, result=result)
    if result is None and fallback is not None:
        run = replace(run, result=fallback(run))
    with slot if slot is not None else nullcontext():
        if run.result is not None:
            show(run)
        elif callable(idle):
            idle(run)
        else:
            st.info(idle)
    if after is not None:
        after(run)
    page_tail(run.result, kind, key=key)
    running_jobs_panel()
    return run
