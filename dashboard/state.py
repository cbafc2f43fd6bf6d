"""Settings shared by every page (sidebar: data set, seed, device) kept in st.session_state.

Pages read them through :func:`settings`, which falls back to the defaults so that a page also
runs on its own (``AppTest.from_file("dashboard/views/data.py")``) without the sidebar.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

DEFAULT_DATASET = "digits"
DEFAULT_SEED = 0
DEVICES = ("auto", "cpu", "cuda")

KEY_DATASET = "privlab_dataset"
KEY_SEED = "privlab_seed"
KEY_DEVICE = "privlab_device"


@dataclass(frozen=True)
class Settings:
    dataset: str
    seed: int
    device: str


def settings() -> Settings:
    """The sidebar's data set, seed and device (defaults when the sidebar has not run)."""
    ss = st.session_state
    return Settings(
        dataset=str(ss.get(KEY_DATASET, DEFAULT_DATASET)),
        # None: the sidebar's seed box is empty or invalid; every page's Run is disabled then
        # (dashboard.components.inputs), so this stand-in never reaches a run
        seed=int(DEFAULT_SEED if ss.get(KEY_SEED) is None else ss[KEY_SEED]),
        device=str(ss.get(KEY_DEVICE, "auto")),
    )


def follow_sidebar(page_key: str, allowed: list[str], fallback: str) -> None:
    """Make a page-level data set select default to the sidebar's choice.

    When the sidebar value changes (or on first visit) the page widget ``page_key`` is reset to
    it, if the page allows that data set; otherwise the page keeps its own choice (or
    ``fallback`` on first visit).
    """
    ss = st.session_state
    side = settings().dataset
    seen_key = f"_{page_key}_sidebar_seen"
    if ss.get(seen_key) != side or page_key not in ss or ss[page_key] not in allowed:
        ss[seen_key] = side
        if side in allowed:
            ss[page_key] = side
        elif page_key not in ss or ss[page_key] not in allowed:
            ss[page_key] = fallback
