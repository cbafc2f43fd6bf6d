"""The attack table of a Result: every attacker's accuracy, balanced accuracy, AUC and
advantage with their 95 % intervals, bars, ROC curves, the strongest attacker, and the
threat-model card of each attack (:data:`core.foundation.parts.ATTACKS`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.base.format import (
    fmt,
    fmt_interval,
    fmt_with_interval,
    interval,
    metric,
    n_scored,
    near_chance_text,
)
from dashboard.components._figures import figure
from dashboard.components.caveats import flag_rows, metric_tile, roc_grey_below

MEASURES = {"acc": "accuracy", "bacc": "balanced acc", "auc": "AUC", "adv": "advantage"}
RAW_PREFIX = "raw_"
#: the strongest attacker on the release, under the cross-paper names
BEST = {"attack_auc_best": "AUC", "attack_bacc_best": "balanced acc",
        "advantage_best": "advantage", "tpr_at_1pct_fpr": "TPR at 1 % FPR",
        "tpr_at_0p1pct_fpr": "TPR at 0.1 % FPR"}


def _part(who: str):
    """The registered attack behind a table row (``raw_mlp`` is the ``mlp`` attack on raw x)."""
    from core.foundation.parts import ATTACKS

    name = who.removeprefix(RAW_PREFIX)
    return ATTACKS.get(name) if name in ATTACKS else None


def threat_card_lines(attackers: Mapping[str, str]) -> list[str]:
    """One markdown line per attacker: what it sees, what it knows, its goal."""
    lines = []
    for who, title in attackers.items():
        part = _part(who)
        if part is None:
            continue
        t = part.threat.as_dict()
        sees, knows = t["sees"], t["knows"]
        if who.startswith(RAW_PREFIX):
            sees = "the raw features x of the target rows (no defense: the leakage it starts from)"
            knows = "auxiliary rows (aux split) with their attribute values, as raw x"
        lines.append(f"- **{title}** — sees: {sees}; knows: {knows}; goal: {t['goal']}.")
    return lines


def _row(result: Any, who: str, title: str, short: str, chance: float | None) -> dict | None:
    vals = {m: metric(result, f"attack_{who}_{m}") for m in MEASURES}
    if all(v is None for v in vals.values()):
        return None
    gap = metric(result, f"gap_{who}")  # accuracy minus the majority value's rate
    ns = [n_scored(result, f"attack_{who}_{m}") for m in MEASURES]
    row: dict[str, Any] = {"attacker": title, "short": short}
    for m, label in MEASURES.items():
        row[label] = fmt_with_interval(result, f"attack_{who}_{m}")
        row[m] = vals[m]
        iv = interval(result, f"attack_{who}_{m}")
        row[f"{m}_lo"], row[f"{m}_hi"] = (iv if iv else (None, None))
    row["gap to majority"] = fmt(gap)
    row["n"] = next((n for n in ns if n is not None), None)
    # only an interval that contains chance may call a score near chance
    texts = {"bacc": near_chance_text(result, f"attack_{who}_bacc"),
             "AUC": near_chance_text(result, f"attack_{who}_auc")}
    row["near chance?"] = next((f"{lab} {t}" for lab, t in texts.items() if t), "")
    return row


def strongest_attacker(result: Any, attackers: Mapping[str, str]) -> None:
    """The strongest attacker on the release (the engine picks it, by AUC) and its numbers."""
    best = result.info.get("best_attacker")
    shown = [(n, lab) for n, lab in BEST.items() if metric(result, n) is not None]
    if not best and not shown:
        return
    title = attackers.get(best, best) if best else "n/a"
    st.markdown(f"**Strongest attacker on the release: {title}** (the engine's pick, by AUC)")
    cols = st.columns(max(len(shown), 1))
    ivs = []
    for col, (n, lab) in zip(cols, shown):
        v = metric(result, n)
        iv = interval(result, n)
        metric_tile(col, result, lab, fmt(v), n,
                    help=(f"95 % interval {fmt_interval(iv)}" if iv else None))
        if iv:
            ivs.append(f"{lab} {fmt_interval(iv)}")
    n = next((n_scored(result, m) for m in BEST if n_scored(result, m) is not None), None)
    if ivs:
        st.caption("95 % intervals: " + " · ".join(ivs)
                   + (f" (over n = {n} test rows)" if n else ""))


def attack_table(result: Any, *, attackers: Mapping[str, str], key: str,
                 short: Mapping[str, str] | None = None) -> None:
    """Table + bars + ROC of the attackers in ``attackers`` (who -> title) that the Result
    scored, every number with its 95 % interval, and the threat model of each attack.

    Plot keys: ``{key}_attack_bars``, ``{key}_roc``."""
    short = short or {}
    chance = metric(result, "chance")
    k = int(metric(result, "n_values") or len(result.info.get("attribute_values", [])) or 2)
    attr = result.info.get("private_attribute", "the attribute")
    rows = [r for who, title in attackers.items()
            if (r := _row(result, who, title, short.get(who, title), chance)) is not None]
    if not rows:
        st.warning("This result has no attack metrics.")
        return
    strongest_attacker(result, attackers)
    rows = flag_rows(rows, result, [[f"attack_{w}_{m}" for m in MEASURES]
                                    for w in attackers if any(r["attacker"] == attackers[w]
                                                              for r in rows)])
    cols = ["attacker", *MEASURES.values(), "gap to majority", "caveat"]
    # a table, not a data grid: its columns wrap at 1280 px instead of scrolling the last
    # ones (and their headers) out of the box
    st.table(pd.DataFrame(rows)[cols], hide_index=True, border="horizontal")
    ns = sorted({r["n"] for r in rows if r["n"] is not None})
    over = (f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}–{ns[-1]}") if ns else "the"
    majority = metric(result, "attribute_majority")
    gap_text = (f" The gap is accuracy minus the majority value's rate {fmt(majority)} (always "
                "guessing it); not 1/k." if majority is not None else "")
    st.caption(f"Each score with its 95 % interval [lo, hi] over {over} scored test rows. Chance = "
               f"{fmt(chance)} (1/k, k = {k} values of {attr}); AUC chance = 0.5. A score is "
               "called near chance only when its interval contains chance. The raw-x rows attack "
               "the undefended data: the leakage the defense starts from." + gap_text)
    near = [f"{r['attacker']}: {r['near chance?']}" for r in rows if r["near chance?"]]
    if near:
        st.caption("Near chance (the 95 % interval contains chance): " + "; ".join(near) + ".")
    left, right = st.columns(2)
    left.plotly_chart(figure("attack_bars_figure", rows, chance=chance,
                             title="attack scores (95 % intervals)"),
                      width="stretch", key=f"{key}_attack_bars")
    rocs = {title: (result.artifacts[f"roc_{w}_fpr"], result.artifacts[f"roc_{w}_tpr"])
            for w, title in attackers.items()
            if f"roc_{w}_fpr" in result.artifacts and f"roc_{w}_tpr" in result.artifacts}
    if rocs:
        grey = roc_grey_below(result)
        right.plotly_chart(figure("roc_figure", rocs, title="ROC on the test representations",
                                  grey_below=grey), width="stretch", key=f"{key}_roc")
        if grey is not None:
            right.caption(f"⚠ Greyed: FPR below {grey:.2g}, read off fewer than 10 false "
                          "positives (too few test rows with the attribute's negative value).")
    elif k > 2:
        right.caption(f"No ROC curve: {attr} has {k} values (AUC is one-vs-rest macro).")
    cards = threat_card_lines({r: attackers[r] for r in attackers
                               if any(row["attacker"] == attackers[r] for row in rows)})
    if cards:
        with st.expander("Threat models: what each attacker sees and knows"):
            st.markdown("\n".join(cards))
