"""The LiRA reference preset on the Membership page (:mod:`core.attacks.lira_reference`): the setting,
its estimated cost here and on a GPU, the published figures beside ours once a run is stored,
and its own Run button where CIFAR-10 is present (the one-line refusal where it is not)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.attacks import lira_reference as L
from core.engine.costs import format_count, format_duration
from core.foundation.parts import ARCHITECTURES, attack_titles

__all__ = ["comparison_table", "lira_reference_panel"]


def comparison_table(result: Any = None) -> list[dict[str, str]]:
    """Rows for the page: attack (its title), published and our AUC and TPR at 0.1 % FPR."""
    titles = attack_titles("membership")

    def pct(v: float | None) -> str:
        return "not run" if v is None else f"{100 * v:.2f} %"

    def auc(v: float | None) -> str:
        return "not run" if v is None else f"{v:.4f}"

    return [{"attack": titles.get(r["attack"], r["attack"]),
             "AUC (published)": auc(r["published_auc"]), "AUC (ours)": auc(r["ours_auc"]),
             "TPR @ 0.1 % FPR (published)": pct(r["published_tpr_at_0p1pct_fpr"]),
             "TPR @ 0.1 % FPR (ours)": pct(r["ours_tpr_at_0p1pct_fpr"])}
            for r in L.comparison_rows(result)]


def setting_text(cfg: Any) -> str:
    """The preset's setting and its estimated training cost (:func:`core.attacks.lira_reference.cost`:
    measured on this machine or estimated, as its caption says)."""
    c = L.cost()
    arch = ARCHITECTURES.get(cfg.model.arch).title
    return (f"CIFAR-10, **{arch}** ({c.params:,} parameters, {format_count(c.forward_flops)}FLOPs "
            f"forward per image), {cfg.train.members:,} members, {cfg.train.epochs} epochs, "
            f"{cfg.attack.shadows} shadow models, LiRA online and offline. Estimated training "
            f"({format_count(c.passes or 0)} images): **{format_duration(c.cpu_seconds)} on a "
            f"CPU** ({c.cpu_based_on}); **{format_duration(c.gpu_seconds)} on a GPU** "
            f"({c.gpu_based_on}).")


def lira_reference_panel(key: str = "mi_lira_ref") -> None:
    """An expander: the reference setting, its cost, published vs ours, and Run."""
    from core.data.errors import DataError
    from dashboard.base.widgets import run_with_progress
    from dashboard.components.cost_later import cost_or_placeholder

    cfg = L.reference_config()
    with st.expander("Paper preset: the LiRA reference setting (Carlini et al. 2022)"):
        cost_or_placeholder(st.container(), lambda: setting_text(cfg), arch=cfg.model.arch,
                            width=float(cfg.model.width), shape=(3, 32, 32), classes=10,
                            timed=True, draw=st.markdown)
        st.caption(f"Differences from the reference code: {L.DIFFERENCES}.")
        try:
            L.check_data()
            missing = None
        except DataError as err:
            missing = str(err)
        result = None
        if missing is None:
            clicked = st.button("Run the LiRA reference setting", key=f"{key}_run")
            result = run_with_progress(cfg, label="LiRA reference (CIFAR-10, WRN-28-2)",
                                       start=clicked)
        else:
            st.info(missing.removeprefix("data.name: "))
        st.table(comparison_table(result))
        st.caption(f"Published: {L.SOURCE}.")
