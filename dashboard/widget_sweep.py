"""Every widget of every page through its declared ends (``tests/test_widget_ends.py`` and
``python -m benchmarks widget_sweep``).

Each page of ``dashboard/views/`` is opened in ``streamlit.testing.v1.AppTest`` on a private
result store; its widgets are enumerated at the page's default, and each is set in turn to

- a slider / select slider: its min, a middle value and its max (every option of a short
  select slider);
- a number box (:func:`dashboard.components.inputs.number_ui`): the ends of the range the
  config declares (an open end moved inside by a small step, an unbounded one set to
  :data:`FAR`), a middle value, an empty entry and a non-number;
- a selectbox / radio / segmented control: every option; a multiselect: none, each option
  alone, all;
- a checkbox / toggle: both states; a free text box: empty and a text matching nothing;

then the page is drawn again and one *case* is recorded: an exception (``at.exception``), a
non-finite number in the rendered text (:func:`nonfinite_tokens`) and the sections (headers,
subheaders) present at the default that are gone (:func:`missing_sections`). After each widget
the page is opened afresh, so one widget's end never hides another's.

Runs use tiny settings (:data:`dashboard.components.caveat_check.TINY`: same defense and
attacks, fewer epochs, rows and targets): ``run_with_progress`` runs the shrunk config in the
process (:class:`TinyRuns`); a page that runs on opening (Fisher information) therefore runs
tiny, and on a sample of cases (``run_every``) the page's Run button is clicked and its result
drawn. Sweeps, audits and teaching sweeps are never started.

Rules (documented here once, applied by the test and the benchmark):

- *non-finite*: ``nan``, ``NaN``, ``inf``, ``Infinity`` as whole words (not prose such as
  "NaN/inf entries"), and ``∞`` unless it is the DP budget ε = ∞ (no DP guarantee: within a
  few characters after an ε), the open end of a range written as an interval (``, ∞)``,
  ``≤ ∞``), a norm's name (ℓ∞) or a legend saying what ∞ means (``∞: clipping only``);
  dataframe and table cells are checked as numbers (``np.isfinite``) and as text.
- *raw identifier*: a registered metric key, attack, defense or family name with an
  underscore where a title exists, in the text and table cells; inline code (a CLI command,
  a result file's path) is exempt.
- *missing section*: a numeric widget (slider, select slider, number box) moved inside its
  declared range never removes a section; a choice (selectbox, radio, multiselect, checkbox,
  toggle, free text) may, on purpose (a defense without a knob has no tradeoff section), so
  sections it removes are recorded but not counted.
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
#: every page script, Home first (the sidebar's widgets are swept there only)
PAGES = ("views/home.py", "views/data.py", "views/attribute_privacy.py", "views/membership.py",
         "views/property.py", "views/reconstruction.py", "views/repr_reconstruction.py",
         "views/fisher_information.py", "views/compare.py", "views/history.py")
KINDS = ("slider", "select_slider", "text_input", "selectbox", "radio", "multiselect",
         "checkbox", "toggle", "button_group")
NUMERIC = {"slider", "select_slider", "number"}
#: the value typed into a number box whose range has no upper end
FAR = 1e6
#: a page's Run button key ends so; clicked on a sample of cases
RUN_SUFFIX = "_run"
_TEXT = "__text"

_WORD = re.compile(r"(?<![\w./])(nan|NaN|NAN|inf|Inf|INF|-inf|Infinity|-Infinity)(?![\w/])")
_INF = re.compile(r"(?<![ℓL‖])∞(?!\s*:)")
_EPS_BEFORE = re.compile(r"ε\s*[₀-₉]*\s*(=|:|→|->)?\s*$")
_RANGE_BEFORE = re.compile(r"(,|≤|<|→|to)\s*$")


def nonfinite_tokens(text: str) -> list[str]:
    """The non-finite numbers ``text`` shows (rule in the module docstring), each with a little
    context."""
    out = [text[max(m.start() - 20, 0):m.end() + 10] for m in _WORD.finditer(text)]
    for m in _INF.finditer(text):
        before = text[max(m.start() - 6, 0):m.start()]
        if _EPS_BEFORE.search(before) or _RANGE_BEFORE.search(before):
            continue
        out.append(text[max(m.start() - 20, 0):m.end() + 10])
    return out


def _frame_nonfinite(df: Any) -> list[str]:
    import numpy as np

    out = []
    for col in df.columns:
        s = df[col]
        if s.dtype.kind in "fc":
            bad = ~np.isfinite(s.to_numpy(dtype=float))
            out += [f"{col}={v}" for v in s[bad].tolist()]
        elif s.dtype == object:
            for v in s.tolist():
                if isinstance(v, float) and not math.isfinite(v):
                    out.append(f"{col}={v}")
                elif isinstance(v, str):
                    out += nonfinite_tokens(v)
    out += nonfinite_tokens(" ".join(str(c) for c in df.columns))
    return out


def page_text(at: Any) -> str:
    """The text a reader sees: markdown, captions, alerts, headings, metric tiles, widget
    labels and table cells (plots are left to the browser pass)."""
    parts = []
    for kind in ("markdown", "caption", "warning", "info", "error", "success", "title",
                 "header", "subheader", "text", "latex"):
        parts += [str(e.value) for e in at.get(kind)]
    parts += [f"{m.label} {m.value} {m.proto.delta}" for m in at.metric]
    for kind in KINDS:
        parts += [str(getattr(w, "label", "")) for w in at.get(kind)]
    return "\n".join(parts)


def nonfinite_on_screen(at: Any) -> list[str]:
    found = nonfinite_tokens(page_text(at))
    for d in [*at.dataframe, *at.table]:
        with contextlib.suppress(Exception):
            found += _frame_nonfinite(d.value)
    return found


def raw_identifiers(at: Any) -> list[str]:
    """Registered identifiers in the page's text and table cells where a title exists
    (:func:`dashboard.base.format.raw_identifiers_visible`)."""
    from dashboard.base.format import raw_identifiers_visible

    text = [page_text(at)]
    for d in [*at.dataframe, *at.table]:
        with contextlib.suppress(Exception):
            text.append(d.value.astype(str).to_string())
    # inline code (`privlab run … defense.kind=dp_sgd`, a result file's path) is what a
    # user types or opens: the identifier is the point there
    return raw_identifiers_visible(re.sub(r"`[^`]*`", " ", "\n".join(text)))


def sections(at: Any) -> list[str]:
    return [str(h.value) for kind in ("header", "subheader") for h in at.get(kind)]


def missing_sections(before: list[str], at: Any) -> list[str]:
    now = set(sections(at))
    return [s for s in before if s not in now]


# --------------------------------------------------------------------------------------------
# widget values


class Label(str):
    """An option given by its label as the page shows it (the option's raw value is not known
    to the test; the widget sends the label, as the browser does)."""


@contextlib.contextmanager
def _labels_pass_through() -> Iterator[None]:
    """Widgets format a :class:`Label` as itself (AppTest would otherwise apply the page's
    ``format_func`` to it)."""
    from streamlit.testing.v1 import element_tree as et

    classes = [et.Selectbox, et.Radio, et.Multiselect, et.SelectSlider, et.ButtonGroup]
    saved = {c: c.__dict__["format_func"] for c in classes}

    def wrap(prop: property) -> property:
        def get(self: Any) -> Any:
            f = prop.fget(self)
            return lambda v: str(v) if isinstance(v, Label) else f(v)
        return property(get)

    for c in classes:
        c.format_func = wrap(saved[c])
    try:
        yield
    finally:
        for c, p in saved.items():
            c.format_func = p


def _number_ranges(at: Any) -> Mapping[str, Mapping[str, Any]]:
    from dashboard.components.inputs import RANGES

    with contextlib.suppress(KeyError):
        return at.session_state[RANGES]
    return {}


def _fmt(v: float, integer: bool) -> str:
    return str(int(v)) if integer else format(float(v), ".10g")


def number_values(rng: Mapping[str, Any], default: Any) -> list[tuple[str, str]]:
    """(case label, text) for a number box of range ``rng`` (core.foundation.checks.field_range)."""
    integer = bool(rng.get("integer"))
    lo, hi = rng.get("lo"), rng.get("hi")
    step = 1 if integer else None
    out = []
    if lo is not None:
        v = lo + (step or max(abs(lo) * 1e-6, 1e-6)) if rng.get("lo_open") else lo
        out.append(("min", _fmt(v, integer)))
    if hi is not None and math.isfinite(hi):
        v = hi - (step or max(abs(hi) * 1e-6, 1e-6)) if rng.get("hi_open") else hi
        out.append(("max", _fmt(v, integer)))
    else:
        out.append(("far", _fmt(FAR, integer)))
    a = lo if lo is not None else (float(default) if default is not None else 0.0)
    b = hi if hi is not None and math.isfinite(hi) else max(a * 10, a + 10)
    out.append(("middle", _fmt(round((a + b) / 2) if integer else (a + b) / 2, integer)))
    out += [("empty", ""), ("not a number", "abc")]
    return out


def _mid(lo: Any, hi: Any, step: Any) -> Any:
    if isinstance(lo, int) and isinstance(hi, int):
        s = int(step or 1)
        return lo + ((hi - lo) // 2 // s) * s
    s = float(step or 0) or (hi - lo) / 100
    return lo + round((hi - lo) / 2 / s) * s


def ends_of(values: list[tuple[str, Any]], kind: str) -> list[tuple[str, Any]]:
    """The test-sized share of :func:`widget_values`: a number's declared ends, a choice's
    first and last option (a multiselect: none and all)."""
    if kind in NUMERIC or kind == "text_input":
        picked = [v for v in values if v[0] in ("min", "max", "far")]
        return picked or values[:1]
    return values if len(values) <= 2 else [values[0], values[-1]]


def widget_values(w: Any, kind: str, ranges: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(case label, value) for widget ``w`` (rule in the module docstring)."""
    if kind == "slider":
        lo, hi = w.min, w.max
        if isinstance(w.value, (list, tuple)):
            return [("min", (lo, lo)), ("max", (hi, hi)), ("full", (lo, hi))]
        return [("min", lo), ("middle", _mid(lo, hi, w.step)), ("max", hi)]
    if kind == "select_slider":
        opts = list(w.options)
        idx = range(len(opts)) if len(opts) <= 8 else (0, len(opts) // 2, len(opts) - 1)
        if isinstance(w.value, (list, tuple)):
            return [("ends", (Label(opts[0]), Label(opts[-1]))),
                    ("min", (Label(opts[0]), Label(opts[0])))]
        return [(f"option {opts[i]}", Label(opts[i])) for i in idx]
    if kind in ("selectbox", "radio"):
        return [(f"option {o}", Label(o)) for o in w.options]
    if kind == "multiselect":
        opts = list(w.options)
        out = [("none", [])] + [(f"only {o}", [Label(o)]) for o in opts]
        return out + ([("all", [Label(o) for o in opts])] if len(opts) > 1 else [])
    if kind == "button_group":  # segmented control / pills: every option (one at a time)
        opts = [o.content for o in w.proto.options]
        single = not isinstance(w.value, (list, tuple))
        return [(f"option {o}", Label(o) if single else [Label(o)]) for o in opts]
    if kind in ("checkbox", "toggle"):
        return [("on", True), ("off", False)]
    if kind == "text_input":
        key = str(w.key or "")
        base = key.removesuffix(_TEXT)
        if key.endswith(_TEXT) and base in ranges:
            return number_values(ranges[base], None)
        return [("empty", ""), ("no match", "zz-no-match")]
    return []


def _kind_of(w: Any, kind: str, ranges: Mapping[str, Any]) -> str:
    key = str(w.key or "")
    if kind == "text_input" and key.endswith(_TEXT) and key.removesuffix(_TEXT) in ranges:
        return "number"
    return kind


# --------------------------------------------------------------------------------------------
# tiny runs


class TinyRuns:
    """``dashboard.base.widgets.run_with_progress`` runs a page's config shrunk by
    :data:`caveat_check.TINY` in this process (no queue), remembered per config; sweeps and
    projections go through the real function (sweeps only when a sweep button is pressed,
    which this pass never does). ``run=False``: nothing starts at all."""

    def __init__(self, *, run: bool = True) -> None:
        #: False: nothing runs (a page that runs on opening shows its idle state)
        self.run = run
        self.results: dict[str, Any] = {}
        self.runs = 0
        self.errors: list[str] = []

    def __enter__(self) -> Self:
        import dashboard.base.widgets as w

        self._saved = w.run_with_progress
        real = w.run_with_progress

        def run_with_progress(config: Any, *, label: str, start: bool = True,
                              slot: str | None = None) -> Any:
            from dashboard.components.caveat_check import TINY, _merge

            c = config if isinstance(config, Mapping) else config.model_dump(mode="json")
            kind = c.get("kind")
            start = start and self.run
            if kind not in TINY:
                return real(config, label=label, start=start, slot=slot)
            import json

            from core.config.schema import ConfigError, parse_config

            key = json.dumps(c, sort_keys=True, default=str)
            if key in self.results:
                return self.results[key]
            if not start:
                return None
            try:
                cfg = parse_config(_merge(c, TINY[kind]))
            except ConfigError as exc:  # the page's own validation already passed
                self.errors.append(f"{kind}: tiny settings refused: {exc}")
                return None
            from core.foundation.stages import MemoryStageStore
            from core.runs.experiments import run

            self.runs += 1
            try:
                result = run(cfg, stages=MemoryStageStore())
            except Exception as exc:  # noqa: BLE001 - a run failing at a valid setting is a finding
                self.errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                import streamlit as st

                st.error(f"{label}: {exc}")
                return None
            result.from_cache = False
            self.results[key] = result
            return result

        w.run_with_progress = run_with_progress
        return self

    def __exit__(self, *exc: object) -> None:
        import dashboard.base.widgets as w

        w.run_with_progress = self._saved


# --------------------------------------------------------------------------------------------
# the sweep


@dataclass
class Case:
    page: str
    widget: str
    kind: str
    value: str
    seconds: float
    exception: str | None = None
    nonfinite: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    raw_ids: list[str] = field(default_factory=list)
    ran: bool = False

    @property
    def missing_counted(self) -> list[str]:
        return self.missing if self.kind in NUMERIC and self.value not in INVALID else []


def open_page(page: str, timeout: float) -> Any:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=timeout).run()
    if page != PAGES[0]:
        at.switch_page(page).run()
    return at


def _widgets(at: Any, *, sidebar: bool) -> list[tuple[str, str]]:
    """(kind, key) of the keyed widgets in the main area (or in the sidebar)."""
    root = at.sidebar if sidebar else at.main
    out = []
    for kind in KINDS:
        for w in root.get(kind):
            if w.key and not getattr(w, "disabled", False):
                out.append((kind, str(w.key)))
    return out


def _find(at: Any, kind: str, key: str) -> Any:
    try:
        return getattr(at, kind)(key=key)
    except KeyError:
        return None


def _run_button(at: Any) -> Any:
    for b in at.main.button:
        if str(b.key or "").endswith(RUN_SUFFIX) and b.label == "Run" and not b.disabled:
            return b
    return None


CHOICES = {"selectbox", "radio", "multiselect", "checkbox", "toggle", "button_group"}
INVALID = ("empty", "not a number")


def _open_with(page: str, prefix: list[tuple[str, str, Any]], timeout: float) -> Any:
    """``page`` opened afresh with the choices of ``prefix`` made, in order."""
    at = open_page(page, timeout)
    for kind, key, value in prefix:
        w = _find(at, kind, key)
        if w is not None:
            w.set_value(value).run()
    return at


def _drive(page: str, prefix: list[tuple[str, str, Any]], targets: list[tuple[str, str]],
           seen: set[str], depth: int, base_sections: list[str], cases: list[Case],
           opts: dict[str, Any]) -> None:
    """Each of ``targets`` through its values on the page with ``prefix`` made; a choice that
    reveals widgets not seen yet (a defense's knob) has them driven too, under that choice."""
    timeout, run_every, ends = opts["timeout"], opts["run_every"], opts["ends"]
    progress, max_depth = opts["progress"], opts["depth"]
    at = _open_with(page, prefix, timeout)
    for kind, key in targets:
        w = _find(at, kind, key)
        if w is None:
            continue
        ranges = _number_ranges(at)
        ckind = _kind_of(w, kind, ranges)
        values = widget_values(w, kind, ranges)
        if ends:
            values = ends_of(values, ckind)
        where = " · ".join(f"{k}={v}" for _, k, v in prefix)
        for label, value in values:
            t0 = time.perf_counter()
            w = _find(at, kind, key)
            if w is None:  # a previous value of this widget removed it: open afresh
                at = _open_with(page, prefix, timeout)
                w = _find(at, kind, key)
                if w is None:
                    break
            case = Case(page, key + (f" [{where}]" if where else ""), ckind, label, 0.0)
            try:
                w.set_value(value).run()
                if run_every and len(cases) % run_every == 0 and not at.exception:
                    b = _run_button(at)
                    if b is not None:
                        b.click().run()
                        case.ran = True
            except Exception as exc:  # noqa: BLE001 - AppTest refused (a timeout, a bad value)
                case.exception = f"{type(exc).__name__}: {exc}"
            if at.exception and case.exception is None:
                case.exception = str(at.exception[0].value)[:500]
            case.nonfinite = nonfinite_on_screen(at)
            case.missing = missing_sections(base_sections, at)
            case.raw_ids = raw_identifiers(at)
            case.seconds = time.perf_counter() - t0
            cases.append(case)
            if progress is not None:
                progress(case)
            if case.exception:
                at = _open_with(page, prefix, timeout)
                continue
            if kind in CHOICES and depth < max_depth:
                new = [(k2, n2) for k2, n2 in _widgets(at, sidebar=False) if n2 not in seen]
                if new:
                    seen.update(n for _, n in new)
                    _drive(page, [*prefix, (kind, key, value)], new, seen, depth + 1,
                           base_sections, cases, opts)
                    at = _open_with(page, [*prefix, (kind, key, value)], timeout)
        at = _open_with(page, prefix, timeout)  # the next widget starts from the default


def sweep_page(page: str, *, timeout: float = 180, run_every: int = 0,
               only: set[str] | None = None, sidebar: bool | None = None,
               ends: bool = False, depth: int = 1,
               progress: Any = None) -> list[Case]:
    """Every keyed widget of ``page`` through its values (module docstring); ``run_every``:
    click Run (with tiny settings) on every n-th case of a page that has one (0: never);
    ``only``: keys to sweep at the default (None: all); ``sidebar``: sweep the sidebar too
    (default: on Home); ``ends``: only the declared ends and the first and last options
    (:func:`ends_of`);
    ``depth``: how many choices deep widgets a choice reveals are driven (0: the default's
    widgets only)."""
    sidebar = page == PAGES[0] if sidebar is None else sidebar
    at = open_page(page, timeout)
    if at.exception:
        return [Case(page, "(open)", "page", "default", 0.0,
                     exception=str(at.exception[0].value))]
    base_sections = sections(at)
    targets = _widgets(at, sidebar=False) + (_widgets(at, sidebar=True) if sidebar else [])
    seen = {k for _, k in targets} | {k for _, k in _widgets(at, sidebar=True)}
    if only is not None:
        targets = [(k, n) for k, n in targets if n in only]
    cases: list[Case] = []
    _drive(page, [], targets, seen, 0, base_sections, cases,
           {"timeout": timeout, "run_every": run_every, "ends": ends,
            "progress": progress, "depth": depth})
    return cases


def sweep(pages: tuple[str, ...] = PAGES, *, run: bool = True, **kw: Any) -> list[Case]:
    """:func:`sweep_page` over ``pages`` inside :class:`TinyRuns` (runs are tiny)."""
    with _labels_pass_through(), TinyRuns(run=run) as tiny:
        out = []
        for p in pages:
            out += sweep_page(p, **kw)
        sweep.last_tiny = tiny  # type: ignore[attr-defined]
    return out


def summary(cases: list[Case]) -> dict[str, Any]:
    """The counts the benchmark's headline and the test read."""
    return {"widget_cases": len(cases),
            "widget_exceptions": sum(c.exception is not None for c in cases),
            "nonfinite_on_screen": sum(bool(c.nonfinite) for c in cases),
            "missing_sections": sum(bool(c.missing_counted) for c in cases),
            "raw_identifiers_cases": sum(bool(c.raw_ids) for c in cases),
            "runs_clicked": sum(c.ran for c in cases)}


def as_rows(cases: list[Case]) -> list[dict[str, Any]]:
    return [{**asdict(c), "seconds": round(c.seconds, 2)} for c in cases]
