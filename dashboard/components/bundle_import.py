"""History's bundle import (an upload, with the checks of ``privlab import``:
:func:`cache.bundle.import_bundle`) and its "Recompute here" button for an imported run
(:func:`cache.bundle.recompute.recompute`, the page's job queue).

The upload's size limit is the server's ``server.maxUploadSize`` (MB; ``.streamlit/
config.toml``), checked again here. On a server bound beyond loopback, or for a visitor from
another machine, only a signed-in user (the password of ``PRIVLAB_PASSWORD``, or the OIDC
login) may import: ``PRIVLAB_INSECURE=1`` serves the lab openly, never the store's writes to
strangers.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from streamlit import config as st_config

from dashboard.base import auth


def upload_limit_mb() -> int:
    """The server's upload limit in MB (``server.maxUploadSize``)."""
    return int(st_config.get_option("server.maxUploadSize"))


def may_import() -> tuple[bool, str]:
    """(whether this session may import a bundle, why not)."""
    if not auth.beyond_loopback() or auth.signed_in():
        return True, ""
    return False, ("This server is reachable beyond loopback: only a signed-in user may import "
                   "a bundle (the operator sets PRIVLAB_PASSWORD or an OIDC login).")


def import_upload(store: Any, up: Any, *, read_only: bool) -> tuple[bool, str, list[str]]:
    """(imported?, the sentence or the one-line refusal, notes) of importing the uploaded file
    ``up`` (a binary file object with ``name`` and ``size``) into ``store``."""
    from cache.bundle import BundleError, import_bundle
    from cache.errors import StoreError

    allowed, why = may_import()
    if not allowed:
        return False, why, []
    limit = upload_limit_mb()
    if up.size > limit * 1024 * 1024:
        return False, (f"bundle: {up.name} is {up.size / 2**20:.1f} MB; allowed: at most "
                       f"{limit} MB (server.maxUploadSize)"), []
    try:
        report = import_bundle(up, store=store, read_only=read_only)
    except (BundleError, StoreError) as exc:
        return False, str(exc).splitlines()[0], []
    return True, report.sentence, list(report.notes)


def import_ui(store: Any) -> None:
    """The "Import a bundle" expander: an uploader, a read-only switch and the import."""
    allowed, why = may_import()
    limit = upload_limit_mb()
    with st.expander("Import a bundle (.zip)", expanded=False):
        st.caption(f"A bundle someone shared (at most {limit} MB): every file is checked before "
                   "anything is stored, and its runs are kept apart from the runs computed "
                   "here: shown with their origin, never served as a cached run.")
        if not allowed:
            st.info(why, icon=":material/lock:")
        up = st.file_uploader("Bundle", type=["zip"], key="history_upload", disabled=not allowed,
                              label_visibility="collapsed")
        read_only = st.checkbox("Another engine's bundle: keep its runs read-only", value=False,
                                key="history_upload_ro", disabled=not allowed,
                                help="A bundle written by another privlab version is refused "
                                     "unless kept read-only (`privlab import --read-only`).")
        if not st.button("Import", key="history_import", disabled=not (allowed and up)):
            return
        ok, sentence, notes = import_upload(store, up, read_only=read_only)
        if not ok:
            st.error(sentence, icon=":material/error:")
            return
        st.success(sentence)
        for note in notes:
            st.caption(note)


def read_run(store: Any, rec: Any) -> Any:
    """The stored Result of History's record ``rec``: the imported one for an imported record
    (a run of the same key may also have been computed here)."""
    if rec.origin:
        return store.get(rec.key, imported=True) or store.get(rec.key)
    return store.get(rec.key, imported=False)


def recompute_ui(store: Any, rec: Any) -> None:
    """For an imported run: "Recompute here" (one job of the queue) and its verdict."""
    if not rec.origin:
        return
    from cache.bundle.recompute import recompute
    from dashboard.base.widgets import run_job_with_progress

    clicked = st.button("Recompute here", key="history_recompute",
                        help="Run this config with this engine (stored as a run of its own) "
                             "and say whether the bundle's numbers agree within their "
                             "intervals (`privlab verify --recompute KEY`).")
    got = run_job_with_progress(
        f"recompute-{rec.key}",
        lambda j: recompute(store, rec.key, progress=j.report, cancel=j.token),
        label=f"recompute {rec.key[:12]}", start=clicked)
    if got is None:
        return
    (st.success if got.agree else st.warning)(got.sentence)
    from dashboard.base.format import display_name

    st.dataframe(pd.DataFrame([{"metric": display_name(c.name), "bundle": c.imported, "here": c.here,
                                "interval": "" if c.interval is None else
                                f"[{c.interval[0]:.4g}, {c.interval[1]:.4g}]",
                                "agrees": c.agrees, "how": c.how} for c in got.checks]),
                 hide_index=True, width="stretch")
