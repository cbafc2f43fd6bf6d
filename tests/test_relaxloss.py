"""RelaxLoss (core/catalog/relaxloss.py): its config block and knob, the three branches of one
step, its effect against plain training, and that the one file puts it on the config, the
metric schema, ``privlab parts``, the Membership page, Compare and every membership attack."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.catalog.relaxloss import RelaxLossDefense, RelaxLossHook, train_relaxloss
from core.config.schema import ConfigError, parse_config
from core.engine.hooks import StepState
from core.engine.recipe import Recipe
from core.foundation.metric_schema import get as metric_spec
from core.foundation.metric_schema import unregistered
from core.foundation.parts import DEFENSES, attack_titles, attacks_for
from core.runs.experiments import run
from tests.test_pages import open_page, store  # noqa: F401  (the page fixture)

TINY = {"kind": "membership", "data": {"name": "digits"}, "projection_points": 0,
        "train": {"members": 80, "epochs": 8, "batch_size": 32},
        "attack": {"attackers": ["loss"], "shadows": 2, "rmia_references": 1}}


# ---------------------------------------------------------------------------------------------
# the block and its knob


def test_the_block_validates_and_out_of_range_alpha_is_a_one_line_error():
    cfg = parse_config({"kind": "membership", "defense": {"kind": "relaxloss", "alpha": 1.0}})
    assert isinstance(cfg.defense, RelaxLossDefense) and cfg.defense.alpha == 1.0
    assert parse_config({"kind": "membership",
                         "defense": {"kind": "relaxloss"}}).defense.alpha == 1.0
    for bad in (-0.1, 3.5):
        with pytest.raises(ConfigError) as e:
            parse_config({"kind": "membership", "defense": {"kind": "relaxloss", "alpha": bad}})
        assert str(e.value) == f"defense.alpha: got {bad:g}; allowed range 0 <= value <= 3"
    with pytest.raises(ConfigError, match=r"defense.beta: unknown field"):
        parse_config({"kind": "membership", "defense": {"kind": "relaxloss", "beta": 1.0}})
    # a membership-only defense: the other families' unions do not hold it
    with pytest.raises(ConfigError, match="defense"):
        parse_config({"kind": "gradient_leakage", "defense": {"kind": "relaxloss"}})
    knob = DEFENSES.get("relaxloss").knob
    assert (knob.field, knob.low, knob.high) == ("alpha", 0.0, 3.0)  # read from the block
    assert knob.more_private == "higher" and knob.budget_metric == "relaxloss_alpha"
    for v in (*knob.comparison_grid(), *knob.teaching_grid()):
        RelaxLossDefense(alpha=v)  # every swept value is one the block accepts
    # its budget metric's spec is generated from the knob (no line in core.foundation.metric_schema)
    spec = metric_spec("relaxloss_alpha")
    assert spec.group == "defense" and spec.unit == "α" and "RelaxLoss" in spec.description
    from core.foundation.metric_schema import HEADLINES

    assert HEADLINES["membership"].budget_for("relaxloss") == "relaxloss_alpha"


# ---------------------------------------------------------------------------------------------
# one step (Algorithm 1)


def _grad(loss: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    return torch.autograd.grad(loss, logits)[0]


def relaxloss_step_loss(logits, y, alpha, epoch, parity="paper", upper=1.0):
    """One step's objective through the hook, and its branch read back from the counters."""
    hook = RelaxLossHook(alpha, parity=parity, upper=upper)
    state = StepState(model=None, params=[], optimizer=None, n=len(y), device="cpu",
                      recipe=Recipe(epochs=1, batch_size=len(y), lr=0.1), epoch=epoch)
    loss = hook.loss(logits, y, state)
    below = bool(state.meta["relaxed_steps"])
    return loss, ("descent" if not below else "ascent" if hook.ascends(epoch) else "flatten")


def test_a_batch_above_alpha_descends_on_the_cross_entropy():
    logits = torch.randn(6, 4, generator=torch.Generator().manual_seed(0), requires_grad=True)
    y = torch.tensor([0, 1, 2, 3, 0, 1])
    ce = F.cross_entropy(logits, y)
    loss, branch = relaxloss_step_loss(logits, y, float(ce.detach()) - 0.1, epoch=2)
    assert branch == "descent" and torch.allclose(loss, ce)


def test_below_alpha_an_even_epoch_ascends():
    logits = torch.randn(6, 4, generator=torch.Generator().manual_seed(1), requires_grad=True)
    y = torch.tensor([0, 1, 2, 3, 0, 1])
    ce = F.cross_entropy(logits, y)
    alpha = float(ce.detach()) + 0.5
    loss, branch = relaxloss_step_loss(logits, y, alpha, epoch=2)
    assert branch == "ascent" and float(loss.detach()) == pytest.approx(alpha - float(ce.detach()))
    # descending |L − α| below α is ascending L
    assert torch.allclose(_grad(loss, logits), -_grad(F.cross_entropy(logits, y), logits))


def test_below_alpha_an_odd_epoch_flattens_the_correct_rows_posteriors():
    # row 0: class 0 predicted and true, the other three probabilities uneven;
    # row 1: class 2 predicted, class 1 true (misclassified: it keeps its one-hot label)
    logits = torch.tensor([[3.0, 1.0, 0.0, -1.0], [0.0, 1.0, 2.5, 0.0]], requires_grad=True)
    y = torch.tensor([0, 1])
    p = torch.softmax(logits.detach(), -1)
    loss, branch = relaxloss_step_loss(logits, y, alpha=5.0, epoch=3)
    assert branch == "flatten"
    p0 = float(p[0, 0])
    soft = torch.tensor([[p0, (1 - p0) / 3, (1 - p0) / 3, (1 - p0) / 3], [0.0, 1.0, 0.0, 0.0]])
    expected = -(soft * torch.log_softmax(logits.detach(), -1)).sum(-1).mean()
    assert float(loss.detach()) == pytest.approx(float(expected), rel=1e-6)
    g = _grad(loss, logits)  # softmax − target, over the batch of 2
    # the correct row keeps its class's probability (no push on that logit); the other
    # probabilities are pulled to uniform: the largest falls, the smallest rises
    assert float(g[0, 0]) == pytest.approx(0.0, abs=1e-7)
    assert g[0, 1] > 0 and g[0, 3] < 0
    assert torch.allclose(g[1], (p[1] - soft[1]) / 2, atol=1e-6)  # the one-hot row
    # a correct row whose other classes are already uniform is at its target: no gradient
    flat = torch.tensor([[2.0, 0.0, 0.0, 0.0]], requires_grad=True)
    loss_flat, _ = relaxloss_step_loss(flat, torch.tensor([0]), alpha=5.0, epoch=1)
    assert torch.allclose(_grad(loss_flat, flat), torch.zeros(1, 4), atol=1e-6)


# ---------------------------------------------------------------------------------------------
# training


def _digits(members: int, seed: int):
    from core.config.schema import DataSpec
    from core.data import load_dataset

    ds = load_dataset(DataSpec(name="digits"), 0)
    X = torch.tensor(np.array(ds.X), dtype=torch.float32)
    y = torch.tensor(np.array(ds.y), dtype=torch.int64)
    rows = np.random.default_rng(seed).permutation(np.asarray(ds.split("train")))
    return X, y, rows[:members], rows[members:2 * members]


def _mean_losses(model, X, y, rows_in, rows_out) -> tuple[float, float]:
    with torch.no_grad():
        def loss(rows):
            return float(F.cross_entropy(model(X[rows].reshape(-1, 1, 8, 8)), y[rows]))
        return loss(rows_in), loss(rows_out)


def test_training_holds_the_members_loss_near_alpha_and_narrows_the_loss_gap():
    from core.foundation.seeds import torch_stream
    from core.foundation.threads import thread_limits
    from core.models.nn import image_classifier, seeded

    X, y, mem, non = _digits(150, seed=0)
    out = {}
    for alpha in (0.0, 1.0):
        model = seeded(lambda: image_classifier("mlp", (1, 8, 8), 10), torch_stream(0, "init"))
        with thread_limits():  # a run's thread budget, as core.runs.experiments.run sets it
            res = train_relaxloss(model, X[mem], y[mem], hook=RelaxLossHook(alpha, parity="paper"),
                                  recipe=Recipe(epochs=80, batch_size=64, lr=0.01),
                                  image_shape=(1, 8, 8), seed=0, X_test=X[non], y_test=y[non])
        out[alpha] = (res, *_mean_losses(model, X, y, mem, non))
    plain, relax = out[0.0], out[1.0]
    assert plain[0]["relaxed_steps"] == 0 and plain[1] < 0.1  # α = 0: plain training, overfit
    assert 0 < relax[0]["relaxed_steps"] < relax[0]["steps"] == 80 * 3
    assert abs(relax[1] - 1.0) < 0.15  # members' loss sits at α (0.93 on this machine)
    # non-member − member mean loss: 0.19 against plain training's 0.33 on this machine
    assert relax[2] - relax[1] < 0.8 * (plain[2] - plain[1])
    assert len(relax[0]["curves"]["train_loss"]) == len(relax[0]["curves"]["test_acc"]) == 80
    assert relax[0]["curves"]["test_acc"][-1] > 0.7  # the arg-max survives the flattening


def test_alpha_zero_repeats_plain_training_through_the_runner():
    none = run({**TINY, "defense": {"kind": "none"}}).metrics
    res = run({**TINY, "defense": {"kind": "relaxloss", "alpha": 0.0}})
    zero = res.metrics
    assert any("0% of the target's" in n and "never bound" in n for n in res.info["notes"])
    for k in ("utility_acc", "train_test_gap", "mia_loss_auc"):
        assert zero[k] == pytest.approx(none[k], abs=1e-9), k
    assert zero["relaxloss_alpha"] == 0.0


def test_alpha_zero_adds_audit_canaries_as_plain_training_does():
    audit = {"audit": {"kind": "white_box", "canaries": 100}}
    none = run({**TINY, **audit, "defense": {"kind": "none"}}).metrics
    zero = run({**TINY, **audit, "defense": {"kind": "relaxloss", "alpha": 0.0}}).metrics
    assert zero["audit_guesses"] > 0
    for k in ("audit_correct", "audit_guesses", "audit_epsilon_lower"):
        assert zero[k] == none[k], k


def test_relaxloss_lowers_the_loss_attack_and_the_gap_against_plain_training():
    # an overfit target (300 members, lr 0.01, 60 epochs); the same seeds for both
    base = {**TINY, "train": {"members": 300, "epochs": 60, "lr": 0.01}}
    auc, gap = {"none": [], "relaxloss": []}, {"none": [], "relaxloss": []}
    for seed in (0, 1):
        for d in ({"kind": "none"}, {"kind": "relaxloss", "alpha": 1.5}):
            r = run({**base, "seed": seed, "defense": d})
            m = r.metrics
            auc[d["kind"]].append(m["mia_loss_auc"])
            gap[d["kind"]].append(m["train_test_gap"])
            if d["kind"] == "relaxloss":
                assert m["relaxloss_alpha"] == 1.5 and unregistered(m) == []
                assert any("below α = 1.5" in n and "never" not in n for n in r.info["notes"])
    # 0.573 / 0.587 plain against 0.550 / 0.538 at α = 1.5 on this machine
    assert np.mean(auc["relaxloss"]) < np.mean(auc["none"]) - 0.015, auc
    assert np.mean(gap["relaxloss"]) < np.mean(gap["none"]), gap


def test_every_membership_attack_on_a_model_scores_it():
    model_attacks = [a.key for a in attacks_for("membership")
                     if a.selectable and "model" in a.accepts]
    assert {"loss", "lira_offline", "lira_online", "rmia"} <= set(model_attacks)
    r = run({**TINY, "defense": {"kind": "relaxloss", "alpha": 1.0},
             "attack": {"attackers": model_attacks, "shadows": 4, "rmia_references": 1,
                        "targets": 2}})
    for a in model_attacks:
        assert 0.0 <= r.metrics[f"mia_{a}_auc"] <= 1.0, a
    assert r.metrics["relaxloss_alpha"] == 1.0 and unregistered(r.metrics) == []
    # the representation attacks read Inf2Guard's r, which RelaxLoss does not release
    with pytest.raises(ConfigError) as e:
        parse_config({**TINY, "defense": {"kind": "relaxloss"},
                      "attack": {"attackers": ["representation"]}})
    assert "\n" not in str(e.value) and "representation" in str(e.value)


# ---------------------------------------------------------------------------------------------
# where the one file makes it appear


def test_privlab_parts_lists_it(capsys):
    from cli.main import main

    assert main(["parts", "--family", "membership", "--json"]) == 0
    parts = json.loads(capsys.readouterr().out)
    mine = [d for d in parts["defenses"] if d["name"] == "relaxloss"]
    assert mine and mine[0]["families"] == ["membership"]
    assert mine[0]["knob"]["field"] == "alpha" and mine[0]["accounting"] is None
    assert main(["parts"]) == 0
    assert "RelaxLoss (α)" in capsys.readouterr().out


def test_compare_offers_it_and_sweeps_its_knob_grid():
    from core.runs import compare as C

    assert "relaxloss" in C.applicable_defenses("membership")
    assert C.refusal("membership", "relaxloss") is None
    assert "does not apply" in C.refusal("attribute_privacy", "relaxloss")
    spec = C.ComparisonSpec(family="membership", data="digits", utility="utility_acc",
                            privacy="mia_auc_best", defenses=(C.DefenseSpec.of("relaxloss"),),
                            base={"train": {"members": 50}})
    sweeps, refused = C.comparison_sweeps(spec)
    assert refused == [] and [d.defense for d, _ in sweeps] == ["none", "relaxloss"]
    grid = list(DEFENSES.get("relaxloss").knob.comparison_grid())
    assert sweeps[1][1]["grid"] == {"defense.alpha": grid}
    assert parse_config(sweeps[1][1]).kind == "sweep"


def test_the_membership_page_draws_its_knob(store):  # noqa: F811
    at = open_page("views/membership.py")
    assert "RelaxLoss (α)" in at.selectbox(key="mi_defense").options  # its title
    at.selectbox(key="mi_defense").set_value("relaxloss").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    knob = at.slider(key="mi_relaxloss")
    assert "α" in knob.label and knob.value == 1.0  # the teaching grid's middle
    titles = attack_titles("membership")
    assert {titles["lira_offline"], titles["rmia"]} <= set(at.multiselect(key="mi_attackers").options)

