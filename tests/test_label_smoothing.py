"""Label smoothing (core/catalog/label_smoothing.py, one file): its block's range, its loss hook
against torch's ``label_smoothing`` in the single and the batched form, its batched shadows
through the runner, s = 0 as plain training, and where the one file makes it appear."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from core.catalog.label_smoothing import LabelSmoothingDefense, LabelSmoothingHook
from core.config.schema import ConfigError, parse_config
from core.engine.hooks import StepState
from core.engine.recipe import Recipe
from core.foundation.metric_schema import unregistered
from core.foundation.parts import DEFENSES
from core.runs.experiments import run
from tests.test_pages import open_page, store  # noqa: F401  (the page fixture)

TINY = {"kind": "membership", "data": {"name": "digits"}, "projection_points": 0,
        "train": {"members": 80, "epochs": 4, "batch_size": 32},
        "attack": {"shadows": 4, "rmia_references": 1}}


def _state(n: int, weights: torch.Tensor | None = None) -> StepState:
    return StepState(model=None, params=[], optimizer=None, n=n, device="cpu",
                     recipe=Recipe(epochs=1, batch_size=n, lr=0.1), weights=weights,
                     models=None if weights is None else len(weights))


def test_out_of_range_s_is_a_one_line_error():
    assert parse_config({"kind": "membership",
                         "defense": {"kind": "label_smoothing", "s": 0.3}}).defense.s == 0.3
    for bad in (-0.1, 0.95):
        with pytest.raises(ConfigError) as e:
            parse_config({"kind": "membership", "defense": {"kind": "label_smoothing", "s": bad}})
        assert str(e.value) == f"defense.s: got {bad:g}; allowed range 0 <= value <= 0.9"
    knob = DEFENSES.get("label_smoothing").knob
    assert (knob.field, knob.low, knob.high) == ("s", 0.0, 0.9)
    for v in (*knob.comparison_grid(), *knob.teaching_grid()):
        LabelSmoothingDefense(s=v)


@pytest.mark.parametrize("s", [0.1, 0.5, 0.9])
def test_the_hook_is_torch_label_smoothing_in_both_forms(s):
    g = torch.Generator().manual_seed(0)
    logits, y = torch.randn(3, 5, 4, generator=g), torch.randint(0, 4, (3, 5), generator=g)
    hook = LabelSmoothingHook(s)
    assert hook.per_example
    # one model: torch's mean over the batch
    one = hook.loss(logits[0], y[0], _state(5))
    assert torch.equal(one, F.cross_entropy(logits[0], y[0], label_smoothing=s))
    # K = 3 models, the last with 2 valid rows of 5 (padding weighs 0): each model's own mean
    valid = torch.ones(3, 5)
    valid[2, 2:] = 0
    many = hook.loss(logits, y, _state(5, valid / valid.sum(1, keepdim=True)))
    want = torch.stack([F.cross_entropy(logits[k, :n], y[k, :n], label_smoothing=s)
                        for k, n in enumerate((5, 5, 2))])
    assert many.shape == (3,) and torch.allclose(many, want, atol=1e-6)
    assert not torch.allclose(many, torch.stack([F.cross_entropy(logits[k], y[k])
                                                 for k in range(3)]), atol=1e-3)
    # s = 0: the engine's own cross-entropy in both forms
    assert LabelSmoothingHook(0.0).loss(logits, y, _state(5, valid / 5)) is None


def test_the_runner_trains_its_shadows_batched(monkeypatch):
    import core.engine.shadow_training as st

    calls = []
    real = st.fit_batched

    def spy(models, *a, **kw):
        calls.append((len(models), [type(h).__name__ for h in kw["hooks"]]))
        return real(models, *a, **kw)

    monkeypatch.setattr(st, "fit_batched", spy)
    r = run({**TINY, "defense": {"kind": "label_smoothing", "s": 0.5}})
    assert calls == [(4, ["LabelSmoothingHook"])]
    assert r.metrics["label_smoothing_s"] == 0.5 and unregistered(r.metrics) == []
    assert 0.0 <= r.metrics["mia_lira_online_auc"] <= 1.0


def test_s_zero_is_plain_training_exactly():
    def figures(defense):
        m = run({**TINY, "defense": defense}).metrics
        return {k: v for k, v in m.items() if "seconds" not in k and k != "label_smoothing_s"}

    plain, zero = figures({"kind": "none"}), figures({"kind": "label_smoothing", "s": 0.0})
    assert zero == plain
    assert figures({"kind": "label_smoothing", "s": 0.9}) != plain


def test_it_appears_in_parts_compare_and_the_membership_page(capsys, store):  # noqa: F811
    from cli.main import main
    from core.runs import compare as C

    assert main(["parts", "--family", "membership", "--json"]) == 0
    mine = [d for d in json.loads(capsys.readouterr().out)["defenses"]
            if d["name"] == "label_smoothing"]
    assert mine and mine[0]["knob"]["field"] == "s" and mine[0]["accounting"] is None
    assert C.refusal("membership", "label_smoothing") is None
    spec = C.ComparisonSpec(family="membership", data="digits", utility="utility_acc",
                            privacy="mia_auc_best",
                            defenses=(C.DefenseSpec.of("label_smoothing"),))
    sweeps, refused = C.comparison_sweeps(spec)
    assert refused == [] and [d.defense for d, _ in sweeps] == ["none", "label_smoothing"]
    at = open_page("views/membership.py")
    assert "label smoothing (s)" in at.selectbox(key="mi_defense").options
    at.selectbox(key="mi_defense").set_value("label_smoothing").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.slider(key="mi_label_smoothing").label.startswith("s")
