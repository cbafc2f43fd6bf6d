"""One component that draws a caveat next to what it qualifies (issue #20 item 3).

The caveats come from the Result (:func:`core.foundation.caveats.of_result`: ``info["caveats"]``, or what
an older Result's numbers allow deriving). Each drawing place asks for the caveats of the
metrics it draws:

- a metric tile: :func:`metric_tile` puts the flag in the tile's label and the sentence in a
  caption right under it;
- a table: :func:`flag_rows` adds a ``caveat`` column, :func:`grey_flagged` greys the flagged
  cells (a pandas Styler, which ``st.dataframe`` draws);
- a plot: :func:`roc_grey_below` (the low-FPR part of a ROC read off too few negatives) and
  :func:`plot_caveats` (what a bound plot marks) give the plot functions what to mark;
- everything else, and each caveat once more in full: :func:`caveat_list` (page_tail).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import streamlit as st

FLAG = "⚠"


def caveats_of(result: Any) -> list[dict[str, Any]]:
    from core.foundation.caveats import of_result

    return of_result(result) if result is not None else []


def for_metrics(result: Any, names: Iterable[str]) -> list[dict[str, Any]]:
    """The caveats of ``result`` that qualify any of ``names`` (each once)."""
    names = set(names)
    return [c for c in caveats_of(result) if names & set(c.get("metrics", ()))]


def flag_text(cavs: Sequence[Mapping[str, Any]]) -> str:
    """``⚠ few non-members`` (the distinct labels), or "" without caveats."""
    labels = list(dict.fromkeys(c["label"] for c in cavs))
    return f"{FLAG} {', '.join(labels)}" if labels else ""


def flag_for(result: Any, *names: str) -> str:
    return flag_text(for_metrics(result, names))


def sentence(c: Mapping[str, Any]) -> str:
    return f"{FLAG} **{c['label']}**: {c['text']}"


def metric_tile(where: Any, result: Any, label: str, value: str, *names: str,
                help: str | None = None, **kw: Any) -> list[dict[str, Any]]:
    """``where.metric(label, value)`` with the flag of the caveats qualifying ``names`` in its
    label and their sentences in a caption under the tile; returns those caveats."""
    cavs = for_metrics(result, names)
    flag = flag_text(cavs)
    where.metric(f"{label} {flag}" if flag else label, value, help=help, **kw)
    for c in cavs:
        where.caption(sentence(c))
    return cavs


def flagged_caption(where: Any, result: Any, text: str, *names: str) -> list[dict[str, Any]]:
    """``text`` as a caption, flagged with the caveats qualifying ``names``, and their
    sentences right under it; returns those caveats."""
    cavs = for_metrics(result, names)
    flag = flag_text(cavs)
    where.caption(f"{flag} · {text}" if flag else text)
    for c in cavs:
        where.caption(sentence(c))
    return cavs


def flag_rows(rows: list[dict[str, Any]], result: Any,
              names_of_row: Sequence[Iterable[str]]) -> list[dict[str, Any]]:
    """``rows`` with a ``caveat`` column: the flag of the caveats qualifying each row's metric
    names (``names_of_row[i]`` for ``rows[i]``); "" where none."""
    return [{**row, "caveat": flag_for(result, *names)} for row, names in zip(rows, names_of_row)]


def grey_flagged(frame: Any, flagged: Mapping[str, Iterable[str]]) -> Any:
    """A Styler of ``frame`` with the cells of column ``col`` greyed in the rows whose
    ``caveat`` cell carries any label of ``flagged[col]``."""
    import pandas as pd

    df = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame)
    if "caveat" not in df.columns:
        return df

    def style(row: pd.Series) -> list[str]:
        out = []
        for col in df.columns:
            labels = flagged.get(col, ())
            hit = any(lab in str(row["caveat"]) for lab in labels)
            out.append("color: #9a9a9a; background-color: #f3f3f3" if hit else "")
        return out

    return df.style.apply(style, axis=1)


def roc_grey_below(result: Any, attack: str | None = None) -> float | None:
    """The FPR below which a ROC of ``result`` (of ``attack``, or any) is read off too few
    negatives (greyed on the plot), or None."""
    xs = [float(c["where"]["fpr_max"]) for c in caveats_of(result)
          if c.get("where", {}).get("curve") == "roc" and "fpr_max" in c.get("where", {})
          and (attack is None or c["where"].get("attack") in (None, attack))]
    return max(xs) if xs else None


def plot_caveats(result: Any, plot: str) -> list[dict[str, Any]]:
    """The caveats that mark plot ``plot`` (``where["plot"]``: mse_vs_kappa, thm3,
    bounds_curve)."""
    return [c for c in caveats_of(result) if c.get("where", {}).get("plot") == plot]


def plot_caption(result: Any, plot: str) -> None:
    """The sentences of the caveats marked on plot ``plot``, right under it."""
    for c in plot_caveats(result, plot):
        st.caption(sentence(c))


def caveat_list(result: Any) -> None:
    """Every caveat of ``result`` in full, with the numbers it qualifies by display name."""
    from dashboard.base.format import display_name

    cavs = caveats_of(result)
    if not cavs:
        return
    st.markdown(f"**Caveats ({len(cavs)})** — each is also flagged beside the number it "
                "qualifies")
    lines = []
    for c in cavs:
        what = ", ".join(display_name(m) for m in c.get("metrics", ()))
        lines.append(f"- {FLAG} **{c['label']}**" + (f" ({what})" if what else "")
                     + f": {c['text']}")
    st.markdown("\n".join(lines))
