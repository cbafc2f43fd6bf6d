"""The Compare and History pages through streamlit.testing.v1.AppTest.

Compare reads a comparison whose points were stored beforehand by a stand-in runner (each
point's metrics a made-up function of its knob, so the page test trains nothing); the sweeps
themselves go through the real sweep runner and store. History: filters by kind, data set,
defense and date, two runs side by side (config diff, headline metrics with intervals), and
the exports."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from cache.store import default_store
from core.config.schema import parse_config
from core.foundation.result import Result
from core.runs import compare as C
from dashboard.base.format import display_name
from dashboard.components.run_history import kind_title
from dashboard.recommendation_check import recommendation_blocks, two_recommendations

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    return default_store()


def fake_membership(cfg, progress=None, cancel=None) -> Result:
    """Made-up membership metrics: privacy knobs lower the AUC and the utility."""
    d = cfg.defense
    priv = {"none": 0.0, "inf2guard": getattr(d, "tradeoff_lambda", 0.0),
            "dp_sgd": min(1.0, 1.0 / (getattr(d, "target_epsilon", None) or 1.0)),
            "channel": 1.0 / (1.0 + getattr(d, "kappa", 1.0) / 4)}[d.kind]
    if d.kind == "channel" and d.channel == "white":
        priv *= 0.8
    wiggle = 0.01 * cfg.seed
    metrics = {"utility_acc": 0.9 - 0.3 * priv + wiggle, "utility_majority": 0.1,
               "mia_auc_best": 0.7 - 0.18 * priv - wiggle, "mia_loss_auc": 0.6 - 0.1 * priv}
    if d.kind == "dp_sgd":
        metrics["epsilon_accountant"] = d.target_epsilon or 10.0
    if d.kind == "channel":
        metrics["kappa"] = d.kappa
    if d.kind == "inf2guard":
        metrics["tradeoff_lambda"] = d.tradeoff_lambda
    auc = metrics["mia_auc_best"]
    return Result(kind="membership", config=cfg.model_dump(mode="json"), seed=cfg.seed,
                  metrics=metrics, intervals={"mia_auc_best": {"lo": auc - 0.03,
                                                               "hi": auc + 0.03, "n": 200}})


def tiny_preset() -> C.ComparisonSpec:
    return C.ComparisonSpec(
        family="membership", data="digits", utility="utility_acc", privacy="mia_auc_best",
        defenses=(C.DefenseSpec.of("inf2guard", (0.0, 0.5, 1.0)),
                  C.DefenseSpec.of("dp_sgd", (0.5, 2.0)),
                  C.DefenseSpec.of("channel", (1.0, 16.0), channel="natural"),
                  C.DefenseSpec.of("channel", (1.0, 16.0), channel="white")),
        seeds=(0, 1), base={"train": {"members": 60, "epochs": 2}})


def populate(store, spec: C.ComparisonSpec) -> list[str]:
    """Store every point with the stand-in runner, then the sweeps (real sweep runner: all
    points found in the store). Returns the sweep keys."""
    from core.config.sweeps import expand

    keys = []
    for _, sweep in C.comparison_sweeps(spec)[0]:
        for p in expand(parse_config(sweep)):
            store.get_or_run(p.config, runner=fake_membership)
        keys.append(store.get_or_run(sweep).key)
    return keys


@pytest.fixture
def preset(monkeypatch):
    monkeypatch.setattr(C, "PRESETS", {"teaching: tiny": tiny_preset, **C.PRESETS})
    return tiny_preset()


def open_page(page: str, **state) -> AppTest:
    """The app, then ``page``; ``state``: session state set before the first run (e.g. a
    Compare preset other than the teaching one, which starts on its own)."""
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def chart(at: AppTest, key: str):
    for c in at.get("plotly_chart"):
        if key in str(getattr(c, "id", "")):
            return json.loads(c.proto.spec)
    return None


def test_compare_page_draws_the_plane_table_and_exports_from_the_store(store, preset):
    populate(store, preset)
    n_runs = len(store.list())
    at = open_page("views/compare.py")
    assert not at.error, [e.value for e in at.error]
    fig = chart(at, "cmp_plane")
    assert fig is not None, "the comparison plane is not drawn"
    names = [t.get("name", "") for t in fig["data"]]
    defended = [n for n in names if n.startswith(("Inf2Guard", "DP-SGD", "κ channel"))]
    assert len(defended) == 4, names  # four defenses on one plane
    assert any(n.startswith("no defense") for n in names)
    assert any(n.startswith("Pareto front") for n in names)
    assert any("chance" in str(a.get("text", "")) for a in fig["layout"].get("annotations", []))
    # equal privacy: a static table, wrapped (fully visible); the scrub table comes first
    table = next(t.value for t in at.table if "dominance test" in t.value.columns)
    assert table.index.name == "attack level ≤" and "dominance test" in table.columns
    assert all(t.get("mode") in ("lines+markers", "markers") for t in fig["data"]
               if t.get("name", "").startswith(("Inf2Guard", "DP-SGD", "κ channel", "no def")))
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Table (CSV)", "Points (CSV)", "Figure (standalone HTML)", "Bundle (.zip)"]
    # scrub the cached grid: the marked points move, nothing runs or is stored
    before = chart(at, "cmp_plane")["data"][-1]
    at.slider(key="cmp_position").set_value(2).run()
    assert not at.exception
    after = chart(at, "cmp_plane")["data"][-1]
    assert after["name"] == "grid position 2" and after["x"] != before["x"]
    assert len(store.list()) == n_runs
    # another privacy metric: same stored points, another y axis
    at.selectbox(key="cmp_privacy").set_value("mia_loss_auc").run()
    assert not at.exception and not at.error
    assert chart(at, "cmp_plane")["layout"]["yaxis"]["title"]["text"].startswith(
        display_name("mia_loss_auc"))
    assert len(store.list()) == n_runs
    # a metric these runs do not report: a one-line error naming what they do report
    at.selectbox(key="cmp_privacy").set_value("mia_tpr_at_0p1pct_fpr_best").run()
    assert not at.exception
    err = " ".join(e.value for e in at.error)
    assert "do not report 'mia_tpr_at_0p1pct_fpr_best'" in err and "mia_auc_best" in err


def test_compare_page_gives_one_recommendation_on_seed_means(store, preset):
    populate(store, preset)
    at = open_page("views/compare.py")
    assert not at.exception, at.exception
    blocks = recommendation_blocks(at)
    assert len(blocks) == 1 and not two_recommendations(at), blocks
    assert "· seed" not in blocks[0]  # never one seed's point
    assert blocks[0].startswith("Threat:") and "release rule" in blocks[0]


def test_compare_page_lists_refused_defenses_and_does_not_run_without_a_click(store, preset):
    at = open_page("views/compare.py", cmp_preset="custom")
    at.selectbox(key="cmp_family").set_value("attribute_privacy").run()
    assert not at.exception
    text = " ".join(c.value for c in at.caption)
    assert "Inf2Guard (λ)" in text and "does not apply to attribute inference on released representations" in text
    assert "tappfl" in at.multiselect(key="cmp_defenses").options[0] or \
        "TAPPFL" in str(at.multiselect(key="cmp_defenses").options)
    assert "Run the comparison" in " ".join(i.value for i in at.info)
    assert store.list() == []  # a custom comparison waits for the button


def test_compare_page_bad_grid_is_one_line_and_stores_nothing(store, preset):
    at = open_page("views/compare.py", cmp_preset="custom")
    at.selectbox(key="cmp_family").set_value("membership").run()
    at.text_input(key="cmp_grid_dp_sgd").set_value("0.5, abc").run()
    errs = [e.value for e in at.error]
    assert any("'abc' is not a number" in e and "\n" not in e for e in errs), errs
    at.text_input(key="cmp_grid_dp_sgd").set_value("0.5, 50000").run()
    errs = " ".join(e.value for e in at.error)
    assert "grid: got '50000'; allowed range" in errs, errs
    assert at.button(key="cmp_run").disabled
    assert store.list() == []


def test_compare_page_empty_grid_has_one_message(store, preset):
    at = open_page("views/compare.py", cmp_preset="custom")
    at.selectbox(key="cmp_family").set_value("membership").run()
    for text in ("", " , ;"):
        at.text_input(key="cmp_grid_dp_sgd").set_value(text).run()
        errs = [e.value for e in at.error]
        assert len(errs) == 1 and "empty grid; give one or more ε values" in errs[0], errs
    # in the engine an empty grid is no error: DefenseSpec(grid=()) is one point at the block's
    # own parameters (DP-SGD's ε = ∞ point, tests/test_audit_runs.py); the page never sends one
    assert at.button(key="cmp_run").disabled


def test_compare_page_invalid_grid_box_keeps_other_inputs_and_the_last_plot(store, preset):
    populate(store, preset)
    at = open_page("views/compare.py")
    plot = chart(at, "cmp_plane")
    assert plot is not None
    grids = {k: at.text_input(key=k).value for k in
             ("cmp_grid_inf2guard", "cmp_grid_channel:natural", "cmp_grid_channel:white")}
    seeds = at.slider(key="cmp_seeds").value
    n_runs = len(store.list())
    at.text_input(key="cmp_grid_dp_sgd").set_value("0.5, 2x").run()
    assert not at.exception
    errs = [e.value for e in at.error]
    assert len(errs) == 1 and "'2x' is not a number" in errs[0], errs
    # the other boxes and the seeds slider are drawn with their values; the plot is the last
    assert {k: at.text_input(key=k).value for k in grids} == grids
    assert at.slider(key="cmp_seeds").value == seeds
    assert at.button(key="cmp_run").disabled
    assert chart(at, "cmp_plane")["data"] == plot["data"]
    assert "last comparison run" in " ".join(c.value for c in at.caption)
    assert len(store.list()) == n_runs  # nothing ran
    # fixed: the same comparison again, Run enabled
    at.text_input(key="cmp_grid_dp_sgd").set_value("0.5, 2").run()
    assert not at.error and not at.button(key="cmp_run").disabled
    assert chart(at, "cmp_plane")["data"] == plot["data"]


# ---------------------------------------------------------------------------------------------
# History


def test_history_filters_diffs_and_exports(store, preset):
    populate(store, preset)
    store.get_or_run({"kind": "projection", "data": {"name": "digits"}, "max_points": 200})
    at = open_page("views/history.py")
    assert not at.exception and not at.error
    table = at.table[0].value
    assert {kind_title("membership"), "sweep", "projection"} <= set(table["kind"])
    assert len(at.get("download_button")) == 4  # CSV, JSON, the selected run and its bundle
    at.multiselect(key="history_defense").set_value(["dp_sgd"]).run()
    table = at.table[0].value
    assert set(table["defense"]) == {"DP-SGD (Opacus)"} and set(table["kind"]) == {kind_title("membership"), "sweep"}
    assert len(table) == 5  # 2 knob values × 2 seeds, and their sweep
    at.multiselect(key="history_defense").set_value([]).run()
    at.multiselect(key="history_data").set_value(["digits"]).run()
    assert len(at.table[0].value) == len(store.list())
    today = dt.datetime.now(dt.UTC).date()
    at.date_input(key="history_dates").set_value((today - dt.timedelta(days=3),
                                                   today - dt.timedelta(days=2))).run()
    assert "No stored run matches these filters" in " ".join(i.value for i in at.info)
    at.date_input(key="history_dates").set_value((today, today)).run()
    at.selectbox(key="history_kind").set_value("membership").run()
    assert set(at.table[0].value["kind"]) == {kind_title("membership")}
    # two runs side by side
    at.toggle(key="history_pair").set_value(True).run()
    assert not at.exception
    runs = {r.key: r for r in store.list(kind="membership")}
    a = next(k for k, r in runs.items() if r.config["defense"]["kind"] == "dp_sgd"
             and r.config["defense"]["target_epsilon"] == 2.0 and r.config["seed"] == 0)
    b = next(k for k, r in runs.items() if r.config["defense"]["kind"] == "dp_sgd"
             and r.config["defense"]["target_epsilon"] == 0.5 and r.config["seed"] == 1)
    at.selectbox(key="history_a").set_value(a).run()
    at.selectbox(key="history_b").set_value(b).run()
    assert not at.exception and not at.error
    frames = [d.value for d in at.dataframe]
    metrics = next(f for f in frames if "B − A" in getattr(f, "columns", []))
    diff = next(f for f in frames if "field" in getattr(f, "columns", []))
    assert set(diff["field"]) == {"defense.target_epsilon", "seed"}
    from dashboard.base.format import display_name  # headers read names, not keys

    row = metrics.set_index("metric").loc[display_name("mia_auc_best")]
    assert row["A 95 % interval"] and row["B 95 % interval"] and row["B − A"].startswith("-")
    # the budget of the runs' defense
    assert display_name("epsilon_accountant") in set(metrics["metric"])
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Figure (standalone HTML)" in labels and "Both runs (JSON)" in labels
    assert any("history_pair_chart" in str(getattr(c, "id", "")) for c in at.get("plotly_chart"))


def test_history_diff_and_pair_figure_helpers():
    from dashboard.components.compare_plot import figure_html
    from dashboard.components.history_diff import config_diff, metric_rows, pair_figure

    a = {"kind": "membership", "defense": {"kind": "dp_sgd", "noise_multiplier": 1.0}, "seed": 0}
    b = {"kind": "membership", "defense": {"kind": "channel", "kappa": 4.0}, "seed": 0}
    rows = {r["field"]: (r["A"], r["B"]) for r in config_diff(a, b)}
    assert rows == {"defense.kind": ("dp_sgd", "channel"), "defense.noise_multiplier": ("1.0", "—"),
                    "defense.kappa": ("—", "4.0")}
    ra = Result(kind="membership", config=a, seed=0, metrics={"mia_auc_best": 0.6},
                intervals={"mia_auc_best": {"lo": 0.55, "hi": 0.65, "n": 100}})
    rb = Result(kind="membership", config=b, seed=0, metrics={"mia_auc_best": 0.5})
    (row,) = metric_rows(["mia_auc_best"], ra, rb)
    assert row["A 95 % interval"] == "0.55 … 0.65" and row["B 95 % interval"] == ""
    assert row["B − A"] == "-0.1"
    html = figure_html(pair_figure(["mia_auc_best"], ra, rb, ("A", "B")))
    assert html.lstrip().lower().startswith("<!doctype html>") and len(html) > 1_000_000
    assert "plotly.js v" in html.lower() or "plotly.js" in html.lower()  # embedded: opens offline
