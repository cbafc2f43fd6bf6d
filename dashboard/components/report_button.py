"""The "Privacy report" of a stored run or a comparison on a page: the release recommendation
(one sentence, from :func:`core.report.recommend`) at once, and in a box opened on request the
release level and the report as self-contained HTML and as PDF (printed by headless Chromium
when the download is asked for)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from core.report.rules import DEFAULT_LEVEL  # the release level a page starts from
from dashboard.components.deferred import deferred


def _level(key: str) -> float:
    return float(st.session_state.get(f"{key}_report_level", DEFAULT_LEVEL))


def report_button(target: Any, *, key: str, store_target: Any | None = None,
                  sections: Sequence[Mapping[str, Any]] = (), said_above: bool = False
                  ) -> None:
    """The recommendation for ``target`` (a stored Result or an assembled comparison) and the
    "Privacy report" box; ``store_target`` is what the report is built from (a run key or a
    ComparisonSpec; default: the Result's key, the comparison's spec); ``sections``: more
    report sections the page holds (the advisor's answer); ``said_above``: the page already
    shows the recommendation in its own block (Compare's advisor), so none is drawn here."""
    from core.foundation.parts import FAMILIES
    from core.report import build_report, recommend

    if getattr(target, "key", "x") is None:  # a run that was not stored has no report
        return
    if hasattr(target, "metrics") and target.kind not in FAMILIES:  # a projection: no attack
        return
    source = store_target if store_target is not None else (
        getattr(target, "spec", None) or getattr(target, "key", None))
    from dashboard.base.widgets import get_store

    try:
        rec = recommend(target, store=get_store(), level=_level(key))
    except (LookupError, ValueError, OSError) as exc:  # points missing, a damaged entry
        st.caption(f"Privacy report unavailable: {exc}")
        return
    if not said_above:  # a page with its own answer says the release rule's in that block
        # Material icons: every browser draws them from the font Streamlit serves (an emoji
        # needs an emoji font the machine may not have)
        icon = {True: ":material/check_circle:", False: ":material/block:",
                None: ":material/info:"}[rec.release]
        st.markdown(f"{icon} **Release recommendation:** {rec.sentence}")
    if not (box := deferred("Privacy report (HTML / PDF)", key=f"{key}_report_open",
                            icon=":material/verified_user:")):
        return
    with box:
        level = st.number_input("Release level: the largest upper 95 % bound on TPR at 1 % FPR "
                                "the rule accepts", min_value=0.001, max_value=0.5,
                                value=DEFAULT_LEVEL, step=0.01, format="%.3f",
                                key=f"{key}_report_level")
        st.caption(rec.rule_text)

        def html() -> str:
            return build_report(source, store=get_store(), level=level, sections=sections).html

        def pdf() -> bytes:
            import tempfile
            from pathlib import Path

            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "report.pdf"
                build_report(source, store=get_store(), level=level, sections=sections).to_pdf(path)
                return path.read_bytes()

        name = f"privlab_report_{key}"
        left, right = st.columns(2)
        left.download_button("Privacy report (HTML)", html, file_name=f"{name}.html",
                             mime="text/html", key=f"{key}_report_html",
                             icon=":material/description:")
        right.download_button("Privacy report (PDF)", pdf, file_name=f"{name}.pdf",
                              mime="application/pdf", key=f"{key}_report_pdf",
                              icon=":material/picture_as_pdf:")
