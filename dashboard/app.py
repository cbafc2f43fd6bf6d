"""privlab dashboard entry point: ``streamlit run dashboard/app.py`` (``make run``).

st.navigation over the pages in ``dashboard/views/``; the sidebar (data set, seed, device) is
drawn here so that every page shares it through st.session_state (see :mod:`dashboard.state`).

The page scripts live in ``views/``, not ``pages/``: a ``pages/`` directory next to the
entrypoint switches Streamlit into its legacy multipage mode, in which a first request to a
page URL runs that page alone (no st.navigation, no sidebar, no wide layout).
"""

from __future__ import annotations

import streamlit as st

from dashboard import warmup

# the server imports the pages' modules in the background from its start (dashboard.warmup;
# server.py starts it, this starts it for servers run on app.py itself). A script run asks for
# its own modules first and waits for those alone, never importing them beside the thread;
# while it draws, the thread imports nothing else
warmup.start()
with warmup.drawing():
    warmup.need(warmup.app_modules())
    from streamlit import config as st_config

    from cache.errors import StoreError
    from core.runs.pool import prewarm_in_background
    from dashboard.base.auth import gate, restrict_error_details
    from dashboard.base.jobs import default_nice
    from dashboard.base.widgets import get_store
    from dashboard.components import cost_later
    from dashboard.sidebar import render_sidebar
    from dashboard.style import apply_style

    # Streamlit runs a full gc.collect(2) after every script run. With torch, scikit-learn and
    # plotly in the process that is ~0.15 s of CPU, holding the GIL, per page view and per
    # widget change: more than drawing the page, and every other session waits for it.
    # Python's own generational collector still runs. A value set in .streamlit/config.toml or
    # on the command line (--runner.postScriptGC true) is kept.
    if not st_config.is_manually_set("runner.postScriptGC") and st_config.get_option(
            "runner.postScriptGC"):
        st_config.set_option("runner.postScriptGC", False, "dashboard/app.py")

    # a cost line left to the background starts after the draw, its imports by the warm start
    cost_later.HOOKS.update(wait_idle=warmup.wait_idle, need=warmup.need)

    st.set_page_config(page_title="privlab", page_icon="🛡️", layout="wide")
    apply_style()  # labels, chips and tables wrap instead of being cut
    # before the sidebar and any page: a password (PRIVLAB_PASSWORD) or OIDC login on a shared
    # server, loopback only otherwise; errors show no detail beyond loopback (dashboard.base.auth)
    restrict_error_details()
    gate()
    # the Compare page runs its points on the process's local pool: start its workers now, in
    # the background (once per process; PRIVLAB_PREWARM=0 turns it off), so a first
    # comparison does not pay their imports
    prewarm_in_background(nice=default_nice())
    try:  # a store the file system refuses (a full disk, permissions) is one line
        get_store()
    except StoreError as exc:
        st.error(f"{exc} (PRIVLAB_CACHE_DIR chooses another place)")
        st.stop()

    #: each page and the script in views/ it runs
    PAGES = {
        st.Page("views/home.py", title="Home", icon=":material/home:", default=True): "home.py",
        st.Page("views/data.py", title="Data & projections", icon=":material/scatter_plot:",
                url_path="data"): "data.py",
        st.Page("views/attribute_privacy.py", title="Attribute privacy (FL)",
                icon=":material/group_work:", url_path="attribute_privacy"):
            "attribute_privacy.py",
        st.Page("views/membership.py", title="Membership", icon=":material/how_to_reg:",
                url_path="membership"): "membership.py",
        st.Page("views/property.py", title="Property", icon=":material/pie_chart:",
                url_path="property"): "property.py",
        st.Page("views/reconstruction.py", title="Reconstruction: gradient leakage",
                icon=":material/image_search:", url_path="reconstruction"): "reconstruction.py",
        st.Page("views/repr_reconstruction.py", title="Reconstruction: from representations",
                icon=":material/blur_on:", url_path="repr_reconstruction"):
            "repr_reconstruction.py",
        st.Page("views/fisher_information.py", title="Fisher information",
                icon=":material/functions:", url_path="fisher_information"):
            "fisher_information.py",
        st.Page("views/compare.py", title="Compare", icon=":material/compare_arrows:",
                url_path="compare"): "compare.py",
        st.Page("views/history.py", title="History", icon=":material/history:",
                url_path="history"): "history.py",
    }

    nav = st.navigation(list(PAGES))
    # the page about to run waits for its own imports only (the others warm meanwhile)
    warmup.need(warmup.view_modules(PAGES[nav]))
    # numbers this session's full runs (dashboard.base.widgets tells the page's own runs from
    # others)
    st.session_state["_privlab_run"] = st.session_state.get("_privlab_run", 0) + 1
    render_sidebar()
    nav.run()
