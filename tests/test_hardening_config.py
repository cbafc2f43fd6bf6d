"""Bounded inputs (issue 21): generated configs of every kind, hostile config files, ranges
the mathematics supports, capped solvers, non-finite metrics refused.

The fuzz is validation only (nothing runs): a fixed-seed hypothesis search of at least 200
cases per kind, generated from the pydantic schema (benchmarks/config_fuzz.py), each under a
wall-clock limit; every case validates or is refused with one line per problem naming a field.
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from benchmarks.config_fuzz import check_case, config_strategy, field_names
from core.config.schema import (
    CONFIG_MODELS,
    MAX_SWEEP_POINTS,
    ConfigError,
    load_config,
    parse_config,
)

CASES_PER_KIND = 200
CASE_LIMIT_S = 5.0
NAMES = field_names()


@pytest.mark.parametrize("kind", list(CONFIG_MODELS))
def test_generated_configs_validate_or_name_the_field(kind):
    seen: Counter[str] = Counter()
    failures: list[str] = []

    # a sweep nests a whole base config and a grid: few of its draws are valid, and a run of
    # 200 can hold almost none, so it draws twice as many
    n = CASES_PER_KIND * (2 if kind == "sweep" else 1)

    @settings(max_examples=n, derandomize=True, database=None,
              deadline=timedelta(seconds=CASE_LIMIT_S), suppress_health_check=list(HealthCheck))
    @given(config_strategy(kind))
    def case(obj):
        out = check_case(obj, limit_s=CASE_LIMIT_S, names=NAMES)
        seen[out.status] += 1
        if out.status not in ("valid", "rejected"):
            failures.append(f"{out.status}: {out.detail} <- {str(obj)[:300]}")

    case()
    assert not failures, failures[:3]
    assert sum(seen.values()) >= CASES_PER_KIND, seen
    assert seen["valid"] >= 5 and seen["rejected"] >= 5, seen  # both sides are exercised


# -- hostile config files -----------------------------------------------------------------------

LOL = """kind: projection
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def _hostile_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name -> (path, a fragment the one-line message must contain)."""
    f: dict[str, tuple[Path, str]] = {}

    def put(name: str, data: bytes | str, needle: str) -> None:
        p = tmp / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        f[name] = (p, needle)

    fifo = tmp / "fifo.yaml"
    os.mkfifo(fifo)
    f["fifo"] = (fifo, "FIFO")
    f["device"] = (Path("/dev/zero"), "character device")
    f["folder"] = (tmp, "is a folder")
    f["missing"] = (tmp / "nope.yaml", "cannot read")
    put("big.yaml", b"kind: projection\n" + b"#" * (1 << 20), "the cap is 1,048,576 bytes")
    put("dup.yaml", "kind: projection\nseed: 1\nseed: 2\n", "duplicate key 'seed' (first on line 2)")
    put("dup.json", '{"kind": "projection", "seed": 1, "seed": 2}', "duplicate key 'seed'")
    put("latin1.yaml", b"kind: projection\nmethod: caf\xe9\n", "not UTF-8 text (line 2, column 12: byte 0xe9)")
    put("lol.yaml", LOL, "more than 200,000 values once YAML aliases are expanded")
    put("deep.yaml", "kind: projection\nx: " + "[" * 600 + "]" * 600 + "\n", "nests deeper than 32")
    put("deeper.yaml", "kind: projection\nx: " + "[" * 5000 + "]" * 5000 + "\n", "not valid YAML")
    put("deep.json", '{"kind": "projection", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "nests too deeply")
    put("cycle.yaml", "kind: projection\nx: &a [*a]\n", "refers to itself")
    put("list_kind.yaml", "kind: [1, 2]\n", "kind: got [1, 2]; allowed: projection")
    put("dict_kind.yaml", "kind: {a: 1}\n", "kind: got {'a': 1}; allowed")
    put("int_key.yaml", "kind: projection\n1: 2\n", "key 1 at the top is not text")
    put("list.yaml", "- kind: projection\n", "must hold a mapping")
    put("tags.yaml", "kind: !!python/object/apply:os.system [echo hi]\n", "not valid YAML")
    put("bad.yaml", "kind: projection\nmethod: [unclosed\n", "not valid YAML: line 3")
    return f


def test_hostile_config_files_are_one_line_and_fast(tmp_path):
    for name, (path, needle) in _hostile_files(tmp_path).items():
        signal.alarm(10)  # a FIFO must not block: fail loudly instead of hanging the suite
        t0 = time.perf_counter()
        try:
            with pytest.raises(ConfigError) as err:
                load_config(path)
        finally:
            signal.alarm(0)
        msg = str(err.value)
        assert "\n" not in msg and needle in msg, (name, msg)
        assert time.perf_counter() - t0 < 5.0, name


def test_hostile_set_values_and_mappings():
    lol = LOL.split("\n", 1)[1].replace("\n", ", ")
    for bad, needle in ((["x={" + lol + "}"], "aliases"), (["a=" + "[" * 200 + "]" * 200], "nests")):
        with pytest.raises(ConfigError, match=needle):
            from core.config.schema import apply_overrides

            apply_overrides({"kind": "projection"}, bad)
    deep: dict = {"kind": "projection"}
    cur = deep
    for _ in range(1000):  # a mapping nested 1000 deep (RecursionError in deepcopy before)
        cur["x"] = {}
        cur = cur["x"]
    with pytest.raises(ConfigError, match="nests deeper than 32 levels"):
        parse_config(deep)
    shared = ["lol"] * 10
    for _ in range(7):
        shared = [shared] * 10
    with pytest.raises(ConfigError, match="more than 200,000 values"):
        parse_config({"kind": "projection", "x": shared})
    for kind in ([1], {"a": 1}, 3, None):
        with pytest.raises(ConfigError, match="kind: got"):
            parse_config({"kind": kind})


# -- ranges the mathematics supports --------------------------------------------------------

@pytest.mark.parametrize("cfg,needle", [
    ({"kind": "attribute_privacy", "defense": {"kind": "dp_gaussian", "delta": 1e-320}},
     "defense.delta: got 1e-320; allowed range 1e-12 <= value < 1"),
    ({"kind": "attribute_privacy", "defense": {"kind": "dp_gaussian", "delta": 1e-309}},
     "defense.delta: got 1e-309"),
    ({"kind": "attribute_privacy", "defense": {"kind": "dp_laplace", "epsilon": 1e-300}},
     "defense.epsilon: got 1e-300; allowed range 0.001 <= value"),
    ({"kind": "gradient_leakage", "defense": {"kind": "dp_sgd", "target_epsilon": 1e-300}},
     "defense.target_epsilon: got 1e-300; allowed range 0.01 <= value"),
    ({"kind": "gradient_leakage", "defense": {"kind": "channel", "kappa": 1e-300}},
     "defense.kappa: got 1e-300; allowed range 0.001 <= value"),
    ({"kind": "membership", "defense": {"kind": "channel", "kappa": 1e-300}}, "defense.kappa"),
    ({"kind": "membership", "defense": {"kind": "dp_sgd", "noise_multiplier": 1e-300}},
     "defense.noise_multiplier: got 1e-300; allowed range 0.05 <= value"),
    ({"kind": "fisher_information", "defense": {"eta_target": 1e-300}},
     "defense.eta_target: got 1e-300; allowed range 0.0001 <= value"),
    ({"kind": "fisher_information", "defense": {"sigma": 1e-300}}, "defense.sigma: got 1e-300"),
    ({"kind": "fisher_information", "model": {"model": "logistic"},
      "defense": {"epsilon": 1.0, "dp_method": "classic"}},
     "defense.epsilon: got 1; the classic Gaussian calibration"),
    ({"kind": "fisher_information", "model": {"model": "logistic"},
      "defense": {"epsilon": 5.0, "dp_method": "classic"}}, "holds for 0 < ε < 1 only"),
    ({"kind": "fisher_information", "attack": {"attackers": []}}, "attack.attackers: got an empty list"),
    ({"kind": "repr_reconstruction", "bound": {"eta_rmse": 1e-300}}, "bound.eta_rmse: got 1e-300"),
    ({"kind": "projection", "perplexity": float("nan")}, "perplexity: got nan"),
    ({"kind": "projection", "min_dist": float("inf")}, "min_dist: got inf"),
    ({"kind": "projection", "data": {"data_dir": "/nonexistent/privlab-data"}},
     "data.data_dir: got '/nonexistent/privlab-data'; no such folder"),
])
def test_out_of_math_range_rejected_at_validation(cfg, needle):
    with pytest.raises(ConfigError) as err:
        parse_config(cfg)
    assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_in_range_edges_still_validate():
    parse_config({"kind": "attribute_privacy", "defense": {"kind": "dp_gaussian", "delta": 1e-12,
                                                          "epsilon": 1e-3}})
    parse_config({"kind": "fisher_information", "model": {"model": "logistic"},
                  "defense": {"epsilon": 0.5, "dp_method": "classic"}})
    parse_config({"kind": "fisher_information", "model": {"model": "logistic"},
                  "defense": {"epsilon": 5.0, "dp_method": "rdp"}})
    parse_config({"kind": "projection", "data": {"data_dir": "/tmp"}})


def test_gaussian_calibration_is_capped_not_infinite():
    from core.defenses.dp import analytic_gaussian_sigma

    for delta in (1e-320, 1e-309):
        t0 = time.perf_counter()
        # refused at the door with the block's range (core.config.base.Delta), never calibrated
        with pytest.raises(ValueError, match=f"delta: got {delta!r}; allowed range 1e-12"):
            analytic_gaussian_sigma(1.0, delta, 2.0)
        assert time.perf_counter() - t0 < 2.0
    assert math.isfinite(analytic_gaussian_sigma(1e-3, 1e-12, 2000.0))


def test_grid_caps_state_the_count():
    big = {"kind": "sweep", "base": {"kind": "projection"},
           "grid": {"perplexity": [float(v) for v in np.linspace(2, 100, 200)],
                    "min_dist": [float(v) for v in np.linspace(0, 1, 60)]}, "seeds": [0]}
    with pytest.raises(ConfigError, match=f"grid: got 12000 points .*allowed at most {MAX_SWEEP_POINTS}"):
        parse_config(big)
    from core.runs.compare import ComparisonSpec, DefenseSpec, comparison_sweeps

    spec = ComparisonSpec("membership", "digits", "utility_acc", "mia_auc_best",
                          (DefenseSpec.of("inf2guard", grid=np.linspace(0, 1, 600)),
                           DefenseSpec.of("dp_sgd", grid=np.geomspace(0.1, 10, 600))),
                          seeds=tuple(range(10)))
    with pytest.raises(ValueError, match=r"grid: got 12,010 points over 3 defenses"):
        comparison_sweeps(spec)


# -- a non-finite metric fails the run and stores nothing -----------------------------------

def test_nonfinite_metric_fails_the_run_and_stores_nothing(tmp_path, monkeypatch):
    import core.runs.experiments as ex
    from cache.store import ResultStore
    from core.foundation.finite import NonFiniteMetric
    from core.foundation.result import Result

    def runner(metrics):
        def run(cfg, progress, stages, **kw):
            return Result(kind=cfg.kind, config={}, seed=cfg.seed, metrics=metrics)
        return run

    store = ResultStore(tmp_path)
    for bad, name in (({"trustworthiness": math.nan}, "trustworthiness"),
                      ({"n_points": math.inf}, "n_points"), ({"unregistered_x": -math.inf}, "unregistered_x"),
                      ({"utility_acc": math.inf}, "utility_acc"), ({"train_acc": math.nan}, "train_acc")):
        monkeypatch.setattr(ex, "get_runner", lambda kind, b=bad: runner(b))
        with pytest.raises(NonFiniteMetric, match=f"metric {name}: got"):
            store.get_or_run({"kind": "projection"})
        assert store.list() == [] and not any(store.runs_dir.glob("??/*"))
    # undefined by design (a bound not computed, an unbounded ε, an exact reconstruction)
    ok = {"bound_thm1_rhs": math.nan, "epsilon_accountant": math.inf, "recon_best_psnr": math.inf,
          "ce_loss": math.nan, "trustworthiness": 0.9}  # ce_loss: a diverged training, reported
    monkeypatch.setattr(ex, "get_runner", lambda kind: runner(ok))
    assert store.get_or_run({"kind": "projection"}).metrics["trustworthiness"] == 0.9
