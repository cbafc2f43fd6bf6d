"""privlab dashboard entry point: ``streamlit run dashboard/app.py`` (``make run``).

st.navigation over the pages in ``dashboard/views/``; the sidebar (data set, seed, device) is
drawn here so that every page shares it through st.session_state (see :mod:`dashboard.state`).

The page scripts live in ``views/``, not ``pages/``: a ``pages/`` directory next to the
entrypoint switches Streamlit into its legacy multipage mode, in which a first request to a
page URL runs that page alone (no st.navigation, no sidebar, no wide layout).
"""

from __future__ import annotations

import streamlit as st

from dashboard.sidebar import render_sidebar

st.set_page_config(page_title="privlab", page_icon=":material/shield_lock:", layout="wide")

PAGES = [
    st.Page("views/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("views/data.py", title="Data & projections", icon=":material/scatter_plot:",
            url_path="data"),
    st.Page("views/attribute_privacy.py", title="Attribute privacy (FL)",
            icon=":material/group_work:", url_path="attribute_privacy"),
    st.Page("views/history.py", title="History", icon=":material/history:", url_path="history"),
]

nav = st.navigation(PAGES)
render_sidebar()
nav.run()
