"""Per-round curves of a federated run (losses; utility and attack)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.components._figures import figure
from dashboard.components.run_history import short_name

LOSSES = ("ce_loss", "jsd_loss")
SCORES = ("utility_acc", "in_training_acc", "attack_logreg_auc")


def round_curves(result: Any, *, key: str, title: str | None = "Per round") -> bool:
    """Two plots over ``curves["round"]`` (keys ``{key}_curve_losses``, ``{key}_curve_accs``);
    False when the Result has no per-round curves."""
    curves = result.curves
    if not curves.get("round"):
        return False
    if title:
        st.subheader(title)
    x = curves["round"]
    g1, g2 = st.columns(2)
    # legends read display names (core.foundation.metric_schema), never raw keys
    losses = {short_name(n): curves[n] for n in LOSSES if n in curves}
    accs = {short_name(n): curves[n] for n in SCORES if n in curves}
    if losses:
        g1.plotly_chart(figure("lines_figure", x, losses, title="losses (mean over sampled devices)",
                               x_title="round"), width="stretch", key=f"{key}_curve_losses")
    if accs:
        g2.plotly_chart(figure("lines_figure", x, accs, title="utility and attack", x_title="round"),
                        width="stretch", key=f"{key}_curve_accs")
    return True
