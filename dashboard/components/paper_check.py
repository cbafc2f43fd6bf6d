"""The "Paper check" section: each paper's claims beside ours, with a verdict decided by the
95 % interval of the compared difference at the largest scale measured (:mod:`core.paper_check.papers`).

Reads only stored benchmark files (no run). The table keeps five short columns whose cells
wrap, so that it fits a 1280 px window (the paper-architecture column among them, with a
warning naming every claim whose verdict differs there); the quote, every scale's reading, the sources and the paper-scale
preset (CUDA, not run here: a CPU time estimate, marked as such) are in the expander below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from core.paper_check import arch as paper_arch
from core.paper_check import papers

ESTIMATE_MARK = "estimate · "
COLUMNS = ("verdict", "claim", "ours (largest scale measured)", "with the paper's architecture",
           "paper · source")


def _ours_short(r: dict[str, Any]) -> str:
    """The deciding cell in a few words, the interval first (it is what the verdict reads):
    "Δ d [lo, hi] · ends", or "no interval · ends · why"."""
    cell = next((c for c in r["cells"] if c.get("setting") == r["decided_by"]), None)
    if cell is None:
        return f"{papers.NOT_MEASURED}: {r['why']}"
    ends = cell["text"].split(";", 1)[0]
    old = f" · {paper_arch.OLDER_SHORT}" if cell.get("stale") else ""
    iv = cell.get("interval")
    if iv:
        f = papers.fmt_value
        return f"Δ {f(iv['estimate'])} [{f(iv['lo'])}, {f(iv['hi'])}] · {ends}{old}"
    return f"no interval · {ends} · {cell.get('why', '')}{old}"


def table_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as displayed (:data:`COLUMNS`), one line per claim."""
    return pd.DataFrame([{
        "verdict": r["verdict"],
        "claim": r["statement"],
        "ours (largest scale measured)": _ours_short(r),
        "with the paper's architecture": paper_arch.short(r),
        "paper · source": f"{r['paper']} · " + (r["citation"] or "— (our own finding)"),
    } for r in rows], columns=list(COLUMNS))



def _stored_runs() -> list[dict[str, Any]]:
    """Preset runs in the result store (none when the store cannot be read: the table still
    shows the benchmark numbers)."""
    from cache.errors import StoreError
    from dashboard.base.widgets import get_store

    try:
        return papers.runs_from_records(get_store().list())
    except (StoreError, OSError):
        return []


def paper_check_section(root: Path | None = None, *, cuda: bool | None = None) -> None:
    """Draw the section (the Home page calls it once)."""
    st.subheader("Paper check")
    rows = papers.build_table(root or papers.ROOT, cuda=cuda, runs=_stored_runs())
    head = papers.headline(rows)
    c1, c2, c3 = st.columns(3)
    c1.metric("holds", head["paper_claims_holds"])
    c2.metric("does not hold", head["paper_claims_does_not_hold"])
    c3.metric("not resolved", head["paper_claims_not_resolved"])
    st.caption(
        papers.counts_sentence(head) + ". A claim holds when the whole 95 % interval of the "
        "compared difference is on the paper's side, does not hold when it is wholly on the "
        "other side, and is not resolved otherwise or where a result file holds only a point; "
        "the largest scale measured decides; 'ours' reads Δ = test − base with its 95 % "
        "interval, then the two ends (no interval: why). Our numbers are read from the stored benchmark "
        "results; the papers' are quoted from their own tables and figures.")
    ah = paper_arch.headline(rows, papers.PAPER)
    st.caption(
        f"With the paper's architecture: {ah['paper_arch_claims_measured']} of "
        f"{ah['paper_arch_claims_total']} paper claims measured with the paper's own model "
        f"family ({ah['paper_arch_newly_run']} from runs of the papers' conv nets on the "
        "largest data here, width and protocol reductions stated per claim below; the others "
        "where our runner already trains the paper's model), same ends, seeds and interval "
        "rule as the first column.")
    changed = paper_arch.changes_sentence(rows)
    if changed:
        st.warning(changed)
    paper_rows = [r for r in rows if r["origin"] == papers.PAPER]
    own_rows = [r for r in rows if r["origin"] == papers.OWN]
    # a static table: its cells wrap, so every column and every word stays on screen at
    # 1280 px (a scrolling grid cut the claims and hid the last columns)
    st.table(table_frame(paper_rows), hide_index=True, border="horizontal")
    if own_rows:
        st.markdown("**Our own findings** (no paper makes these claims)")
        st.table(table_frame(own_rows), hide_index=True, border="horizontal")
    estimates = [r for r in rows if r["ours_largest"].get("estimate")]
    if estimates:
        st.caption(
            f"'{ESTIMATE_MARK.strip(' ·')}': the paper-scale preset (CIFAR-10 / CelebA from "
            "$PRIVLAB_DATA_DIR at the papers' data sizes and epochs; our runners' encoders, "
            "LeNet-5 where the paper used it) runs on CUDA and was not run here; the times are "
            "extrapolated from a few SGD steps of the paper's model and of the preset's own "
            "model, timed with a synthetic batch of the same shape on the CPU of the machine that "
            "made the paper check's file (python -m benchmarks papers), not necessarily this one.")
    with st.expander("Quotes, every scale's reading, sources and presets"):
        for r in rows:
            lines = [f"**{r['claim_id']}** — {r['verdict']}"
                     + (f" (decided at: {r['decided_by']})" if len(r["cells"]) > 1 else "")]
            if r["quote"]:
                lines.append(f"{r['citation']}: “{r['quote']}” — {r['paper_number']}")
            else:
                lines.append(r["paper_number"])
            for c in r["cells"]:
                srcs = ", ".join(f"`{s}`" for s in c.get("sources") or [])
                lines.append(f"{c['setting']}: {c['text']}" + (f" — {srcs}" if srcs else ""))
            big = r["ours_largest"]
            if big.get("estimate"):
                lines.append(ESTIMATE_MARK + big["text"] + f" — preset: `{big['command']}`")
            a = r.get("paper_arch")
            if a:
                cost = (f"; {len(a['seeds'])} seeds, {a['seconds']:g} s wall, "
                        f"{a['cpu_seconds']:g} s CPU" if a.get("seconds") is not None else "")
                lines.append(f"paper's architecture — {a['family']}: {a['text']}"
                             + (f" (reductions: {a['reductions']}" if a.get("reductions") else "")
                             + (f"; protocol: {a['protocol']}" if a.get("protocol") else "")
                             + (")" if a.get("reductions") else "") + cost)
            lines.append(f"re-measure: `{r['command']}`" + (f". {r['note']}" if r["note"] else ""))
            st.markdown("\n\n".join(lines))
