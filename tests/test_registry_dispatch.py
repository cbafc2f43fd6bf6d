"""The registry as the one source of names and dispatch (issue #19).

- A temporary attack registered in one place (:func:`temporary_attack`: its part and its
  function live in this module) appears in the config's allowed names, the metric schema, the
  Membership page's attacker list and ``privlab parts``, and a run scores it, with no other
  edit. ``benchmarks/registry_bench.py`` counts the files it took.
- The same AST counters as the benchmark: no attack-name or defense-kind branch in
  ``core/runs/``, every attack-family runner on the protocol, one seed mixer, no layer
  violation; and the counters do see what they count.
- Two different runs interleaved in two threads of one process give the metrics each gives
  alone, and a run leaves the global random states alone.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from benchmarks import registry_bench as R
from core.attacks.membership import MembershipRelease, MembershipScores
from core.foundation.knowledge import ThreatModel
from core.foundation.parts import ATTACKS, AttackPart

TEMP_NAME = "mia_temp_margin"
MEMBERSHIP_TINY = {"kind": "membership", "data": {"name": "digits"},
                   "train": {"members": 80, "epochs": 8, "batch_size": 32},
                   "attack": {"shadows": 4, "rmia_references": 1}, "projection_points": 0}
LEAKAGE_TINY = {"kind": "gradient_leakage", "data": {"name": "digits"},
                "train": {"model": "mlp", "epochs": 1, "batch_size": 64},
                "attack": {"attackers": ["idlg"], "targets": 2, "iterations": 20,
                           "model_inversion": False}}


# ---------------------------------------------------------------------------------------------
# a temporary attack, registered in one place


def margin_on_release(release: MembershipRelease, knowledge: Any = None,
                      **_: Any) -> MembershipScores:
    """The confidence margin p_y − max_{c≠y} p_c of each candidate (higher = member)."""
    p = np.asarray(release.probs, dtype=np.float64)
    y = np.asarray(release.labels).astype(int)
    rows = np.arange(len(y))
    others = p.copy()
    others[rows, y] = -np.inf
    return MembershipScores(p[rows, y] - others.max(axis=1))


@contextlib.contextmanager
def temporary_attack() -> Iterator[AttackPart]:
    """Register the margin attack for the membership family; unregister it afterwards."""
    part = AttackPart(
        name=TEMP_NAME, title="confidence margin (temporary)", accepts=("model",),
        threat=ThreatModel(sees="the released model's class probabilities on the candidates",
                           knows="each candidate record (x, y)",
                           goal="decide whether each candidate was in the training set"),
        function=margin_on_release, fresh=True, family="membership",
        config_name="temp_margin", needs=("labels",))
    ATTACKS.register(TEMP_NAME, part)
    try:
        yield part
    finally:
        ATTACKS.unregister(TEMP_NAME)


def _page_lists(title: str) -> bool:
    from streamlit.testing.v1 import AppTest

    app = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"
    at = AppTest.from_file(str(app), default_timeout=60).run()
    at.switch_page("views/membership.py").run()
    return not at.exception and title in at.multiselect(key="mi_attackers").options


def surfaces_seeing(part: AttackPart, *, page: bool = True, run: bool = True) -> dict[str, bool]:
    """Where the registered ``part`` shows up: the config, the metric schema, the page, the
    CLI and (``run``) a run that scores it under its registered metric names."""
    from cli.main import main
    from core.config.schema import ConfigError, parse_config
    from core.foundation import metric_schema as S

    cfg = {**MEMBERSHIP_TINY, "attack": {**MEMBERSHIP_TINY["attack"],
                                         "attackers": [part.key, "loss"]}}
    try:
        parse_config(cfg)
        config_ok = True
    except ConfigError:
        config_ok = False
    out = {"config": config_ok,
           "metric_schema": all(S.is_registered(n) and part.title in S.get(n).description
                                for n in part.metric_names())}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["parts", "--family", part.family, "--json"])
    out["cli"] = rc == 0 and any(a["name"] == part.name and a["config_name"] == part.key
                                 for a in json.loads(buf.getvalue())["attacks"])
    if page:
        out["page"] = _page_lists(part.title)
    if run:
        from core.runs.experiments import run as run_experiment

        r = run_experiment(cfg)
        out["run"] = (all(np.isfinite(r.metrics[n]) for n in part.metric_names())
                      and S.unregistered(r.metrics) == [])
    return out


def test_a_temporary_attack_appears_everywhere_without_another_edit(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    from core.config.schema import ConfigError, parse_config
    from core.foundation import metric_schema as S

    with temporary_attack() as part:
        seen = surfaces_seeing(part)
        assert seen == {"config": True, "metric_schema": True, "cli": True, "page": True,
                        "run": True}, seen
    # gone again everywhere it appeared
    assert not any(S.is_registered(n) for n in part.metric_names())
    with pytest.raises(ConfigError, match="attack.attackers: got 'temp_margin'"):
        parse_config({**MEMBERSHIP_TINY, "attack": {"attackers": ["temp_margin"]}})
    assert not _page_lists(part.title)


# ---------------------------------------------------------------------------------------------
# the counters


def test_runners_dispatch_through_the_parts_and_draw_from_one_seed_stream():
    branches = R.name_branches()
    assert branches == {"attack": [], "defense": []}, branches
    protocol = R.runners_on_protocol()
    assert len(protocol) == 6 and all(protocol.values()), protocol
    assert R.seed_mixer_sites() == []
    assert R.layer_violation_list() == []


def test_the_counters_see_what_they_count(tmp_path):
    (tmp_path / "runner.py").write_text(
        'def f(cfg, name, seed):\n'
        '    if name == "loss":\n        pass\n'
        '    if cfg.defense.kind in ("dp_sgd", "x"):\n        pass\n'
        '    g = seed * 7919 + 17\n'
        '    return subsample(10, 3, [seed, 11])\n'
        'def _check(field, value):\n'
        '    raise ValueError(f"{field}: got {value}; allowed range 0 <= value")\n')
    branches = R.name_branches(tmp_path)
    assert len(branches["attack"]) == 1 and len(branches["defense"]) == 1
    assert len(R.seed_mixer_sites(tmp_path)) == 2
    assert [s.rsplit(": ", 1)[1] for s in R.range_checker_functions(tmp_path)] == ["_check"]


# ---------------------------------------------------------------------------------------------
# runs in threads


def _metrics(cfg: dict[str, Any]) -> dict[str, float]:
    from core.runs.experiments import run

    return {k: v for k, v in run(cfg).metrics.items() if "seconds" not in k}


def test_interleaved_runs_in_threads_give_the_metrics_of_each_run_alone(monkeypatch):
    import random

    alone = []
    for cfg, global_seed in ((MEMBERSHIP_TINY, 1), (LEAKAGE_TINY, 2)):
        # whatever the global generators hold, a run draws from its own streams ...
        np.random.seed(global_seed)
        torch.manual_seed(global_seed)
        with monkeypatch.context() as mp:  # ... and seeds nothing global
            def no_global_seed(*_a, **_k):
                raise AssertionError("a run seeded a global random generator")

            for module, name in ((torch, "manual_seed"), (torch.random, "manual_seed"),
                                 (np.random, "seed"), (random, "seed")):
                mp.setattr(module, name, no_global_seed)
            alone.append(_metrics(cfg))
    together: list[dict[str, float] | BaseException | None] = [None, None]
    start = threading.Barrier(2)

    def worker(i: int, cfg: dict[str, Any]) -> None:
        start.wait()
        try:
            together[i] = _metrics(cfg)
        except BaseException as exc:  # noqa: BLE001 - reported below
            together[i] = exc

    threads = [threading.Thread(target=worker, args=(i, c))
               for i, c in enumerate((MEMBERSHIP_TINY, LEAKAGE_TINY))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(together, alone, strict=True):
        assert isinstance(got, dict), got
        np.testing.assert_equal(got, want)
