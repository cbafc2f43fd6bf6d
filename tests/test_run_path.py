"""A run has one path: validated once at the boundary, then the typed model travels; one
page-run scaffold.

How validations are counted (:func:`benchmarks.registry_bench.count_validations`): the
pydantic entry :func:`core.config.schema.parse_config` uses (``core.config.schema._ADAPTER``) and the
validator of every experiment model (``Model(...)``, ``Model.model_validate``) are wrapped for
the whole process while the script run that follows the Run click lasts, so the page, the job
queue's worker thread, the store and the runner are all seen. A validation counts when its
result equals the stored run's config; grid points, sweeps and undefended references a page
peeks are other configs.
"""

from __future__ import annotations

import pytest

from benchmarks.registry_bench import (
    count_validations,
    page_run_scaffold_list,
    validations_of,
    validations_per_page_run,
)
from core.config.schema import MembershipConfig, cache_key, parse_config

MINI = {"kind": "membership", "data": {"name": "digits"}, "train": {"members": 20, "epochs": 1},
        "attack": {"attackers": ["loss"], "shadows": 2, "rmia_references": 1}}


def test_the_counter_sees_every_validation_and_a_model_passes_through():
    with count_validations() as seen:
        cfg = parse_config(dict(MINI))
        parse_config(dict(MINI))
        MembershipConfig.model_validate(dict(MINI))
        again = parse_config(cfg)  # a validated model: used as it is
    dumped = cfg.model_dump(mode="json")
    assert validations_of(seen, dumped) == 3
    assert again is cfg


def test_parse_config_revalidates_only_mappings():
    from core.config.schema import ConfigError

    cfg = parse_config(dict(MINI))
    assert parse_config(cfg) is cfg
    assert cache_key(parse_config(cfg.model_dump(mode="json"))) == cache_key(cfg)
    with pytest.raises(ConfigError, match="members"):
        parse_config({**MINI, "train": {"members": 1}})


def test_the_store_and_the_runner_take_the_model_without_validating_it(tmp_path):
    from cache.store import ResultStore
    from core.foundation.result import Result

    store = ResultStore(tmp_path / "cache")
    cfg = parse_config(dict(MINI))

    def fake(c, progress=None, cancel=None):
        assert c is cfg  # the model itself reaches the runner
        return Result(kind="membership", config={}, seed=0, metrics={"utility_acc": 0.5})

    with count_validations() as seen:
        store.get_or_run(cfg, runner=fake)
        assert store.peek(cfg) is not None
    assert validations_of(seen, cfg.model_dump(mode="json")) == 0


def test_a_page_run_validates_its_config_once():
    """Membership with tiny settings (digits, 20 members, 1 epoch, 2 shadows, the loss
    attack): one validation of the run's config in the Run's script run (the page's)."""
    assert validations_per_page_run() == 1


def test_one_page_run_scaffold():
    assert page_run_scaffold_list() == ["dashboard/components/run_panel.py:run_panel"]
