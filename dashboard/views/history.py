"""History: every stored run and sweep (the store's SQLite index); filter by kind, data set,
defense and date; inspect, copy, delete, export (CSV / JSON); put two runs side by side
(configs diffed, headline metrics with intervals, the figure as standalone HTML).

Runs of an older engine (another ``engine_version``: version or source fingerprint) are shown
and marked, not hidden; stored configs of an older shape (``kind: tappfl`` with a defense
string) are migrated (:func:`core.config.migrations.migrate`) before they are summarised.
"""

from __future__ import annotations

import datetime as dt
import math
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from cache.export import write_table
from core.config.migrations import migrate
from core.foundation.fingerprint import same_engine
from core.foundation.wording import counted
from dashboard.base.widgets import get_store
from dashboard.components import copy_run, metrics_frame
from dashboard.components.bundle_button import add_origin_column, bundle_button, origin_caption
from dashboard.components.bundle_import import import_ui, read_run, recompute_ui
from dashboard.components.compare_plot import figure_html
from dashboard.components.history_diff import (
    config_diff,
    headline_metric_names,
    metric_rows,
    pair_figure,
)
from dashboard.components.inputs import number_ui
from dashboard.components.result_info import metrics_shown
from dashboard.components.run_history import (
    OLDER,
    current_kind,
    data_name,
    defense_name,
    defense_title,
    kind_title,
    records_of,
    run_row,
    setting,
    short_name,
)

#: runs listed (twice as many metrics) before their table scrolls inside :data:`ROWS_HEIGHT` px
ROWS_BEFORE_SCROLL = 10
ROWS_HEIGHT = 460
#: the run list's free-text columns
WRAP_ANYWHERE = ("kind", "defense", "settings", "main metrics", "label", "origin")
#: the longest label of the run select (its box holds about 110 characters at 1280 px)
RUN_LABEL_CHARS = 96


def run_label(rec) -> str:
    """The run select's line: key, kind, creation minute and setting, within
    :data:`RUN_LABEL_CHARS` (the setting cut at a word, marked "…"; the table above has it
    whole)."""
    head = (f"{rec.key[:12]} · {kind_title(rec.kind)} · "
            f"{rec.created[:16].replace('T', ' ')}")
    tail = " · imported" if rec.origin else ""
    what = setting(rec.kind, rec.config)
    room = RUN_LABEL_CHARS - len(head) - len(tail) - 3
    if len(what) > room:
        what = what[:max(room - 1, 0)].rsplit(" ", 1)[0] + "…"
    return head + (f" · {what}" if what else "") + tail


def created_date(rec) -> dt.date | None:
    try:
        return dt.date.fromisoformat(rec.created[:10])
    except ValueError:
        return None


def filter_records(records: list, data: list[str], defenses: list[str],
                   dates: tuple[dt.date, ...] | None) -> list:
    """Records whose data set is in ``data``, defense in ``defenses`` (empty: any) and whose
    creation date lies in ``dates`` = (first, last) (None or incomplete: any)."""
    out = []
    for r in records:
        cfg, _ = migrate(r.config)
        if data and data_name(cfg) not in data:
            continue
        if defenses and defense_name(cfg) not in defenses:
            continue
        if dates and len(dates) == 2:
            d = created_date(r)
            if d is None or not dates[0] <= d <= dates[1]:
                continue
        out.append(r)
    return out


def export_bytes(records: list, fmt: str) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        return Path(write_table(records, Path(d) / f"runs.{fmt}", fmt)).read_bytes()


st.title("History")
store = get_store()
st.caption(f"Store: `{store.root}` · every run is keyed by the sha256 of its validated config "
           "and the engine's version and source fingerprint; trained models, releases and attack "
           "outputs are cached by stage underneath, so rerunning with another attacker retrains nothing.")

import_ui(store)
kinds = sorted({current_kind(r.kind) for r in store.list()})
f1, f2 = st.columns([1, 1])
kind = f1.selectbox("Kind", ["all", *kinds], key="history_kind")
limit = number_ui("Show at most", key="history_limit", default=200, where=f2, lo=1, hi=10_000,
                  integer=True, help="Runs listed, newest first.")
if limit is None:  # listed only once the box holds a number in range (the error is beside it)
    st.stop()
records = records_of(store, kind, limit)
_migrated = [migrate(r.config)[0] for r in records]
g1, g2, g3 = st.columns([1, 1, 1])
data_filter = g1.multiselect("Data set", sorted({data_name(c) for c in _migrated} - {""}),
                             key="history_data", placeholder="any")
defense_filter = g2.multiselect("Defense", sorted({defense_name(c) for c in _migrated}),
                                key="history_defense", placeholder="any",
                                format_func=defense_title)
_days = sorted(d for d in (created_date(r) for r in records) if d is not None)
date_filter = g3.date_input("Created between", value=(_days[0], _days[-1]) if _days else (),
                            key="history_dates") if _days else None
if isinstance(date_filter, dt.date):
    date_filter = (date_filter, date_filter)
records = filter_records(records, data_filter, defense_filter, date_filter)

if not records and (data_filter or defense_filter):
    st.info("No stored run matches these filters.")
    st.stop()
if not records:
    st.info("No stored runs yet. Runs appear here as soon as a page computes one (for example "
            "the projection on the Data & projections page).")
    st.stop()

table = add_origin_column(pd.DataFrame([run_row(r) for r in records]), records)
if not table["label"].astype(bool).any():  # no run has a label: no empty column
    table = table.drop(columns=["label"])
table["seconds"] = ["n/a" if pd.isna(s) else f"{s:g}" for s in table["seconds"]]
# a table whose cells wrap, so every column fits the page at 1280 px (a data grid of these
# columns ran past its box and hid the last ones); many runs scroll inside a fixed height
with st.container(height=ROWS_HEIGHT if len(table) > ROWS_BEFORE_SCROLL else "content",
                  border=False):
    # the free-text columns may break inside a long token (a sweep's config path) rather
    # than widen the table past the page; keys, dates and numbers keep whole
    st.table(table.style.set_properties(subset=[c for c in WRAP_ANYWHERE if c in table],
                                        **{"overflow-wrap": "anywhere"}),
             hide_index=True, border="horizontal")
n_old = int((table["engine"] == OLDER).sum())
if n_old:
    st.caption(f"{n_old} of {len(records)} runs computed by an older engine; rerun to refresh "
               "(the running engine's version or source differs, so its numbers may too).")

e1, e2, _ = st.columns([1, 1, 4])
e1.download_button("Download CSV", export_bytes(records, "csv"),
                   file_name="privlab_runs.csv", mime="text/csv", key="history_csv")
e2.download_button("Download JSON", export_bytes(records, "json"),
                   file_name="privlab_runs.json", mime="application/json", key="history_json")

st.subheader("One run")
# an imported run may share its key with a run computed here: each row is its own choice
by_id = {r.key + (" imported" if r.origin else ""): r for r in records}
chosen = st.selectbox("Run", list(by_id), key="history_run",
                      format_func=lambda i: run_label(by_id[i]))
rec = by_id[chosen]
key = rec.key
result = read_run(store, rec)
if not same_engine(rec.engine_version):
    st.caption(f"Run {key[:12]} was computed by an older engine ({rec.engine_version or 'unknown'}"
               "); rerun to refresh.")
origin_caption(rec)
recompute_ui(store, rec)
copy_run(rec.config)
st.markdown("**Metrics**")
# metrics the run did not produce (NaN: not applicable) make no empty rows; the page's width
# and wrapping cells keep each description whole (a half-width grid hid all but the names)
shown = {k: v for k, v in rec.metrics.items()
         if v is not None and not (isinstance(v, float) and math.isnan(v))}
metrics_shown_frame = metrics_shown(metrics_frame(shown, result))
with st.container(height=ROWS_HEIGHT if len(metrics_shown_frame) > 2 * ROWS_BEFORE_SCROLL
                  else "content", border=False):
    st.table(metrics_shown_frame, hide_index=True, border="horizontal")
with st.expander("Config (as stored)"):
    st.json(rec.config, expanded=2)

if result is not None:
    st.download_button("Download this run (JSON)", result.to_json(), file_name=f"{key[:12]}.json",
                       mime="application/json", key="history_one_json")
    bundle_button(key, key="history_one")
    if result.curves:
        st.caption("curves: " + ", ".join(f"{short_name(k, 40)} ({len(v)} points)"
                                          for k, v in result.curves.items()))
    if result.artifacts:
        st.caption("artifacts: " + ", ".join(f"{k} {tuple(v.shape)}" for k, v in result.artifacts.items()))

confirm = st.checkbox(f"Yes, delete run {key[:12]}", key="history_confirm")
if st.button("Delete run", disabled=not confirm, key="history_delete"):
    if store.delete(key, imported=bool(rec.origin)):
        st.session_state.pop("history_confirm", None)
        st.toast(f"Deleted {key[:12]}")
        st.rerun()
    else:
        st.warning(f"Run {key[:12]} was already gone.")


# ---------------------------------------------------------------------------------------------
# Two runs side by side: configs diffed, headline metrics with intervals, figure as HTML


def pair_section(store, records: list) -> None:
    st.subheader("Two runs side by side")
    if len(records) < 2:
        st.caption("Two stored runs (after the filters) are needed to compare.")
        return
    if not st.toggle("Compare two runs", key="history_pair"):
        return
    by = {r.key + (" imported" if r.origin else ""): r for r in records}
    keys = list(by)

    def label(k: str) -> str:
        r = by[k]
        return (f"{k[:12]} · {current_kind(r.kind)} · {setting(r.kind, r.config)}"
                + (" · imported" if r.origin else ""))

    c1, c2 = st.columns(2)
    first = next((i for i, k in enumerate(keys) if by[k].kind != "sweep"), 0)  # a run, not a grid
    ka = c1.selectbox("Run A", keys, index=first, key="history_a", format_func=label)
    # B defaults to the next run of A's kind (two runs of one kind are what a diff is for)
    same = [i for i, k in enumerate(keys) if k != ka and by[k].kind == by[ka].kind]
    kb = c2.selectbox("Run B", keys, index=same[0] if same else 1, key="history_b",
                      format_func=label)
    ra, rb = by[ka], by[kb]
    a, b = read_run(store, ra), read_run(store, rb)
    ca, cb = migrate(ra.config)[0], migrate(rb.config)[0]
    names = list(dict.fromkeys(
        headline_metric_names(current_kind(ra.kind), ca, ra.metrics)
        + headline_metric_names(current_kind(rb.kind), cb, rb.metrics)))
    left, right = st.columns([1.2, 1])
    with left:
        st.markdown("**Headline metrics** (95 % intervals where the run scored one)")
        if names:
            st.dataframe(metric_rows(names, a, b), hide_index=True, width="stretch")
        else:
            st.caption("Neither run reports headline metrics.")
    with right:
        diff = config_diff(ca, cb)
        st.markdown(f"**Config diff** ({len(diff)} field{'' if len(diff) == 1 else 's'} "
                    f"differ{'s' if len(diff) == 1 else ''})")
        if diff:
            from dashboard.base.format import titled

            # values by title (the field column keeps the config's path a user types)
            # a sweep's attacks are its base's kind's
            fams = {current_kind(r.kind if r.kind != "sweep"
                                 else str((r.config.get("base") or {}).get("kind", "")))
                    for r in (ra, rb)}
            kind = fams.pop() if len(fams) == 1 else None
            diff = [{**r, "A": titled(r["A"], kind), "B": titled(r["B"], kind)} for r in diff]
            st.dataframe(diff, hide_index=True, width="stretch", height=min(420, 38 + 35 * len(diff)))
        else:
            st.caption("Same config (another engine or seed-free field only).")
    if names:
        fig = pair_figure(names, a, b, (f"A {ka[:8]}", f"B {kb[:8]}"))
        st.plotly_chart(fig, width="stretch", key="history_pair_chart")
        h1, h2, _ = st.columns([1, 1, 3])
        h1.download_button("Figure (standalone HTML)", lambda: figure_html(fig),
                           file_name=f"runs_{ka[:8]}_{kb[:8]}.html", mime="text/html",
                           key="history_pair_html")
        h2.download_button("Both runs (JSON)", lambda: export_bytes([ra, rb], "json"),
                           file_name=f"runs_{ka[:8]}_{kb[:8]}.json", mime="application/json",
                           key="history_pair_json")


pair_section(store, records)


# ---------------------------------------------------------------------------------------------
# Store: its size by kind and engine fingerprint, and clean-up (cache.gc; CLI: privlab du / gc)


def store_section(store) -> None:
    from cache.gc import collect, format_bytes, store_usage

    st.subheader("Store")
    u = store_usage(store)
    st.caption(f"{format_bytes(u['total_bytes'])} in all: {counted(u['runs_count'], 'run')} "
               f"({format_bytes(u['runs_bytes'])}), {u['stage_entries']} cached stages "
               f"({format_bytes(u['stages_bytes'])}), index {format_bytes(u['index_bytes'])}. "
               "Runs and stages of an older engine are never served again.")

    def label(r) -> str:
        return f"{r['engine']} ({'current' if r['current'] else OLDER})"

    rows = [{"what": "runs", "kind / stage": r["kind"], "engine": label(r), "count": r["runs"],
             "MB": round(r["bytes"] / 1e6, 3)} for r in u["runs"]]
    rows += [{"what": "stages", "kind / stage": r["stage"], "engine": label(r), "count": r["entries"],
              "MB": round(r["bytes"] / 1e6, 3)} for r in u["stages"]]
    left, right = st.columns([3, 2])
    left.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    if u["by_engine"]:
        # plotly, as every other plot of the lab: st.bar_chart's Vega-Lite logs two warnings
        # in the browser console for a horizontal bar chart (issue #20 item 8: a quiet console)
        import plotly.graph_objects as go

        eng = u["by_engine"]
        fig = go.Figure(go.Bar(x=[r["bytes"] / 1e6 for r in eng], y=[label(r) for r in eng],
                               orientation="h", hovertemplate="%{y}: %{x:.3f} MB<extra></extra>"))
        fig.update_layout(height=120 + 36 * len(eng), margin={"l": 10, "r": 10, "t": 10, "b": 10},
                          xaxis_title="MB", yaxis={"automargin": True})
        right.plotly_chart(fig, width="stretch", key="history_usage_chart")
    c1, c2, c3 = st.columns([2, 2, 2])
    older = c1.checkbox("Remove older engines' runs and stages", value=True, key="history_gc_older")
    beyond = c2.checkbox("Then remove least recently used beyond", key="history_gc_beyond")
    limit_mb = number_ui("Size limit (MB)", key="history_gc_mb", where=c3, lo=0.0,
                         default=float(round(u["total_bytes"] / 2e6, 1)), disabled=not beyond)
    if beyond and limit_mb is None:  # nothing is planned from an empty or invalid limit
        return
    max_bytes = int(limit_mb * 1e6) if beyond else None
    if not (older or beyond):
        return
    plan = collect(store, older_engines=older, max_bytes=max_bytes, dry_run=True)
    st.caption(f"Clean-up: {plan.summary()}.")
    sure = st.checkbox("Yes, remove them", key="history_gc_confirm", disabled=not plan.removed)
    if st.button("Clean up", disabled=not (sure and plan.removed), key="history_gc_run"):
        done = collect(store, older_engines=older, max_bytes=max_bytes)
        st.session_state.pop("history_gc_confirm", None)
        st.toast(done.summary())
        st.rerun()


store_section(store)
