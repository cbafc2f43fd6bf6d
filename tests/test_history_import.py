"""History's bundle upload and its "Recompute here" button (dashboard.components.bundle_import):
the upload has the checks of ``privlab import`` and the server's size limit; beyond loopback
only a signed-in user may import; an imported run gets the button."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from streamlit import config as st_config
from streamlit.config_option import ConfigOption
from streamlit.testing.v1 import AppTest

import dashboard.components.bundle_import as BI
from cache.store import ResultStore

sys.path.insert(0, str(Path(__file__).parent))
from test_bundle_hostile import contract_bundle, forge

APP = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
LOCKED = "only a signed-in user may import"


class Upload(io.BytesIO):
    """What st.file_uploader returns: a binary file object with a name and a size."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name, self.size = name, len(data)


def test_the_upload_imports_with_every_check_and_the_size_limit(tmp_path, monkeypatch):
    path, _, key = contract_bundle(tmp_path)
    store = ResultStore(tmp_path / "store")
    monkeypatch.setattr(BI, "may_import", lambda: (True, ""))
    monkeypatch.setattr(BI, "upload_limit_mb", lambda: 5)
    big = Upload(path.read_bytes() + b"\0" * (5 << 20), "big.zip")
    ok, msg, _ = BI.import_upload(store, big, read_only=False)
    assert not ok and msg.startswith("bundle: big.zip is ") and "at most 5 MB" in msg
    bad = forge(path, tmp_path / "bad.zip", add=[("../evil", b"x")])
    ok, msg, _ = BI.import_upload(store, Upload(bad.read_bytes(), "bad.zip"), read_only=False)
    assert not ok and "'../evil' is not a file a bundle holds" in msg and "\n" not in msg
    assert store.list() == []
    ok, msg, notes = BI.import_upload(store, Upload(path.read_bytes(), "shared.zip"),
                                      read_only=False)
    assert ok and msg.startswith("shared.zip: imported 1 run of a run bundle") and notes
    (rec,) = store.list()
    assert rec.key == key and rec.origin["bundle"] == "shared.zip"
    monkeypatch.setattr(BI, "may_import", lambda: (False, "locked"))
    assert BI.import_upload(store, Upload(path.read_bytes(), "x.zip"), read_only=False) == \
        (False, "locked", [])


def _history(monkeypatch, tmp_path, *, address=None, password=None, signed_in=False) -> AppTest:
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "page"))
    monkeypatch.delenv("PRIVLAB_PASSWORD", raising=False)
    monkeypatch.delenv("PRIVLAB_INSECURE", raising=False)
    if password:
        monkeypatch.setenv("PRIVLAB_PASSWORD", password)
    else:
        monkeypatch.setenv("PRIVLAB_INSECURE", "1")
    old = st_config.get_option("server.address")
    # the app withholds error details on a server bound beyond loopback (a process-wide
    # Streamlit option): put it back for the tests after this one
    details = st_config.get_option("client.showErrorDetails")
    details_set = st_config.is_manually_set("client.showErrorDetails")
    st_config.set_option("server.address", address)
    try:
        at = AppTest.from_file(APP, default_timeout=60)
        if signed_in:
            at.session_state["_privlab_authenticated"] = True
        at.run()
        at.switch_page("views/history.py").run()
    finally:
        st_config.set_option("server.address", old)
        # restored as it was found: a value restored "by the user" would stop the app from
        # withholding details in a later test
        st_config.set_option("client.showErrorDetails", details,
                             *(() if details_set else (ConfigOption.DEFAULT_DEFINITION,)))
    assert not at.exception, at.exception
    return at


def _infos(at: AppTest) -> str:
    return " ".join(i.value for i in at.info)


def test_on_loopback_anyone_may_import(tmp_path, monkeypatch):
    at = _history(monkeypatch, tmp_path)
    assert any(e.label == "Import a bundle (.zip)" for e in at.expander)
    assert LOCKED not in _infos(at)


@pytest.mark.parametrize("password, signed_in, locked", [
    (None, False, True),  # served openly (PRIVLAB_INSECURE=1): nobody is signed in
    ("s3cret", True, False),  # signed in with the password
])
def test_beyond_loopback_only_a_signed_in_user_may_import(tmp_path, monkeypatch, password,
                                                          signed_in, locked):
    at = _history(monkeypatch, tmp_path, address="0.0.0.0", password=password,
                  signed_in=signed_in)
    assert (LOCKED in _infos(at)) is locked


def test_an_imported_run_has_the_recompute_button(tmp_path, monkeypatch):
    from cache.bundle import import_bundle
    from cache.store import default_store

    path, _, _ = contract_bundle(tmp_path)
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "page"))
    import_bundle(path, store=default_store())
    at = _history(monkeypatch, tmp_path)
    assert any(b.label == "Recompute here" for b in at.button)
