"""Adversarial regularisation (core/catalog/adversarial_regularization.py): its block and knob,
the in-game inference network against the reference non-members, λ = 0 as plain training, its
network scored as the defense's own adversary, and that the one file puts it in ``privlab
parts``, the Membership page, Compare and the advisor."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core.catalog.adversarial_regularization import (
    AdversarialRegularizationDefense,
    build_adversarial_regularization,
)
from core.config.schema import ConfigError, MembershipTrainSpec, parse_config
from core.foundation.metric_schema import unregistered
from core.foundation.parts import DEFENSES
from core.runs.experiments import run
from tests.test_pages import open_page, store  # noqa: F401  (the page fixture)

KIND = "adversarial_regularization"
TINY = {"kind": "membership", "data": {"name": "digits"}, "projection_points": 0,
        "train": {"members": 80, "epochs": 4, "batch_size": 32},
        "attack": {"attackers": ["loss", "lira_offline", "rmia"], "shadows": 2,
                   "rmia_references": 1}}


def test_the_block_validates_and_out_of_range_lambda_is_a_one_line_error():
    cfg = parse_config({"kind": "membership", "defense": {"kind": KIND, "tradeoff_lambda": 3.0}})
    assert isinstance(cfg.defense, AdversarialRegularizationDefense)
    knob = DEFENSES.get(KIND).knob
    assert (knob.field, knob.low, knob.high) == ("tradeoff_lambda", 0.0, 3.0)
    for bad, field in ((3.5, "tradeoff_lambda"), (-0.1, "tradeoff_lambda")):
        with pytest.raises(ConfigError) as e:
            parse_config({"kind": "membership", "defense": {"kind": KIND, field: bad}})
        msg = str(e.value)
        assert msg.startswith(f"defense.{field}: got {bad}") and "3" in msg and "\n" not in msg
    with pytest.raises(ConfigError) as e:
        parse_config({"kind": "membership", "defense": {"kind": KIND, "adversary_steps": 0}})
    assert str(e.value).startswith("defense.adversary_steps: got 0") and "\n" not in str(e.value)


def _digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    return torch.tensor(d.data / 16.0, dtype=torch.float32), torch.tensor(d.target)


def _train(lam: float, epochs: int, members: int = 150):
    X, y = _digits()
    train = MembershipTrainSpec(members=members, epochs=epochs, batch_size=32, lr=1e-3,
                                optimizer="adam")
    build = build_adversarial_regularization(
        AdversarialRegularizationDefense(tradeoff_lambda=lam), image_shape=(1, 8, 8),
        n_classes=10, train=train, reference=X[800:800 + members],
        reference_labels=y[800:800 + members])
    return build.train(_mlp(), X[:members], y[:members], seed=0), X, y


def _mlp() -> torch.nn.Module:
    nn = torch.nn
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    gen = torch.Generator().manual_seed(0)
    for p in model.parameters():
        nn.init.normal_(p, std=0.1, generator=gen)
    return model


def test_the_in_game_network_tells_members_from_the_reference_during_training():
    from sklearn.metrics import roc_auc_score

    tr, X, y = _train(0.0, epochs=30)
    acc = tr.curves["inference_acc"]
    # h's accuracy on its own member/reference batches climbs above chance as f overfits
    # (0.50 at epoch 1, 0.62-0.65 from epoch 24 on this machine)
    assert len(acc) == 30 and acc[0] < 0.56 and np.mean(acc[-5:]) > 0.56, acc
    s_in, s_ref = tr.adversary(X[:150], y[:150]), tr.adversary(X[800:950], y[800:950])
    auc = roc_auc_score(np.r_[np.ones(150), np.zeros(150)], torch.cat([s_in, s_ref]).numpy())
    assert auc > 0.6, auc


def test_lambda_zero_is_plain_training_and_a_positive_lambda_moves_the_model():
    from core.engine.noisy_training import train_central

    zero, X, y = _train(0.0, epochs=3, members=100)
    one, _, _ = _train(1.0, epochs=3, members=100)
    plain = _mlp()
    train_central(plain, X[:100], y[:100], image_shape=(1, 8, 8), epochs=3, batch_size=32,
                  lr=1e-3, optimizer="adam", seed=0)
    for a, b, c in zip(zero.model.parameters(), plain.parameters(), one.model.parameters(),
                       strict=True):
        assert torch.equal(a, b)
        assert not torch.equal(a, c)


def test_lambda_zero_repeats_plain_trainings_metrics_through_the_runner():
    none = run({**TINY, "defense": {"kind": "none"}}).metrics
    res = run({**TINY, "defense": {"kind": KIND, "tradeoff_lambda": 0.0}})
    zero = res.metrics
    for k, v in none.items():  # the target and its shadows train as plain training's
        assert "seconds" in k or zero[k] == v, k
    assert zero["advreg_lambda"] == 0.0 and unregistered(zero) == []


def test_the_in_game_network_is_scored_beside_the_fresh_attacks():
    r = run({**TINY, "defense": {"kind": KIND, "tradeoff_lambda": 1.0},
             "attack": {**TINY["attack"], "attackers": ["loss", "rmia", "in_training"]}})
    m = r.metrics
    for a in ("loss", "rmia", "in_training"):
        assert 0.0 <= m[f"mia_{a}_auc"] <= 1.0, a
    assert m["advreg_lambda"] == 1.0 and unregistered(m) == []
    # a defense with no in-game adversary cannot ask for it: a one-line config error
    with pytest.raises(ConfigError) as e:
        parse_config({**TINY, "defense": {"kind": "relaxloss"},
                      "attack": {"attackers": ["in_training"]}})
    assert "\n" not in str(e.value) and "in_training" in str(e.value)


def test_privlab_parts_lists_it(capsys):
    from cli.main import main

    assert main(["parts", "--family", "membership", "--json"]) == 0
    parts = json.loads(capsys.readouterr().out)
    mine = [d for d in parts["defenses"] if d["name"] == KIND]
    assert mine and mine[0]["families"] == ["membership"]
    assert mine[0]["knob"]["field"] == "tradeoff_lambda" and mine[0]["knob"]["high"] == 3.0
    assert mine[0]["release"]["membership"] == ["model", "adversary_output"]
    assert main(["parts"]) == 0
    assert "Adversarial regularisation (λ)" in capsys.readouterr().out


def test_the_membership_page_draws_its_knob_and_offers_its_adversary(store):  # noqa: F811
    from core.foundation.parts import attack_titles

    at = open_page("views/membership.py")
    assert "Adversarial regularisation (λ)" in at.selectbox(key="mi_defense").options
    at.selectbox(key="mi_defense").set_value(KIND).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    knob = at.slider(key=f"mi_{KIND}")
    assert "λ" in knob.label
    titles = attack_titles("membership")
    offered = set(at.multiselect(key="mi_attackers").options)
    assert {titles["rmia"], titles["in_training"]} <= offered


def test_compare_sweeps_it_and_the_advisor_reads_its_curve(tmp_path, monkeypatch):
    from cache.store import default_store
    from core.report import advisor as A
    from core.runs import compare as C

    assert KIND in C.applicable_defenses("membership") and C.refusal("membership", KIND) is None
    assert "does not apply" in C.refusal("attribute_privacy", KIND)
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    spec = C.ComparisonSpec(
        family="membership", data="digits", utility="utility_acc", privacy="mia_auc_best",
        defenses=(C.DefenseSpec.of(KIND, grid=(0.5, 3.0)),), seeds=(0,),
        base={"train": {"members": 40, "epochs": 2}, "projection_points": 0,
              "attack": {"attackers": ["loss"], "shadows": 2, "rmia_references": 1}})
    sweeps, refused = C.comparison_sweeps(spec)
    assert refused == [] and [d.defense for d, _ in sweeps] == ["none", KIND]
    assert sweeps[1][1]["grid"] == {"defense.tradeoff_lambda": [0.5, 3.0]}
    cmp = C.run_comparison(spec, default_store())
    curve = next(c for c in cmp.curves if c.defense == KIND)
    assert list(curve.knob) == [0.5, 3.0] and curve.budget_metric == "advreg_lambda"
    advice = A.advise(cmp, threat=A.Threat("membership", "mia_auc_best", 1.0),
                      floor=A.Floor(0.0))
    assert advice.status == "met" and advice.chosen is not None
    # two curves: the answer and the runner-up (another curve's best) are one of each
    picked = {advice.chosen.curve, advice.runner_up.curve}
    assert curve.name in picked and len(picked) == 2, (picked, [c.name for c in cmp.curves])
