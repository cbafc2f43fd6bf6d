"""Config validation: every invalid value raises a ConfigError that names the field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.config.schema import (
    AttributePrivacyConfig,
    ConfigError,
    ProjectionConfig,
    apply_overrides,
    cache_key,
    load_config,
    parse_config,
)

# (dotted field, strategy of invalid values, the range text the message must carry)
OUT_OF_RANGE = [
    ("defense.tradeoff_lambda", st.floats(1.0001, 1e6) | st.floats(-1e6, -1e-4), "0 <= value <= 1"),
    ("adversary_steps", st.integers(21, 10**6) | st.integers(-10**6, 0), "1 <= value <= 20"),
    ("fl.num_devices", st.integers(1001, 10**7) | st.integers(-10**6, 0), "1 <= value <= 1000"),
    ("fl.fraction_fit", st.floats(1.0001, 1e6) | st.floats(-1e6, 0.0), "0 < value <= 1"),
    ("fl.rounds", st.integers(201, 10**6) | st.integers(-10**6, 0), "1 <= value <= 200"),
    ("fl.lr", st.floats(10.0001, 1e9) | st.floats(-1e6, 0.0), "0 < value <= 10"),
    ("defense.epsilon", st.floats(-1e6, 0.0009), "0.001 <= value <= 10000"),
    ("defense.delta", st.floats(1.0, 1e6) | st.floats(-1e6, 9e-13), "1e-12 <= value < 1"),
    ("defense.rate", st.floats(0.991, 1e6) | st.floats(-1e6, -1e-6), "0 <= value <= 0.99"),
    ("seed", st.integers(2**31, 2**40) | st.integers(-10**6, -1), "0 <= value"),
    ("data.dependence", st.floats(1.0001, 1e6) | st.floats(-1e6, -1e-4), "0 <= value <= 1"),
    ("data.max_samples", st.integers(-10**6, 49), "50 <= value"),
]


#: the defense block a defense parameter belongs to (each block carries only its own)
BLOCK_OF = {"tradeoff_lambda": "tappfl", "epsilon": "dp_gaussian", "delta": "dp_gaussian",
            "rate": "pruning"}


def _nest(dotted: str, value) -> dict:
    obj: dict = {"kind": "attribute_privacy"}
    if dotted.startswith("defense."):
        obj["defense"] = {"kind": BLOCK_OF[dotted.split(".")[1]]}
    parts = dotted.split(".")
    cur = obj
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value
    return obj


@pytest.mark.parametrize("field,strategy,rng", OUT_OF_RANGE, ids=[f for f, _, _ in OUT_OF_RANGE])
def test_out_of_range_names_field_value_and_range(field, strategy, rng):
    @settings(max_examples=25, deadline=None)
    @given(strategy)
    def check(value):
        with pytest.raises(ConfigError) as exc:
            parse_config(_nest(field, value))
        msg = str(exc.value)
        assert msg.startswith(field + ":"), msg
        assert rng in msg, msg
        assert "got" in msg

    check()


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=1, max_size=12).filter(lambda s: s not in {"pca", "tsne", "umap"}))
def test_bad_literal_names_field_and_allowed_values(method):
    with pytest.raises(ConfigError) as exc:
        parse_config({"kind": "projection", "method": method})
    msg = str(exc.value)
    assert msg.startswith("method:") and "'pca'" in msg


@settings(max_examples=30, deadline=None)
@given(st.text(min_size=1, max_size=10).filter(
    lambda s: s not in {"projection", "tappfl", "attribute_privacy"}))
def test_unknown_kind(kind):
    with pytest.raises(ConfigError, match="kind: got"):
        parse_config({"kind": kind})


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["abc", [1], {"a": 1}, None]))
def test_wrong_types_name_the_field(value):
    with pytest.raises(ConfigError) as exc:
        parse_config({"kind": "projection", "max_points": value})
    assert str(exc.value).startswith("max_points:")


def test_unknown_field_and_bad_attribute():
    with pytest.raises(ConfigError, match="bogus: unknown field"):
        parse_config({"kind": "projection", "bogus": 1})
    with pytest.raises(ConfigError, match=r"data.private_attribute: got 'zzz'; allowed for 'adult': sex"):
        parse_config({"kind": "attribute_privacy", "data": {"name": "adult", "private_attribute": "zzz"}})
    with pytest.raises(ConfigError, match="kind: required"):
        parse_config({"method": "pca"})


def test_defaults_valid_and_key_stable():
    a = parse_config({"kind": "attribute_privacy"})
    b = parse_config({"kind": "attribute_privacy", "defense": {"kind": "tappfl", "tradeoff_lambda": 0.5},
                      "fl": {"rounds": a.fl.rounds}})
    assert isinstance(a, AttributePrivacyConfig)
    assert cache_key(a) == cache_key(b)
    c = parse_config({"kind": "attribute_privacy", "defense": {"kind": "tappfl", "tradeoff_lambda": 0.25}})
    assert cache_key(a) != cache_key(c)
    assert isinstance(parse_config(ProjectionConfig()), ProjectionConfig)


def test_yaml_json_and_overrides(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("kind: projection\nmethod: tsne\ndata:\n  name: digits\n")
    cfg = load_config(y, ["max_points=300", "data.name=mnist5k"])
    assert cfg.method == "tsne" and cfg.max_points == 300 and cfg.data.name == "mnist5k"
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"kind": "projection", "method": "umap"}))
    assert load_config(j).method == "umap"
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="expected key=value"):
        apply_overrides({}, ["novalue"])


def test_defense_blocks_carry_only_their_own_parameters():
    with pytest.raises(ConfigError, match=r"defense.epsilon: unknown field"):
        parse_config({"kind": "attribute_privacy", "defense": {"kind": "tappfl", "epsilon": 1.0}})
    with pytest.raises(ConfigError, match=r"defense.tradeoff_lambda: unknown field"):
        parse_config({"kind": "attribute_privacy", "defense": {"kind": "dp_gaussian", "tradeoff_lambda": 0.5}})
    with pytest.raises(ConfigError, match=r"defense.kind: got 'svm'; allowed: .*'tappfl'"):
        parse_config({"kind": "attribute_privacy", "defense": {"kind": "svm"}})
    cfg = parse_config({"kind": "attribute_privacy", "defense": {"kind": "dp_laplace", "epsilon": 2}})
    assert cfg.tradeoff_lambda == 0.0 and cfg.defense.epsilon == 2.0


def test_cache_key_holds_the_source_fingerprint(monkeypatch):
    import core.config.schema as config_mod
    import core.foundation.fingerprint as fp

    cfg = parse_config({"kind": "projection"})
    before = cache_key(cfg)
    monkeypatch.setattr(fp, "engine_id", lambda: "9.9.9+000000000000")
    assert config_mod.cache_key(cfg) != before


def test_switching_the_defense_kind_by_override_starts_a_fresh_block():
    base = {"kind": "attribute_privacy", "defense": {"kind": "tappfl", "tradeoff_lambda": 0.3}}
    cfg = parse_config(apply_overrides(base, ["defense.kind=dp_gaussian", "defense.epsilon=5"]))
    assert cfg.defense.kind == "dp_gaussian" and cfg.defense.epsilon == 5.0
    # the old (v1) override path still reaches the TAPPFL block
    assert parse_config(apply_overrides(base, ["tradeoff_lambda=0.75"])).defense.tradeoff_lambda == 0.75


def test_dpsgd_block_trains_with_its_own_recipe_and_a_target_epsilon_knob():
    from core.catalog.dp_sgd import DPSGDDefense
    from core.config.schema import MembershipConfig

    d = DPSGDDefense()
    assert d.target_epsilon == 8.0 and d.noise_multiplier is None  # the knob: target ε
    assert (d.optimizer, d.lr, d.sample_rate, d.epochs, d.clip_norm) == ("sgd", 2.0, 1.0, 150, 1.0)
    # a fixed z alone replaces the default target; 0 is clipping without noise (ε = ∞)
    z0 = DPSGDDefense(noise_multiplier=0.0)
    assert z0.noise_multiplier == 0.0 and z0.target_epsilon is None
    with pytest.raises(ConfigError, match="defense.noise_multiplier: got -0.5"):
        parse_config({"kind": "membership", "defense": {"kind": "dp_sgd", "noise_multiplier": -0.5}})
    with pytest.raises(ConfigError, match="defense.noise_multiplier: give exactly one"):
        parse_config({"kind": "membership",
                      "defense": {"kind": "dp_sgd", "noise_multiplier": 1.0, "target_epsilon": 4}})
    with pytest.raises(ConfigError, match="defense.sample_rate: got 1.5"):
        parse_config({"kind": "membership", "defense": {"kind": "dp_sgd", "sample_rate": 1.5}})
    # the recipe as train_dpsgd's arguments; None takes the train block's value
    train = MembershipConfig().train
    kw = d.training(train)
    assert kw == {"epochs": 150, "lr": 2.0, "optimizer": "sgd", "sample_rate": 1.0,
                  "max_grad_norm": 1.0, "delta": 1e-5, "noise_multiplier": None,
                  "target_epsilon": 8.0, "accountant": "prv"}
    old = DPSGDDefense(optimizer=None, lr=None, sample_rate=None, epochs=None).training(train)
    assert (old["epochs"], old["lr"], old["optimizer"], old["batch_size"]) == \
        (train.epochs, train.lr, train.optimizer, train.batch_size)
    assert "sample_rate" not in old
