"""Every dashboard page through streamlit.testing.v1.AppTest (app.py + st.navigation).

Each test gets its own result store (PRIVLAB_CACHE_DIR = a tmp dir), so "nothing stored" can be
checked exactly. Runs are tiny: digits PCA, or attribute-privacy Results pre-populated through
the store by the contract runner (tests/_tappfl_contract.py).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from cache.entry import encode, write_atomic
from cache.index import IndexRow
from cache.store import default_store
from core.config.schema import parse_config
from dashboard.components.run_history import kind_title
from dashboard.tappfl_settings import build_config, preset_widgets

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
TIMEOUT = 60
sys.path.insert(0, str(Path(__file__).parent))
from _tappfl_contract import contract_runner


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    return default_store()


def open_page(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    if page:
        at.switch_page(page).run()
        assert not at.exception, at.exception
    return at


def chart_keys(at: AppTest) -> list[str]:
    """Keys of the plotly charts on the page (the element ids carry the user key)."""
    return [str(getattr(c, "id", "")) for c in at.get("plotly_chart")]


def has_chart(at: AppTest, key: str) -> bool:
    return any(key in k for k in chart_keys(at))


def no_real_data(monkeypatch, empty: Path) -> None:
    """Real data sets point at an empty directory and downloads fail at once (no network)."""
    import core.data.files

    def offline(url, dest, **kw):
        raise OSError(f"network disabled in tests (would fetch {url})")

    monkeypatch.setenv("PRIVLAB_DATA_DIR", str(empty))
    monkeypatch.setattr(core.data.files, "download_file", offline)


def tappfl_base(**over) -> dict:
    """The config the Attribute privacy page builds for its quick preset on synthetic/u
    (same function as the page; over: top-level overrides, e.g. tradeoff_lambda, attackers)."""
    cfg = build_config(preset="quick", dataset="synthetic", attribute="u", seed=0, device="auto",
                       defense="tappfl", lam=over.pop("tradeoff_lambda", 0.5),
                       values=preset_widgets("quick"), attackers=over.pop("attackers", None))
    cfg.update(over)
    return cfg


def code_blocks(at: AppTest, language: str) -> list[str]:
    return [c.value for c in at.code if c.language == language]


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


# --------------------------------------------------------------------------------------------


def test_home_renders_without_setup(store):
    at = open_page()
    assert [t.value for t in at.title] == ["privlab"]
    tables = [d.value for d in at.table]
    names = set(tables[0]["name"])
    assert {"digits", "mnist5k", "faces", "synthetic", "adult"} <= names
    glossary = " ".join(tables[1]["symbol"])
    assert "λ (FIL)" in glossary and "κ" in glossary and "ε (DP)" in glossary.replace(", δ", "")
    labels = [p.label for p in at.get("page_link")]
    # every page of the navigation (dashboard/app.py) but Home, in its order
    import re

    app = (Path(__file__).resolve().parents[1] / "dashboard" / "app.py").read_text()
    nav = re.findall(r'st\.Page\("views/\w+\.py", title="([^"]+)"', app)
    assert labels == [t for t in nav if t != "Home"] and len(labels) >= 9, labels
    assert "Planned" not in " ".join(c.value for c in at.caption)
    assert store.list() == []  # the landing page runs nothing


def test_sidebar_marks_unavailable_real_data_and_pages_follow_it(store, tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLAB_DATA_DIR", str(tmp_path / "no-data"))
    at = open_page()
    box = at.sidebar.selectbox(key="privlab_dataset")
    assert box.value == "digits"
    assert "files missing" in box.format_func("adult")
    box.set_value("adult").run()
    assert not at.exception
    warn = " ".join(w.value for w in at.sidebar.warning)
    assert "adult" in warn and "no-data" in warn
    # pages default to the sidebar's data set, and the sidebar stays on every page
    at.sidebar.selectbox(key="privlab_dataset").set_value("synthetic").run()
    at.switch_page("views/attribute_privacy.py").run()
    assert not at.exception
    assert at.selectbox(key="ap_dataset").value == "synthetic"
    assert at.sidebar.selectbox(key="privlab_dataset").value == "synthetic"
    at.sidebar.text_input(key="privlab_seed__text").set_value(str(3)).run()
    at.switch_page("views/history.py").run()
    assert at.session_state["privlab_seed"] == 3


def test_data_page_digits_pca_plot(store):
    t0 = time.perf_counter()
    at = open_page("views/data.py")
    assert not at.error, [e.value for e in at.error]
    assert at.get("plotly_chart"), "no plot on the Data & projections page"
    assert has_chart(at, "data_projection"), chart_keys(at)
    runs = store.list(kind="projection")
    assert len(runs) == 1 and runs[0].config["method"] == "pca"
    assert runs[0].config["data"]["name"] == "digits"
    # a second visit shows the stored result at once (no second run)
    at2 = open_page("views/data.py")
    assert has_chart(at2, "data_projection")
    assert any("from the cache" in c.value for c in at2.caption)
    assert len(store.list()) == 1
    # colour by a private attribute: same stored run, different colouring
    at2.selectbox(key="data_colour_digits").set_value("parity").run()
    assert not at2.exception and has_chart(at2, "data_projection")
    assert len(store.list()) == 1
    assert time.perf_counter() - t0 < 60


def test_data_page_missing_real_data_is_an_error_and_stores_nothing(store, tmp_path, monkeypatch):
    no_real_data(monkeypatch, tmp_path / "empty")
    at = open_page("views/data.py")
    at.selectbox(key="data_dataset").set_value("adult").run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "adult" in errors and str(tmp_path / "empty") in errors
    assert not has_chart(at, "data_projection")
    assert [r.kind for r in store.list()] == ["projection"]  # only the digits PCA of first load


def test_attribute_page_controls(store):
    at = open_page("views/attribute_privacy.py")
    assert not at.error
    at.selectbox(key="ap_dataset").set_value("synthetic").run()
    assert at.slider(key="ap_lambda").value == 0.5
    assert {n.key.removesuffix("__text") for n in at.text_input} >= {"ap_devices", "ap_rounds", "ap_fraction",
                                                 "ap_epochs", "ap_adv_steps", "ap_adv_lr"}
    assert not any(n.key.removesuffix("__text") in ("ap_eps", "ap_clip") for n in at.text_input)
    at.selectbox(key="ap_defense").set_value("dp_gaussian").run()
    assert {"ap_delta", "ap_clip"} <= {n.key.removesuffix("__text") for n in at.text_input}
    assert at.select_slider(key="ap_eps").value == 1.0  # ε: a log knob, a select slider
    assert not any(s.key == "ap_lambda" for s in at.slider)
    at.selectbox(key="ap_defense").set_value("pruning").run()
    assert any(s.key == "ap_prune" for s in at.slider)
    at.text_input(key="ap_devices__text").set_value(str(4)).run()
    assert any("Edited from the quick preset: devices" in c.value for c in at.caption)
    at.segmented_control(key="ap_preset").set_value("paper").run()
    assert not any("Edited from" in c.value for c in at.caption)
    paper = preset_widgets("paper")  # the engine's paper preset: 100 devices, 20 rounds
    assert at.session_state["ap_devices"] == paper["ap_devices"] == 100
    assert at.session_state["ap_rounds"] == paper["ap_rounds"] == 20
    assert not at.exception
    assert any("No stored result" in i.value for i in at.info)
    assert store.list() == []  # rendering controls runs nothing


def test_attribute_page_shows_stored_results_and_nearest_lambda(store):
    for lam in (0.0, 0.5, 1.0):
        store.get_or_run(tappfl_base(tradeoff_lambda=lam), runner=contract_runner)
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("synthetic").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    labels = {m.label.split(" ⚠")[0] for m in at.metric}  # without a caveat flag
    assert {"task accuracy on r (logistic head)", "paper form", "exact form",
            "measured best", "right-hand side"} <= labels
    # secondary panels are drawn on request (collapsed expanders whose content runs when opened)
    assert not has_chart(at, "ap_proj_raw") and not has_chart(at, "ap_curve_losses")
    at.session_state["ap_show_curves"] = True
    at.session_state["ap_show_projections"] = True
    at.run()
    for key in ("ap_attack_bars", "ap_bounds_curve", "ap_curve_losses", "ap_curve_accs",
                "ap_tradeoff", "ap_proj_raw", "ap_proj_repr"):
        assert has_chart(at, key), (key, chart_keys(at))
    assert any("Vacuous at this setting" in w.value for w in at.warning)
    # λ between grid points: the nearest cached point is shown at once, nothing runs
    at.slider(key="ap_lambda").set_value(0.35).run()
    assert any("nearest cached grid point λ = 0.5" in i.value for i in at.info)
    assert has_chart(at, "ap_tradeoff")
    assert len(store.list()) == 3


def _tiny_settings(at: AppTest, **over) -> None:
    """Page controls for a run of a few seconds: 2 devices, 1 round, 300 rows, no projection."""
    values = {"ap_devices": 2, "ap_rounds": 1, "ap_fraction": 1.0, "ap_epochs": 1,
              "ap_max_samples": 300, "ap_proj_points": 0, **over}
    for key, v in values.items():
        at.text_input(key=key + "__text").set_value(str(v))
    at.run()
    assert not at.exception, at.exception


def test_attribute_page_run_button_runs_stores_and_shows(store):
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("synthetic").run()
    _tiny_settings(at)
    at.session_state["ap_show_curves"] = True  # the per-round panel, opened
    at.button(key="ap_run").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs = store.list(kind="attribute_privacy")
    assert len(runs) == 1 and runs[0].config["fl"]["num_devices"] == 2
    shown = {m.label.split(" ⚠")[0]: m.value for m in at.metric}  # without a caveat flag
    assert shown["task accuracy on r (logistic head)"] != "n/a"
    assert shown["measured best"] != "n/a"
    for key in ("ap_attack_bars", "ap_roc", "ap_bounds_curve", "ap_curve_accs"):
        assert has_chart(at, key), (key, chart_keys(at))
    # one λ stored: no tradeoff axes, a sentence and the teaching-sweep button instead
    assert not has_chart(at, "ap_tradeoff")
    assert any("needs at least two λ values" in i.value for i in at.info)
    assert any("computed now" in c.value for c in at.caption)
    # the same settings again: shown from the store at once, nothing recomputed
    at.run()
    assert any("from the cache" in c.value for c in at.caption)
    assert len(store.list()) == 1


def test_attribute_page_lambda_sweep_then_slider_scrubs_cached_points(store):
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("synthetic").run()
    _tiny_settings(at)
    at.button(key="ap_sweep").click().run(timeout=300)
    assert not at.exception and not at.error, [e.value for e in at.error]
    lams = sorted(r.config["defense"]["tradeoff_lambda"]
                  for r in store.list(kind="attribute_privacy"))
    assert lams == [0.0, 0.5, 1.0]  # TAPPFL's teaching grid (core.foundation.parts)
    spec = json.loads(next(c for c in at.get("plotly_chart") if "ap_tradeoff" in c.id).proto.spec)
    assert len(spec["data"][0]["x"]) == 3  # one point per cached λ
    at.slider(key="ap_lambda").set_value(0.3).run()
    assert any("nearest cached grid point λ = 0.5" in i.value for i in at.info)
    assert len(store.list(kind="attribute_privacy")) == 3  # and the sweep itself
    # DP baseline on the same tiny setting: its parameters are shown, from the Result
    at.selectbox(key="ap_defense").set_value("dp_gaussian").run()
    at.button(key="ap_run").click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    labels = {m.label.split(" ⚠")[0] for m in at.metric}  # without a caveat flag
    assert {"Gaussian noise σ", "ε per round", "ε total (all rounds)"} <= labels


def test_attribute_page_lambda_sweep_is_a_stored_sweep_that_runs_only_missing_points(store):
    tiny = {"ap_devices": 2, "ap_rounds": 1, "ap_fraction": 1.0, "ap_epochs": 1,
            "ap_max_samples": 300, "ap_proj_points": 0}
    for lam in (0.0, 0.25, 0.5, 0.75):  # the page's configs at these λ, stored beforehand
        cfg = build_config(preset="quick", dataset="synthetic", attribute="u", seed=0, device="auto",
                           defense="tappfl", lam=lam, values={**preset_widgets("quick"), **tiny},
                           attackers=("logreg", "mlp"))
        store.get_or_run(cfg, runner=contract_runner)
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("synthetic").run()
    _tiny_settings(at)
    at.button(key="ap_sweep").click().run(timeout=300)
    assert not at.exception and not at.error, [e.value for e in at.error]
    (rec,) = store.list(kind="sweep")
    assert rec.config["executor"] == "serial" and rec.config["seeds"] == [0]
    assert rec.config["grid"] == {"defense.tradeoff_lambda": [0.0, 0.5, 1.0]}
    assert (rec.metrics["points_run"], rec.metrics["points_cached"]) == (1, 2)
    rows = store.get(rec.key).info["rows"]
    assert [(r["defense.tradeoff_lambda"], r["from_cache"]) for r in rows] == [
        (0.0, True), (0.5, True), (1.0, False)]
    assert len(store.list(kind="attribute_privacy")) == 5
    spec = json.loads(next(c for c in at.get("plotly_chart") if "ap_tradeoff" in c.id).proto.spec)
    # every stored run of these settings is drawn (plots fill themselves): the 3 grid points and
    # the off-grid λ 0.25 and 0.75 stored beforehand
    assert len(spec["data"][0]["x"]) == 5


def test_attribute_page_invalid_combination_errors_and_stores_nothing(store):
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("synthetic").run()
    _tiny_settings(at, ap_devices=1000)  # more devices than training rows
    at.button(key="ap_run").click().run(timeout=120)
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "Invalid settings" in errors and "fl.num_devices: got 1000" in errors, errors
    assert store.list() == []


def test_attribute_page_missing_real_data_run_errors_and_stores_nothing(store, tmp_path, monkeypatch):
    no_real_data(monkeypatch, tmp_path / "empty")
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("adult").run()
    assert not at.exception
    # said plainly, with how to get it, and Run is off (issue #20 item 7)
    errors = " ".join(e.value for e in at.error)
    assert "PRIVLAB_DATA_DIR" in errors and "adult.data" in errors and "adult.test" in errors
    assert str(tmp_path / "empty") in errors, errors
    assert at.button(key="ap_run").disabled
    # every button that would start a job on the missing files is off too (sweeps, lesson)
    starters = [b for b in at.button if "sweep" in b.key or b.key.endswith("_run")]
    assert {"ap_run", "ap_sweep", "ap_teaching_sweep"} <= {b.key for b in starters}
    assert all(b.disabled for b in starters), [b.key for b in starters if not b.disabled]
    assert at.sidebar.selectbox(key="privlab_dataset").value == "digits"  # never switched
    assert store.list() == []


def test_history_page_lists_inspects_exports_and_deletes(store):
    store.get_or_run({"kind": "projection", "data": {"name": "digits"}, "max_points": 200})
    store.get_or_run(tappfl_base(tradeoff_lambda=0.25), runner=contract_runner)
    at = open_page("views/history.py")
    assert not at.error
    table = at.table[0].value
    assert set(table["kind"]) == {"projection", kind_title("attribute_privacy")}
    assert set(table["engine"]) == {"current"}
    assert len(at.get("download_button")) == 4  # CSV, JSON, the selected run and its bundle
    assert at.json, "config of the selected run not shown"
    # the selected run's metrics: a wrapping table at the page's width, values as text
    metrics = next(t.value for t in at.table if "description" in t.value.columns)
    assert len(metrics) and all(isinstance(v, str) and v for v in metrics["value"])
    at.selectbox(key="history_kind").set_value("attribute_privacy").run()
    assert set(at.table[0].value["kind"]) == {kind_title("attribute_privacy")}
    key = at.selectbox(key="history_run").value
    assert at.button(key="history_delete").disabled
    at.checkbox(key="history_confirm").check().run()
    at.button(key="history_delete").click().run()
    assert not at.exception
    assert [r.kind for r in store.list()] == ["projection"]
    assert store.get(key) is None


def test_attribute_page_multivalued_attribute_says_theorems_are_binary_only(store, tmp_path, monkeypatch):
    no_real_data(monkeypatch, tmp_path / "empty")
    cfg = tappfl_base(tradeoff_lambda=0.5)
    cfg["data"] = {"name": "adult", "private_attribute": "marital_status"}
    store.get_or_run(cfg, runner=contract_runner)
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("adult").run()
    at.selectbox(key="ap_attr_adult").set_value("marital_status").run()
    # the files are missing: said (Run off), and the stored run of these settings still shows
    assert not at.exception
    assert all("files are not on this machine" in e.value for e in at.error), at.error
    assert at.button(key="ap_run").disabled
    infos = " ".join(i.value for i in at.info)
    assert "Theorem 2 covers binary attributes only" in infos
    assert "Theorem 1" in infos
    assert not has_chart(at, "ap_bounds_curve")
    assert has_chart(at, "ap_attack_bars")


def test_attribute_page_cancel_stops_the_run_and_stores_nothing(store):
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("synthetic").run()  # quick preset: ~10 s or more
    jobs: dict = {}
    at.session_state["_privlab_jobs"] = jobs  # the page keeps its running jobs in this dict

    def press_cancel() -> None:  # what the Cancel button does, from another thread mid-run
        deadline = time.monotonic() + 30
        while not jobs and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)
        for job in list(jobs.values()):
            job.token.cancel()

    t = threading.Thread(target=press_cancel)
    t.start()
    t0 = time.perf_counter()
    at.button(key="ap_run").click().run(timeout=120)
    t.join()
    assert not at.exception
    assert any("cancelled" in w.value for w in at.warning), [w.value for w in at.warning]
    assert time.perf_counter() - t0 < 60
    assert store.list() == []
    at.run()  # not restarted on its own: a message and a button to run again
    assert any("was cancelled" in i.value for i in at.info)
    assert store.list() == []


# --------------------------------------------------------------------------------------------
# components: intervals, threat models, undefended point, copy as YAML / CLI


def attack_frame(at: AppTest):
    return next(d.value for d in [*at.table, *at.dataframe] if "attacker" in d.value.columns)


def test_attribute_page_intervals_threat_models_and_undefended_point(store):
    # two λ stored: the tradeoff plot draws (one point would be a sentence instead)
    for lam in (0.5, 1.0):
        store.get_or_run(tappfl_base(tradeoff_lambda=lam), runner=contract_runner)
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("synthetic").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = attack_frame(at).set_index("attacker")
    assert table.loc["fresh MLP", "AUC"] == "0.790 [0.750, 0.830]"  # value [95 % interval]
    # "near chance" only where the interval contains chance (the prior), via within_chance_text
    near = next(c.value for c in at.caption if c.value.startswith("Near chance"))
    assert "prior (no model): bacc within 0.000 of chance" in near
    assert "fresh MLP" not in near and "in-training" not in near
    shown = {m.label.split(" ⚠")[0]: m.value for m in at.metric}  # without a caveat flag
    cards = " ".join(md.value for md in at.markdown)
    assert "Strongest attacker on the release: fresh MLP" in cards  # info["best_attacker"]
    assert shown["informative for Adv <"] == "0.0667"  # bound_thm1_adv_threshold from the Result
    assert "sees:" in cards and "knows:" in cards and "goal:" in cards
    assert "Undefended point not computed yet" in captions(at)
    assert at.button(key="ap_run_undefended")
    spec = json.loads(next(c for c in at.get("plotly_chart") if "ap_tradeoff" in c.id).proto.spec)
    assert not any(t.get("name", "").startswith("undefended") for t in spec["data"])
    assert any("chance" in str(s.get("annotation", s)) for s in spec["layout"].get("shapes", [])) \
        or any("chance" in a.get("text", "") for a in spec["layout"].get("annotations", []))
    # the undefended run of the same settings, once stored, is marked on the plot
    none_cfg = tappfl_base()
    none_cfg["defense"] = {"kind": "none"}
    store.get_or_run(none_cfg, runner=contract_runner)
    at.run()
    spec = json.loads(next(c for c in at.get("plotly_chart") if "ap_tradeoff" in c.id).proto.spec)
    assert any(t.get("name", "").startswith("undefended") for t in spec["data"])
    assert "Undefended point not computed yet" not in captions(at)


def _set_args(command: str) -> list[str]:
    import shlex

    words = shlex.split(command.replace("\\\n", " "))
    return [words[i + 1] for i, w in enumerate(words) if w == "--set"]


def test_copy_run_yaml_and_cli_give_the_same_config_back(store):
    from core.config.schema import load_config

    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("synthetic").run()
    for defense in ("tappfl", "dp_gaussian", "pruning"):
        at.selectbox(key="ap_defense").set_value(defense).run()
        assert not at.exception
        expected = parse_config(build_config(
            preset="quick", dataset="synthetic", attribute="u", seed=0, device="auto",
            defense=defense, lam=0.5, values=preset_widgets("quick"),
            dp={"epsilon": 1.0, "delta": 1e-5, "clip_norm": 1.0} if defense == "dp_gaussian" else None,
            pruning_rate=0.5 if defense == "pruning" else None))
        (text,) = code_blocks(at, "yaml")
        assert parse_config(yaml.safe_load(text)) == expected
        bash = code_blocks(at, "bash")
        assert any(b.startswith("privlab run privlab_attribute_privacy_") for b in bash), bash
        one = next(b for b in bash if b.startswith("privlab run examples/"))
        example = one.split()[2]
        assert load_config(ROOT / example, _set_args(one)) == expected, one
    assert store.list() == []  # copying runs nothing


def test_attribute_page_attackers_multiselect_drives_attack_attackers(store):
    from core.foundation.parts import attacks_for

    store.get_or_run(tappfl_base(tradeoff_lambda=0.5, attackers=("mlp",)), runner=contract_runner)
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("synthetic").run()
    box = at.multiselect(key="ap_attackers")
    # the family's own fresh attackers (not another family's, such as membership's r attack)
    assert set(box.options) == {a.title for a in attacks_for("attribute_privacy")
                                if a.selectable and "representation" in a.accepts}
    assert box.value == ["logreg", "mlp"]
    assert any("No stored result" in i.value for i in at.info)
    box.set_value(["mlp"]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert yaml.safe_load(code_blocks(at, "yaml")[0])["attack"]["attackers"] == ["mlp"]
    # the stored mlp-only run is these settings: shown at once, without the logreg rows
    assert any("from the cache" in c.value for c in at.caption)
    rows = set(attack_frame(at)["attacker"])
    assert "fresh MLP" in rows and "raw x · fresh MLP" in rows
    assert "fresh logistic regression" not in rows
    at.multiselect(key="ap_attackers").set_value([]).run()
    assert "attackers: got an empty list" in " ".join(e.value for e in at.error)
    assert len(store.list()) == 1


def test_history_marks_runs_of_an_older_engine(store):
    def old_runner(cfg, progress=None, cancel=None):
        return dataclasses.replace(contract_runner(cfg), engine_version="0.1.0+000000000000")

    store.get_or_run(tappfl_base(tradeoff_lambda=0.0), runner=contract_runner)
    store.get_or_run(tappfl_base(tradeoff_lambda=1.0), runner=old_runner)
    at = open_page("views/history.py")
    assert not at.exception and not at.error
    table = at.table[0].value
    assert len(table) == 2  # shown, not hidden
    assert sorted(table["engine"]) == ["current", "older engine"]
    assert "computed by an older engine; rerun to refresh" in captions(at)
    old_key = next(r.key for r in store.list() if r.engine_version.startswith("0.1.0"))
    at.selectbox(key="history_run").set_value(old_key).run()
    assert f"Run {old_key[:12]} was computed by an older engine" in captions(at)
    # the selected run can be copied as YAML / CLI
    (text,) = code_blocks(at, "yaml")
    assert parse_config(yaml.safe_load(text)).tradeoff_lambda == 1.0


def test_history_shows_an_old_shape_config(store):
    """A run stored by engine 0.1 (kind tappfl, defense a string, top-level λ) is listed,
    summarised through core.config.migrations and copyable in the current shape."""
    old_cfg = {"kind": "tappfl", "seed": 0, "data": {"name": "synthetic"}, "defense": "tappfl",
               "tradeoff_lambda": 0.25, "dp": {"epsilon": 1.0, "delta": 1e-5, "clip_norm": 1.0},
               "pruning_rate": 0.5, "utility_epochs": 10,
               "fl": {"num_devices": 10, "rounds": 3}}
    from core.foundation.result import Result

    key = "ab" * 32
    res = Result(kind="tappfl", config=old_cfg, seed=0, metrics={"utility_acc": 0.8,
                 "attack_mlp_auc": 0.7}, engine_version="0.1.0", key=key)
    enc = encode(res)
    write_atomic(enc, store.entry_dir(key), store.tmp_dir, key)
    store.index.put(IndexRow(key=key, kind="tappfl", created="2024-01-01T00:00:00", seconds=1.0,
                             engine_version="0.1.0", config=old_cfg, metrics=res.metrics,
                             sha_result=enc.sha_result, sha_artifacts=enc.sha_artifacts))
    store.get_or_run({"kind": "projection", "data": {"name": "digits"}, "max_points": 200})
    at = open_page("views/history.py")
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = at.table[0].value.set_index("key")
    assert table.loc[key[:12], "kind"] == kind_title("attribute_privacy")
    assert table.loc[key[:12], "settings"].startswith("TAPPFL λ=0.25 · 10 devices × 3 rounds")
    assert table.loc[key[:12], "engine"] == "older engine"
    at.selectbox(key="history_kind").set_value("attribute_privacy").run()
    assert list(at.table[0].value["key"]) == [key[:12]]
    at.selectbox(key="history_run").set_value(key).run()
    assert not at.exception and not at.error
    (text,) = code_blocks(at, "yaml")
    cfg = parse_config(yaml.safe_load(text))
    assert cfg.kind == "attribute_privacy" and cfg.defense.kind == "tappfl"
    assert cfg.tradeoff_lambda == 0.25
    assert "older config shape" in captions(at)


# --------------------------------------------------------------------------------------------
# the shared job queue (dashboard/base/jobs.py)


def test_a_queued_run_shows_its_place_in_line_and_cancels_before_starting(store):
    """Every session's runs share one bounded queue: with the only run slot busy and one job
    already waiting, the Data page's projection is 2nd in line; Cancel takes it out of the line
    and it never runs."""
    from dashboard.base import jobs

    gate = threading.Event()
    queue = jobs.reset_queue(max_jobs=1)
    try:
        queue.submit("busy", lambda job: gate.wait(60), label="another session's run")
        queue.submit("next", lambda job: gate.wait(60), label="another session's next run")
        at = open_page("views/data.py")
        assert not at.error, [e.value for e in at.error]
        lines = " ".join(i.value for i in at.info)
        assert "PCA of digits (train): queued: 2nd in line" in lines, lines
        assert "1 of 1 run slots busy · 2 waiting" in lines
        assert "Your runs in the background" not in captions(at)  # shown once, by the page
        assert not has_chart(at, "data_projection")
        cancel = next(b for b in at.button if b.key.startswith("privlab-qcancel-"))
        cancel.click().run()
        assert not at.exception
        assert any("cancelled while waiting in the queue; it never started" in i.value
                   for i in at.info), [i.value for i in at.info]
        assert queue.counts() == {"running": 1, "queued": 1, "max_jobs": 1}
        gate.set()
        assert queue.wait_idle(30)
        assert store.list() == []  # the projection never ran
    finally:
        gate.set()
        jobs.reset_queue()
