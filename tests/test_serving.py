"""Serving the dashboard (issue 21): the password gate before any page, loopback-only without
a login, `make run` refusing a network address without one, errors without internals beyond
loopback, and the defaults that already held (safe YAML, no pickle, weights_only, XSRF/CORS,
loopback bind)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PRIVLAB_PASSWORD", raising=False)
    monkeypatch.delenv("PRIVLAB_INSECURE", raising=False)


@pytest.fixture
def bound(monkeypatch):
    """Set Streamlit's server.address for the test (AppTest runs in this process)."""
    old = st_config.get_option("server.address")
    details = st_config.get_option("client.showErrorDetails")

    def set_(addr):
        st_config.set_option("server.address", addr)

    yield set_
    st_config.set_option("server.address", old)
    st_config.set_option("client.showErrorDetails", details)


def _texts(at: AppTest) -> str:
    parts = [e.value for e in (*at.title, *at.markdown, *at.caption, *at.error)]
    return " ".join(str(p) for p in parts)


def test_password_gate_holds_before_any_page(isolated, monkeypatch):
    monkeypatch.setenv("PRIVLAB_PASSWORD", "correct horse")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert [t.label for t in at.text_input] == ["Password"]
    assert len(at.sidebar) == 0 and "Data set" not in _texts(at)  # no sidebar, no page
    at.text_input[0].input("wrong")
    at.button[0].click().run()
    assert "Wrong password." in _texts(at) and [t.label for t in at.text_input] == ["Password"]
    at.text_input[0].input("correct horse")
    at.button[0].click().run()
    assert not at.exception and "Password" not in [t.label for t in at.text_input]
    assert "privlab" in _texts(at) and at.sidebar.selectbox  # the lab itself now


def test_network_address_without_login_shows_nothing(isolated, bound, monkeypatch):
    bound("0.0.0.0")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert "reachable from the network without a password" in _texts(at)
    assert len(at.sidebar) == 0 and not at.selectbox
    assert st_config.get_option("client.showErrorDetails") == "none"
    monkeypatch.setenv("PRIVLAB_INSECURE", "1")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert "reachable from the network" not in _texts(at) and at.sidebar.selectbox


def test_check_password_is_constant_time_comparison():
    from dashboard.base import auth

    src = Path(auth.__file__).read_text()
    assert "hmac.compare_digest" in src
    assert auth.check_password("a", "a") and not auth.check_password("a", "ab")
    assert not auth.check_password("", "x") and auth.check_password("é\udcff", "é\udcff")


def test_errors_are_one_line_with_details_on_loopback_only(isolated, bound):
    def script():
        from dashboard.base.widgets import _show_error

        _show_error("crash", "ValueError: boom\nsecond line", "Traceback (most recent)...", "Run")

    at = AppTest.from_function(script).run()
    (err,) = at.error
    assert "\n" not in err.value.split(" Nothing was stored")[0] and "boom second line" in err.value
    assert len(at.expander) == 1 and "Traceback" in at.code[0].value
    bound("0.0.0.0")
    from dashboard.base.auth import restrict_error_details

    restrict_error_details()
    at = AppTest.from_function(script).run()
    assert len(at.error) == 1 and len(at.expander) == 0 and not at.code


# -- make run: a network address needs a login --------------------------------------------------

def test_serve_check_policy(monkeypatch, tmp_path):
    from dashboard.base import serve_check as sc

    monkeypatch.setattr(sc, "SECRETS", (tmp_path / "secrets.toml",))
    assert sc.decide("127.0.0.1", {})[0] and sc.decide("localhost", {})[0] and sc.decide("::1", {})[0]
    for host in ("0.0.0.0", "192.168.1.5", "", "::"):
        ok, why = sc.decide(host, {})
        assert not ok and "PRIVLAB_PASSWORD" in why and "INSECURE=1" in why
    assert sc.decide("0.0.0.0", {"PRIVLAB_PASSWORD": "x"})[0]
    assert sc.decide("0.0.0.0", {"INSECURE": "1"})[0]
    assert not sc.decide("0.0.0.0", {"INSECURE": "0", "PRIVLAB_PASSWORD": ""})[0]
    (tmp_path / "secrets.toml").write_text('[auth]\nredirect_uri = "x"\n')
    assert sc.decide("0.0.0.0", {})[0]


def _fake_make_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the Makefile whose PY records how streamlit would be started."""
    work = tmp_path / "w"
    work.mkdir()
    (tmp_path / "v").mkdir()
    for f in ("Makefile", "pyproject.toml"):
        (work / f).write_bytes((ROOT / f).read_bytes())
    fake = tmp_path / "fakepy"
    fake.write_text(f"""#!/bin/sh
case "$*" in
  *dashboard.base.serve_check*) PYTHONPATH={ROOT} exec {sys.executable} "$@" ;;
  *streamlit*) echo "STREAMLIT insecure=$PRIVLAB_INSECURE $*"; exit 0 ;;
  *) exit 0 ;;
esac
""")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PRIVLAB_PASSWORD", "PRIVLAB_INSECURE", "INSECURE", "MAKEFLAGS")}
    env["HOME"] = str(tmp_path)  # no ~/.streamlit/secrets.toml
    return work, {**env, "PY_FAKE": str(fake)}


@pytest.mark.skipif(not any((Path(p) / "make").exists() for p in os.environ.get("PATH", "").split(":")),
                    reason="make is not installed")
def test_make_run_refuses_a_network_host_without_login(tmp_path):
    work, env = _fake_make_env(tmp_path)

    def make(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(["make", "-s", "run", f"PY={env['PY_FAKE']}", f"VENV={tmp_path}/v",
                               *args], cwd=work, env={**env, **extra}, capture_output=True,
                              text=True, timeout=60, check=False)

    p = make("HOST=0.0.0.0")
    assert p.returncode != 0 and "STREAMLIT" not in p.stdout
    assert "refusing to serve on 0.0.0.0 without a login" in p.stderr
    p = make("HOST=0.0.0.0", PRIVLAB_PASSWORD="s3cret")
    assert p.returncode == 0 and "STREAMLIT" in p.stdout and "--server.address 0.0.0.0" in p.stdout
    p = make("HOST=0.0.0.0", "INSECURE=1")
    assert p.returncode == 0 and "STREAMLIT insecure=1" in p.stdout
    p = make()  # the default: loopback, no login needed
    assert p.returncode == 0 and "--server.address 127.0.0.1" in p.stdout


# -- what already held stays tested ----------------------------------------------------------

def _sources() -> list[Path]:
    return [p for d in ("core", "cache", "dashboard", "cli") for p in (ROOT / d).rglob("*.py")]


def _calls(text: str, opening: str) -> list[str]:
    """The argument text of every ``opening...)`` call (parentheses balanced)."""
    out = []
    for m in re.finditer(re.escape(opening), text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        out.append(text[m.end():i - 1])
    return out


def test_no_pickle_safe_yaml_weights_only():
    for p in _sources():
        text = p.read_text()
        rel = p.relative_to(ROOT)
        assert not re.search(r"\bimport pickle\b|pickle\.loads?\(", text), rel
        assert "allow_pickle=True" not in text, rel
        for call in _calls(text, "torch.load("):
            assert "weights_only=True" in call, (rel, call)
        for call in _calls(text, "yaml.load("):
            assert "Loader=_Loader" in call, (rel, call)  # the SafeLoader subclass
        assert "yaml.unsafe_load" not in text and "yaml.full_load" not in text, rel
    import yaml

    from core.config.files import _Loader

    assert issubclass(_Loader, yaml.SafeLoader) or issubclass(_Loader, yaml.CSafeLoader)


def test_loopback_bind_and_streamlit_xsrf_cors_defaults():
    toml = (ROOT / "dashboard" / ".streamlit" / "config.toml").read_text()
    assert re.search(r'^address = "127\.0\.0\.1"', toml, re.MULTILINE)
    assert "enableXsrfProtection" not in toml and "enableCORS" not in toml  # defaults kept
    assert st_config.get_option("server.enableXsrfProtection") is True
    assert st_config.get_option("server.enableCORS") is True
    assert re.search(r"^HOST\s*\?=\s*127\.0\.0\.1$", (ROOT / "Makefile").read_text(), re.MULTILINE)


def test_a_store_that_cannot_open_is_one_line_in_the_dashboard(tmp_path, monkeypatch):
    bad = tmp_path / "a-file"
    bad.write_text("not a folder")
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(bad))
    monkeypatch.delenv("PRIVLAB_PASSWORD", raising=False)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    (err,) = at.error
    assert err.value.startswith("result store: cannot create the result store") and "\n" not in err.value


def test_server_tells_every_page_the_root_base_url():
    """dashboard/server.py puts the base-URL script into HTML pages once, nowhere else."""
    from dashboard.server import inject_base_url

    page = b"<html><head><title>x</title></head><body></body></html>"
    once = inject_base_url(page)
    assert once.startswith(b"<html><head><script>window.__streamlit") and once.count(b"<script>") == 1
    assert inject_base_url(once) == once
    assert inject_base_url(b'{"not": "html"}') == b'{"not": "html"}'
