"""Who may see the dashboard, and how much of an error they see (issue 21: a password for
shared servers).

:func:`gate` runs in ``app.py`` before the sidebar and before any page:

- ``PRIVLAB_PASSWORD`` set: every session first sees a password form and nothing else; the
  entry is compared in constant time (``hmac.compare_digest`` of the two sha256 digests, so
  neither the content nor the length leaks through timing); a wrong one waits a second;
- else, Streamlit's OIDC login when ``.streamlit/secrets.toml`` has an ``[auth]`` section
  (``st.login`` / ``st.user``);
- else the lab is served only to loopback: a server bound to another address, or a visitor
  from another machine, gets a one-line refusal unless ``PRIVLAB_INSECURE=1`` says the
  operator chose to serve it openly. (``make run`` refuses to start such a server in the first
  place: :mod:`dashboard.base.serve_check`.)

:func:`show_details` decides whether an error's detail (its traceback) may be shown: only to
a visitor on loopback, and only while Streamlit's ``client.showErrorDetails`` is ``full``;
:func:`restrict_error_details` turns Streamlit's own details off for a non-loopback server.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time

import streamlit as st
from streamlit import config as st_config

from dashboard.base.serve_check import is_loopback

PASSWORD_ENV = "PRIVLAB_PASSWORD"
INSECURE_ENV = "PRIVLAB_INSECURE"
_AUTHED = "_privlab_authenticated"
#: seconds a wrong password waits before the form shows again (slows guessing)
WRONG_PASSWORD_DELAY_S = 1.0


def server_address() -> str | None:
    """The address Streamlit binds (None: unset; a real server then listens everywhere)."""
    return st_config.get_option("server.address")


def visitor_on_loopback() -> bool:
    """Whether this session's browser connects from the server's own machine (Streamlit
    reports no IP address for a loopback connection; AppTest has no connection at all)."""
    ip = st.context.ip_address
    return not isinstance(ip, str) or is_loopback(ip)


def _bound_elsewhere() -> bool:
    addr = server_address()
    return addr is not None and not is_loopback(addr)


def beyond_loopback() -> bool:
    """Whether the server is bound beyond loopback or this visitor connects from elsewhere."""
    return _bound_elsewhere() or not visitor_on_loopback()


def signed_in() -> bool:
    """Whether this session signed in: the password form of ``PRIVLAB_PASSWORD``, or
    Streamlit's OIDC login (``PRIVLAB_INSECURE=1`` signs nobody in)."""
    if os.environ.get(PASSWORD_ENV, "") and st.session_state.get(_AUTHED) is True:
        return True
    return oidc_configured() and bool(st.user.is_logged_in)


def oidc_configured() -> bool:
    """Streamlit's OIDC login is set up (an ``[auth]`` section in secrets.toml)."""
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file at all: not configured
        return False


def check_password(given: str, expected: str) -> bool:
    """Constant-time comparison (of sha256 digests: equal length whatever was typed)."""
    a = hashlib.sha256(given.encode("utf-8", "surrogatepass")).digest()
    b = hashlib.sha256(expected.encode("utf-8", "surrogatepass")).digest()
    return hmac.compare_digest(a, b)


def _password_form(expected: str) -> None:
    st.title("privlab")
    st.caption("This lab is shared: enter the password the operator gave you.")
    with st.form("privlab_login", clear_on_submit=True):
        given = st.text_input("Password", type="password", key="_privlab_password")
        submitted = st.form_submit_button("Sign in")
    if submitted:
        if check_password(given or "", expected):
            st.session_state[_AUTHED] = True
            st.rerun()
        time.sleep(WRONG_PASSWORD_DELAY_S)
        st.error("Wrong password.")


def gate() -> None:
    """Stop the script run (``st.stop``) unless this session may see the lab."""
    expected = os.environ.get(PASSWORD_ENV, "")
    if expected:
        if st.session_state.get(_AUTHED) is True:
            return
        _password_form(expected)
        st.stop()
    if oidc_configured():
        if not st.user.is_logged_in:
            st.title("privlab")
            st.button("Log in", on_click=st.login)
            st.stop()
        return
    if os.environ.get(INSECURE_ENV) == "1":
        return
    if _bound_elsewhere() or not visitor_on_loopback():
        st.error("This privlab server is reachable from the network without a password, so it "
                 "shows nothing. The operator sets PRIVLAB_PASSWORD (or an OIDC login in "
                 ".streamlit/secrets.toml), or PRIVLAB_INSECURE=1 to serve it openly.")
        st.stop()


def restrict_error_details() -> None:
    """On a server bound beyond loopback, Streamlit's own uncaught-exception display shows no
    message or traceback (``client.showErrorDetails = none``) unless the operator set it."""
    if _bound_elsewhere() and not st_config.is_manually_set("client.showErrorDetails"):
        st_config.set_option("client.showErrorDetails", "none", "dashboard/base/auth.py")


def show_details() -> bool:
    """Whether an error's detail (traceback) may be shown to this visitor."""
    setting = str(st_config.get_option("client.showErrorDetails")).lower()
    return setting in ("full", "true", "stacktrace") and visitor_on_loopback() \
        and not _bound_elsewhere()
