"""Sweeps (kind ``sweep``; core/config/sweeps.py, core/runs/sweep.py, core/runs/pool.py, cache/store.run_point): expansion,
one-line errors naming the grid path, keys that exclude the executor, only missing points run,
serial / local pool / Ray give the same rows, cancel keeps finished points, the CLI.

Points are tiny attribute-privacy runs (400 rows, 2 devices, 1 round, logistic attacker only).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import pickle
from pathlib import Path

import pytest
import yaml

from cache.store import ResultStore
from core.catalog.dp_gaussian import DPGaussianDefense
from core.config.schema import ConfigError, cache_key, load_config, parse_config
from core.config.sweeps import expand, rows_to_csv
from core.foundation.metric_schema import unregistered
from core.foundation.progress import Cancelled, CancelToken

ROOT = Path(__file__).resolve().parents[1]
TINY = {"kind": "attribute_privacy", "data": {"name": "synthetic", "n_samples": 400},
        "fl": {"num_devices": 2, "rounds": 1, "fraction_fit": 1.0, "local_epochs": 1},
        "attack": {"attackers": ["logreg"]}, "projection_points": 0, "pretrain_epochs": 0,
        "representation_dim": 8, "hidden_dim": 16, "critic_hidden": 16}
LAM = "defense.tradeoff_lambda"


def sweep(**over) -> dict:
    """2 λ × 1 seed of the tiny config (``over``: sweep fields)."""
    return {"kind": "sweep", "base": TINY, "grid": {LAM: [0.0, 1.0]}, "seeds": [0], **over}


def point(lam: float, seed: int = 0, **fl) -> dict:
    cfg = copy.deepcopy(TINY)
    cfg.update(defense={"kind": "tappfl", "tradeoff_lambda": lam}, seed=seed)
    cfg["fl"].update(fl)
    return cfg


def counts(result) -> tuple[int, int, int]:
    m = result.metrics
    return int(m["points_total"]), int(m["points_run"]), int(m["points_cached"])


# --------------------------------------------------------------------------------------------
# expansion and validation (no runs)


def test_expand_dotted_paths_times_seeds():
    cfg = parse_config(sweep(grid={LAM: [0.0, 1.0], "fl.rounds": [1, 2]}, seeds=[0, 3]))
    pts = expand(cfg)
    assert [(p.values[LAM], p.values["fl.rounds"], p.seed) for p in pts] == [
        (0.0, 1, 0), (0.0, 1, 3), (0.0, 2, 0), (0.0, 2, 3),
        (1.0, 1, 0), (1.0, 1, 3), (1.0, 2, 0), (1.0, 2, 3)]
    for p in pts:  # each point is the plain run of its config: same validated model, same key
        assert p.config.seed == p.seed and p.config.fl.rounds == p.values["fl.rounds"]
        assert p.key == cache_key(parse_config(point(p.values[LAM], p.seed, rounds=p.values["fl.rounds"])))
    assert pts[1].label == "defense.tradeoff_lambda=0.0, fl.rounds=1, seed=3"
    assert parse_config(sweep(seeds=None, base={**TINY, "seed": 7})).seeds == [7]


def test_grid_over_a_block_kind_starts_a_fresh_block():
    pts = expand(parse_config(sweep(grid={"defense.kind": ["none", "dp_gaussian"]})))
    assert [p.config.defense.model_dump() for p in pts] == [{"kind": "none"},
                                                             DPGaussianDefense().model_dump()]
    # the kind is set before its block's fields, whatever the grid's order
    pts = expand(parse_config(sweep(grid={"defense.epsilon": [1.0, 4.0], "defense.kind": ["dp_laplace"]})))
    assert [(p.config.defense.kind, p.config.defense.epsilon) for p in pts] == [("dp_laplace", 1.0),
                                                                                ("dp_laplace", 4.0)]


@pytest.mark.parametrize("over, message", [
    ({"grid": {LAM: [0.5, 1.5]}}, "grid.defense.tradeoff_lambda: got 1.5; allowed range 0 <= value <= 1"),
    ({"grid": {"fl.roundz": [3]}}, "grid.fl.roundz: unknown field (got 3)"),
    ({"grid": {"nope.deeper": [1]}}, "grid.nope.deeper: unknown field"),
    ({"grid": {"defense.kind": ["tappfl", "foo"]}}, "grid.defense.kind: got 'foo'; allowed: 'none', "),
    ({"grid": {"defense.kind": ["none"], "defense.epsilon": [1.0]}},
     "grid.defense.epsilon: unknown field (got 1.0)"),
    ({"grid": {"seed": [1, 2]}}, "grid.seed: set the sweep's seeds instead"),
    ({"grid": {"kind": ["projection"]}}, "grid.kind: a sweep's points share the base's kind"),
    ({"grid": {"fl.rounds": []}}, "grid.fl.rounds: got []; List should have at least 1 item"),
    ({"base": {**TINY, "fl": {"rounds": 0}}}, "base.fl.rounds: got 0; allowed range 1 <= value <= 200"),
    ({"base": sweep()}, "base.kind: got 'sweep'; a sweep of a sweep is not allowed"),
    ({"workers": 0}, "workers: got 0; allowed range 1 <= value <= 1024"),
    ({"executor": "gpu"}, "executor: got 'gpu'; "),
    ({"seeds": [-1]}, "seeds.0: got -1; allowed range 0 <= value <= 2147483647"),
])
def test_invalid_sweeps_are_one_line_errors_naming_the_path(over, message):
    with pytest.raises(ConfigError) as err:
        parse_config(sweep(**over))
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


def test_cli_rejects_a_bad_grid_in_one_line_and_stores_nothing(tmp_path, capsys):
    from cli.main import main

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(sweep(grid={LAM: [1.5]})))
    assert main(["sweep", str(path), "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err == ("privlab: error: grid.defense.tradeoff_lambda: got 1.5; allowed range "
                   "0 <= value <= 1\n")
    assert ResultStore(tmp_path / "c").list() == []


def test_config_error_crosses_processes_with_its_problems():
    # a pool worker's ConfigError is pickled back to the sweep's process
    err = pickle.loads(pickle.dumps(ConfigError(["a: got 1", "b: got 2"])))
    assert err.problems == ["a: got 1", "b: got 2"] and str(err) == "a: got 1\nb: got 2"


def test_keys_exclude_where_points_run():
    keys = {cache_key(parse_config(sweep(executor=e, workers=w, ray_address=a)))
            for e, w, a in (("serial", None, None), ("local", 2, None), ("ray", 4, "ray://h:10001"))}
    assert len(keys) == 1
    # the base as given or with its defaults spelled out: one sweep
    assert cache_key(parse_config(sweep(base=parse_config(TINY).model_dump(mode="json")))) in keys
    assert cache_key(parse_config(sweep(grid={LAM: [0.0, 0.5]}))) not in keys
    assert cache_key(parse_config(sweep(seeds=[1]))) not in keys
    for ex in ("serial", "local", "ray"):  # the points are the plain runs whatever the executor
        assert [p.key for p in expand(parse_config(sweep(executor=ex)))] == [
            cache_key(parse_config(point(0.0))), cache_key(parse_config(point(1.0)))]


def test_example_sweep_shares_its_points_with_the_attribute_privacy_page():
    from dashboard.tappfl_settings import LAMBDA_GRID, build_config, preset_widgets

    cfg = load_config(ROOT / "examples" / "sweep_tappfl_lambda.yaml")
    pts = expand(cfg)
    assert len(pts) == 15 and cfg.seeds == [0, 1, 2] and cfg.executor == "serial"
    page = {lam: cache_key(parse_config(build_config(
        preset="quick", dataset="synthetic", attribute="u", seed=0, device="auto", defense="tappfl",
        lam=lam, values=preset_widgets("quick"), attackers=("logreg", "mlp")))) for lam in LAMBDA_GRID}
    # the page's teaching grid (0, 0.5, 1) is part of the example's five λ: those points are shared
    ex = {p.values[LAM]: p.key for p in pts if p.seed == 0}
    assert set(page) < set(ex) and {lam: ex[lam] for lam in page} == page


def test_rows_to_csv():
    rows = [{LAM: 0.0, "seed": 0, "key": "ab", "from_cache": True, "utility_acc": 0.9,
             "utility_acc_lo": 0.85, "defense": {"kind": "none"}},
            {LAM: 1.0, "seed": 0, "key": "cd", "from_cache": False, "utility_acc": float("nan")}]
    text = rows_to_csv(rows, [LAM, "seed", "key", "from_cache", "utility_acc", "utility_acc_lo",
                              "defense"])
    got = list(csv.reader(io.StringIO(text)))
    assert got == [[LAM, "seed", "key", "from_cache", "utility_acc", "utility_acc_lo", "defense"],
                   ["0.0", "0", "ab", "True", "0.9", "0.85", '{"kind": "none"}'],
                   ["1.0", "0", "cd", "False", "", "", ""]]
    # default order: fixed columns first, the rest as first seen
    assert next(csv.reader(io.StringIO(rows_to_csv(rows)))) == [
        "seed", "key", "from_cache", LAM, "utility_acc", "utility_acc_lo", "defense"]


# --------------------------------------------------------------------------------------------
# runs (tiny points)


def test_only_missing_points_run_and_every_executor_shares_them(tmp_path):
    store = ResultStore(tmp_path)
    r1 = store.get_or_run(sweep())
    assert r1.kind == "sweep" and not r1.from_cache and counts(r1) == (2, 2, 0)
    assert unregistered(r1.metrics) == []
    rows = r1.info["rows"]
    assert [(r[LAM], r["seed"], r["from_cache"]) for r in rows] == [(0.0, 0, False), (1.0, 0, False)]
    assert r1.info["columns"][:4] == [LAM, "seed", "key", "from_cache"]
    for r in rows:  # each point stored under its own config's key, headline metrics in its row
        run = store.peek(point(r[LAM]))
        assert r["key"] == run.key and r["utility_acc"] == run.metrics["utility_acc"]
        assert (r["attack_auc_best_lo"], r["attack_auc_best_hi"]) == run.interval("attack_auc_best")
        assert r["tradeoff_lambda"] == r[LAM]  # TAPPFL's budget
    # a superset of the grid: only the new point runs; a cached row equals the computed one
    r2 = store.get_or_run(sweep(grid={LAM: [0.0, 0.5, 1.0]}))
    assert counts(r2) == (3, 1, 2)
    assert [r["from_cache"] for r in r2.info["rows"]] == [True, False, True]
    assert {**r2.info["rows"][0], "from_cache": False} == rows[0]
    # the same sweep on another executor is the same sweep: served from the store
    r3 = store.get_or_run(sweep(executor="local", workers=2))
    assert r3.from_cache and r3.key == r1.key and counts(r3) == (2, 2, 0)
    # a stored sweep whose point is gone is not served: the point runs again, alone
    assert store.delete(rows[1]["key"])
    assert store.peek(sweep()) is None
    r4 = store.get_or_run(sweep())
    assert not r4.from_cache and r4.key == r1.key and counts(r4) == (2, 1, 1)
    assert store.get(r4.key).info["rows"] == r4.info["rows"]  # rows survive the round trip
    assert len(store.list(kind="sweep")) == 2 and len(store.list(kind="attribute_privacy")) == 3


def test_run_without_a_store_keeps_points_in_memory_serial_only():
    from core.runs.experiments import run

    r = run(sweep(grid={LAM: [0.25]}))
    assert r.kind == "sweep" and counts(r) == (1, 1, 0) and r.info["rows"][0][LAM] == 0.25
    with pytest.raises(ConfigError, match="executor: got 'local'; it needs a result store"):
        run(sweep(executor="local"))


@pytest.fixture(scope="module")
def serial_rows(tmp_path_factory):
    """The tiny sweep's rows computed serially; from here on workers and this process read
    the same engine source (the fingerprint is read afresh, the pool restarted)."""
    from core.foundation.fingerprint import engine_fingerprint
    from core.runs.sweep import shutdown_pool

    engine_fingerprint.cache_clear()
    shutdown_pool()
    r = ResultStore(tmp_path_factory.mktemp("serial")).get_or_run(sweep())
    assert counts(r) == (2, 2, 0)
    return r.info["rows"]


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_local_pool_and_ray_give_the_serial_rows(executor, serial_rows, tmp_path, request):
    if executor == "ray":
        request.getfixturevalue("ray_session")  # skips without Ray
    r = ResultStore(tmp_path).get_or_run(sweep(executor=executor, workers=2))
    assert counts(r) == (2, 2, 0) and r.info["executor"] == executor and r.info["workers"] == 2
    assert r.info["rows"] == serial_rows


def test_prewarm_starts_every_worker_and_the_sweep_reuses_the_pool(serial_rows, tmp_path):
    """A pool started ahead: all workers up with the engine imported; a local sweep then runs
    on that same pool, with the serial rows."""
    import core.runs.sweep as S
    from core.runs.pool import current_pool

    S.shutdown_pool()
    seconds = S.prewarm_pool(2, "cache.store")
    pool = current_pool()
    assert seconds > 0 and pool.workers == 2 and len(pool.processes()) == 2
    r = ResultStore(tmp_path).get_or_run(sweep(executor="local", workers=2))
    assert current_pool() is pool and r.info["rows"] == serial_rows


@pytest.mark.parametrize("executor", ["serial", "local"])
def test_cancel_keeps_finished_points_and_stores_no_sweep(executor, tmp_path):
    store, token, seen = ResultStore(tmp_path), CancelToken(), []

    def progress(fraction: float, message: str) -> None:
        seen.append((fraction, message))
        if message.startswith("point 1/2 done"):
            token.cancel()

    with pytest.raises(Cancelled):
        store.get_or_run(sweep(executor=executor, workers=1), progress=progress, cancel=token)
    assert any(f == 0.5 and "defense.tradeoff_lambda=" in m for f, m in seen), seen
    (kept,) = store.list()
    assert kept.kind == "attribute_privacy"
    assert store.peek(sweep()) is None
    # running it again runs only the other point
    r = store.get_or_run(sweep(executor="serial"))
    assert counts(r) == (2, 1, 1)


def test_worker_does_not_start_a_point_after_cancel(tmp_path):
    from cache.store import run_point

    flag = tmp_path / "cancel"
    flag.touch()
    with pytest.raises(Cancelled):
        run_point(str(tmp_path / "store"), point(0.0), str(flag))
    assert ResultStore(tmp_path / "store").list() == []


def test_cli_sweep_prints_rows_writes_csv_and_json(tmp_path, capsys):
    from cli.main import main

    path, out = tmp_path / "sweep.yaml", tmp_path / "rows.csv"
    path.write_text(yaml.safe_dump(sweep()))
    cache = ["--cache-dir", str(tmp_path / "c")]
    assert main(["sweep", str(path), "--csv", str(out), *cache]) == 0
    text = capsys.readouterr().out
    assert "2 points, 2 run, 0 from the store" in text and "defense.tradeoff_lambda" in text
    table = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [float(r[LAM]) for r in table] == [0.0, 1.0] and "attack_auc_best_hi" in table[0]
    # another executor: the same sweep, from the store
    assert main(["sweep", str(path), "--executor", "local", "--workers", "1", "--json", *cache]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["from_cache"] is True and got["metrics"]["points_total"] == 2
    assert [r["key"] for r in got["rows"]] == [r["key"] for r in table]
    assert main(["sweep", str(ROOT / "examples" / "tappfl_synthetic_quick.yaml"), *cache]) == 2
    assert "`privlab sweep` runs kind: sweep" in capsys.readouterr().err
