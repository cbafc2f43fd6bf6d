"""The utility–privacy tradeoff plot: one point per cached knob value (with its 95 % interval),
the current setting starred, the undefended run and the chance level always marked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from dashboard.components._figures import figure


def tradeoff_plot(points: Sequence[Any], *, current: float | None,
                  undefended: tuple[float, float] | None, chance: float | None, key: str,
                  symbol: str = "λ", y_title: str = "attack AUC",
                  x_title: str = "utility (test accuracy)") -> None:
    """Draw :class:`core.tradeoff.TradeoffPoint` s (plot key ``{key}_tradeoff``).

    ``undefended`` is ``(utility, attack)`` of the same settings with no defense, or None when
    that run is not stored yet (said under the plot); ``chance`` the attack's chance level."""
    if not points and undefended is None:
        st.info("No point to draw yet: run the settings (or a sweep) first.")
        return
    st.plotly_chart(figure("tradeoff_figure", list(points), current=current, undefended=undefended,
                           chance=chance, symbol=symbol, x_title=x_title, y_title=y_title),
                    width="stretch", key=f"{key}_tradeoff")
    notes = []
    if undefended is None:
        notes.append("Undefended point not computed yet (the same settings with defense none).")
    if chance is None:
        notes.append("Chance level unknown for this metric.")
    if notes:
        st.caption(" ".join(notes))
