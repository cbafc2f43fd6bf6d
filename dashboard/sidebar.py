"""The sidebar every page shares: data set, seed, device (kept in st.session_state)."""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

import streamlit as st

from core.config.schema import ProjectionConfig
from dashboard import state
from dashboard.components.inputs import number_ui, report_problem


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


#: what a fresh clone has: the data sets embedded in privlab's dependencies
EMBEDDED_HINT = "digits, mnist5k, faces (images) and synthetic (tabular) need no files"


def how_to_get(name: str) -> str:
    """How to make a missing data set available, in one paragraph (Adult: the folder,
    ``PRIVLAB_DATA_DIR`` and the two file names)."""
    if name == "adult":
        from core.data.adult import SHA256, URL
        from core.data.files import ENV_DATA_DIR, data_root_candidates

        files = " and ".join(f"`{f}`" for f in SHA256)
        where = data_root_candidates(name, None)[0]
        return (f"Put the UCI Adult files {files} (from {URL}) in `{where}`, or set "
                f"`{ENV_DATA_DIR}` to a folder holding `adult/adult.data` and "
                f"`adult/adult.test` before starting the dashboard; then reload.")
    return missing_reason(name)


def data_problem(name: str) -> str | None:
    """None when ``name`` can load now; else the one message saying it cannot, how to get it,
    and what runs without files."""
    row = {r["name"]: r for r in dataset_rows()}.get(name)
    if row is None or row["available"]:
        return None
    kind = "your registered" if row["source"] == "user" else "a real"
    return (f"**{name}** is {kind} data set whose files are not on this machine, so Run is off. "
            f"{how_to_get(name)} Meanwhile {EMBEDDED_HINT}.")


def require_data(name: str, *, key: str, where: Any = None) -> bool:
    """Say plainly when ``name``'s files are missing (:func:`data_problem`) and keep the page's
    Run disabled (a problem of the widget ``key``, :mod:`dashboard.components.inputs`).
    Nothing changes the chosen data set: the page and the sidebar keep it."""
    message = data_problem(name)
    report_problem(key, message, f"data set {name} missing")
    where = st if where is None else where
    if message is not None:
        where.error(message, icon=":material/folder_off:")
    side = state.settings().dataset
    if side != name:  # said, never done silently: the sidebar keeps its own choice
        where.caption(f"This page runs on **{name}**; the sidebar's data set (**{side}**) is "
                      "unchanged.")
    return message is None


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
        # a text box parsed as typed: an empty or invalid seed disables every page's Run
        number_ui("Seed", key=state.KEY_SEED, default=state.DEFAULT_SEED,
                  field=(ProjectionConfig, "seed"),
                  help="Seeds the splits, the models and the attackers (same seed, same "
                       "numbers).")
        device = st.selectbox("Device", state.DEVICES, key=state.KEY_DEVICE,
                              help="auto = CUDA when available, else CPU.")
        if device == "cuda" and not cuda_available():
            st.warning("No CUDA device here: runs with device=cuda will fail; use auto or cpu.")
