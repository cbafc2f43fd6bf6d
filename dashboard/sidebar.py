"""The sidebar every page shares: data set, seed, device (kept in st.session_state)."""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

import streamlit as st

from dashboard import state


def dataset_rows() -> list[dict[str, Any]]:
    """``core.data.describe_datasets()`` (availability is re-checked on every rerun: cheap)."""
    from core.data import describe_datasets

    return describe_datasets()


def missing_reason(name: str) -> str:
    """Where a real data set's files are expected (from the data layer's directory rules);
    for a registered set, where its files were."""
    from core.data.files import ENV_DATA_DIR, data_root_candidates
    from core.data.user import get_entry

    try:
        entry = get_entry(name)
    except ValueError as exc:  # a broken registration
        return str(exc)
    if entry is not None:
        return (f"its registered files are not at {entry['path']} any more. Put them back, or "
                f"register them again (privlab data add {name} ... --replace).")

    where = data_root_candidates(name, None)[0]
    return (f"its files are not in {where}. Put them there (or set ${ENV_DATA_DIR}); "
            "they are downloaded when the machine is online.")


def dataset_label(row: dict[str, Any]) -> str:
    if row["source"] == "embedded":
        return f"{row['name']} · embedded"
    if row["source"] == "user":
        return f"{row['name']} · your data" + ("" if row["available"] else " · files missing")
    return f"{row['name']} · real" + ("" if row["available"] else " · files missing")


@functools.cache
def cuda_available() -> bool:
    """Whether torch sees a CUDA device; probed once per process, and only when asked (the
    sidebar asks only when device = cuda is chosen): importing torch costs seconds and
    hundreds of MB, which no page render should pay. No torch installed: False."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def render_sidebar() -> None:
    rows = dataset_rows()
    by_name = {r["name"]: r for r in rows}
    ss = st.session_state
    if ss.get(state.KEY_DATASET) not in by_name:
        ss[state.KEY_DATASET] = state.DEFAULT_DATASET
    ss.setdefault(state.KEY_SEED, state.DEFAULT_SEED)
    ss.setdefault(state.KEY_DEVICE, "auto")

    with st.sidebar:
        st.markdown("**Shared settings**")
        name = st.selectbox(
            "Data set", list(by_name), key=state.KEY_DATASET,
            format_func=lambda n: dataset_label(by_name[n]),
            help="Used by every page as its default. Embedded sets work offline; real sets need "
                 "their files; add your own CSV or image folder with `privlab data add`.",
        )
        row = by_name[name]
        if not row["available"]:
            kind = "your registered" if row["source"] == "user" else "a real"
            st.warning(f"**{name}** is {kind} data set and is unavailable: {missing_reason(name)}")
        else:
            st.caption(f"{row['description']} · task: {row['task']} · private: "
                       f"{', '.join(row['attributes'])}")
        st.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key=state.KEY_SEED,
                        help="Seeds the splits, the models and the attackers (same seed, same "
                             "numbers).")
        device = st.selectbox("Device", state.DEVICES, key=state.KEY_DEVICE,
                              help="auto = CUDA when available, else CPU.")
        if device == "cuda" and not cuda_available():
            st.warning("No CUDA device here: runs with device=cuda will fail; use auto or cpu.")
