"""The "Paper check" section: each paper's headline claims beside ours (:mod:`core.papers`).

Reads only stored benchmark files (no run); the paper-scale CUDA presets, not run here, show
the command and a CPU time estimate from measured step costs, marked as estimates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from core import papers

ESTIMATE_MARK = "estimate · "


def table_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as displayed: one line per claim; a largest-preset cell that is a CPU estimate
    for an unrun CUDA preset starts with :data:`ESTIMATE_MARK`."""
    out = []
    for r in rows:
        big = r["ours_largest"]
        big_text = (ESTIMATE_MARK if big.get("estimate") else "") + big["text"]
        out.append({
            "paper": r["paper"],
            "claim": r["statement"],
            "paper's number": r["paper_number"],
            "paper's setting": r["paper_setting"],
            "ours (default)": r["ours_default"]["text"],
            "metric · our setting": f"{r['metric']} · {r['our_setting']}",
            "ours (largest preset)": big_text,
            "direction": papers.holds_text(r["direction_holds"])
            + (" (within intervals)" if r["ours_default"].get("resolved") is False else ""),
        })
    return pd.DataFrame(out)


def _stored_runs() -> list[dict[str, Any]]:
    """Preset runs in the result store (none when the store cannot be read: the table still
    shows the benchmark numbers)."""
    from cache.errors import StoreError
    from dashboard.widgets import get_store

    try:
        return papers.runs_from_records(get_store().list())
    except (StoreError, OSError):
        return []


def paper_check_section(root: Path | None = None, *, cuda: bool | None = None) -> None:
    """Draw the section (the Home page calls it once)."""
    st.subheader("Paper check")
    rows = papers.build_table(root or papers.ROOT, cuda=cuda, runs=_stored_runs())
    head = papers.headline(rows)
    st.markdown(
        f"**{head['paper_claims_direction_holds']} of {head['paper_claims_checked']}** measured "
        f"claims hold their paper's direction ({head['paper_claims_declared']} declared; "
        f"{head['paper_claims_within_intervals']} of them within their stored 95 % intervals, "
        "where the direction is not resolved). Our "
        "numbers are read from the stored benchmark results each claim names; the paper's are "
        "quoted from its tables. Where a claim fails here, both numbers stay on the table.")
    st.dataframe(table_frame(rows), hide_index=True, width="stretch")
    if any(r["ours_largest"].get("estimate") for r in rows):
        st.caption(
            f"'{ESTIMATE_MARK.strip(' ·')}': the paper-scale preset (CIFAR-10 / CelebA from "
            "$PRIVLAB_DATA_DIR at the papers' data sizes and epochs; our runners' encoders, "
            "LeNet-5 where the paper used it) runs on CUDA and was not run here; the times are "
            "extrapolated from a few SGD steps of the paper's model and of the preset's own "
            "model, timed on this CPU with a synthetic batch of the same shape "
            "(python -m benchmarks papers).")
    with st.expander("Where each number comes from"):
        for r in rows:
            srcs = r["ours_default"].get("sources") or []
            cmd = r["ours_largest"].get("command")
            st.markdown(f"- **{r['claim_id']}**: {', '.join(f'`{s}`' for s in srcs) or 'constant'}"
                        f"; re-measure: `{r['command']}`" + (f"; preset: `{cmd}`" if cmd else "")
                        + (f". {r['note']}" if r["note"] else ""))
