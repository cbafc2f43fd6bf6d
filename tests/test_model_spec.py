"""``model: {arch, width}`` in the image runners: one-line validation errors, the default model
is today's network (same parameters, same initialisation, same stage keys), and the runners
run a conv net on digits: membership (LeNet-5 at width 0.25 with shadows; ResNet-10 under
DP-SGD with BatchNorm replaced by GroupNorm; Inf2Guard's own roles), gradient leakage
(LeNet-5), property and representation reconstruction (an architecture's encoder role)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core.config.schema import ConfigError, ModelSpec, parse_config
from core.foundation.parts import ARCHITECTURES
from core.runs.experiments import run

MEMBERSHIP = {"kind": "membership", "data": {"name": "digits"},
              "train": {"members": 40, "epochs": 2, "batch_size": 32},
              "attack": {"shadows": 2, "rmia_references": 1, "attackers": ["loss"]},
              "projection_points": 0}
GRADIENT = {"kind": "gradient_leakage", "data": {"name": "digits"},
            "train": {"epochs": 1, "batch_size": 64},
            "attack": {"attackers": ["idlg"], "targets": 2, "iterations": 3,
                       "model_inversion": False}}
PROPERTY = {"kind": "property", "data": {"name": "digits", "private_attribute": "parity"},
            "defense": {"tradeoff_lambda": 0.5},
            "subsets": {"size_min": 8, "size_max": 40, "train_per_bin": 20, "aux_per_bin": 20,
                        "test_per_bin": 10},
            "train": {"epochs": 1, "pretrain_epochs": 1},
            "attack": {"attackers": ["in_training", "logreg"]}, "projection_points": 0}
REPR = {"kind": "repr_reconstruction", "data": {"name": "digits"},
        "defense": {"channel": "learned", "epsilon": 1.0},
        "train": {"epochs": 1, "max_train": 200},
        "attack": {"targets": 4, "fresh_epochs": 2, "inversion_iterations": 5}}
LENET = {"arch": "lenet5", "width": 0.25}


# -- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("patch,expected", [
    ({"model": {"arch": "lenet6"}},
     "model.arch: got 'lenet6'; allowed: " + ", ".join(ARCHITECTURES.names())),
    ({"model": {"arch": "lenet5", "width": 0.01}},
     "model.width: got 0.01; allowed: [0.0625, 4] for 'lenet5'"),
    ({"model": {"arch": "lenet5", "depth": 3}}, "model.depth: unknown field (got 3)"),
    ({"data": {"name": "adult"}, "model": {"arch": "lenet5"}},
     ("model.arch: got 'lenet5'; it needs an image input (3×32×32 or resized), data 'adult' "
      "is tabular")),
])
def test_membership_model_errors_are_one_line(patch, expected):
    with pytest.raises(ConfigError) as exc:
        parse_config({"kind": "membership", **patch})
    assert str(exc.value) == expected
    assert "\n" not in str(exc.value)


def test_arch_list_comes_from_the_registry():
    names = ModelSpec.model_fields["arch"].annotation
    assert names is str  # validated against ARCHITECTURES, not a hand-typed Literal
    for name, part in ARCHITECTURES.items():
        assert ModelSpec(arch=name, width=part.cpu_width).part is part


def test_conv_on_tabular_and_unwired_kinds_are_one_line():
    with pytest.raises(ConfigError, match=r"^model.arch: got 'resnet10'; .*data 'synthetic' "
                                          r"is tabular$"):
        parse_config({"kind": "attribute_privacy", "data": {"name": "synthetic"},
                      "model": {"arch": "resnet10"}})
    digits = {"name": "digits", "private_attribute": "parity"}
    assert parse_config({"kind": "attribute_privacy", "model": LENET, "data": digits}).model.arch \
        == "lenet5"
    with_encoder = ", ".join(n for n, a in ARCHITECTURES.items() if "encoder" in a.roles)
    for kind, base in (("property", PROPERTY), ("repr_reconstruction", REPR),
                       ("attribute_privacy", {"kind": "attribute_privacy", "data": digits})):
        with pytest.raises(ConfigError) as exc:
            parse_config({**base, "model": {"arch": "resnet10"}})
        assert str(exc.value) == (f"model.arch: got 'resnet10'; {kind} trains an encoder and "
                                  f"'resnet10' declares none (allowed: 'mlp', {with_encoder})")
    with pytest.raises(ConfigError, match=r"^model.arch: got 'lenet5' at width 0.25 with "
                                          r"train.model 'lenet_sigmoid'; name the network once"):
        parse_config({**GRADIENT, "train": {"model": "lenet_sigmoid"}, "model": LENET})


# -- the default model is today's ----------------------------------------------------------------


def test_default_models_are_todays_networks():
    from core.foundation.builds import DefenseBuild
    from core.foundation.progress import Progress
    from core.foundation.seeds import torch_stream
    from core.models.nn import image_classifier, seeded
    from core.runs import gradient_stages as G
    from core.runs import membership_stages as S

    cfg = parse_config(MEMBERSHIP)
    ctx = S.context(cfg, Progress())
    ours = ctx.model(123).state_dict()
    today = seeded(lambda: image_classifier("mlp", ctx.shape, ctx.n_classes),
                   torch_stream(123, "init")).state_dict()
    assert list(ours) == list(today) and all(torch.equal(ours[k], today[k]) for k in ours)
    assert "model" not in ctx.part  # stored runs keep their stage keys

    g = parse_config(GRADIENT)
    build = DefenseBuild("none", train=lambda *a, **k: None)
    for name in (None, "lenet_sigmoid", "lenet5"):
        c = g if name is None else parse_config({**GRADIENT, "train": {"model": name}})
        ours = G.victim(c, (1, 8, 8), 10, build, 7).state_dict()
        today = seeded(lambda c=c: image_classifier(c.train.model, (1, 8, 8), 10), 7).state_dict()
        assert list(ours) == list(today) and all(torch.equal(ours[k], today[k]) for k in ours)
    assert "model" not in G.train_part(g, "cpu")


# -- DP-SGD, shadows ------------------------------------------------------------------------------


def test_dp_compatible_replaces_batchnorm_and_keeps_lenet():
    from opacus.validators import ModuleValidator

    from core.defenses.dpsgd import dp_compatible
    from core.models import build_model

    lenet = build_model("lenet5", (1, 8, 8), 10, 0.25, seed=0)
    assert dp_compatible(lenet) is lenet
    res = dp_compatible(build_model("resnet10", (1, 8, 8), 10, 0.0625, seed=0))
    assert not ModuleValidator.validate(res, strict=False)
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in res.modules())
    assert any(isinstance(m, torch.nn.GroupNorm) for m in res.modules())
    assert res(torch.rand(3, 64)).shape == (3, 10)


def test_conv_shadows_stack_where_grouped_or_on_cuda_and_the_stacked_form_trains():
    from core.config.schema import MembershipTrainSpec
    from core.defenses.central import build_plain
    from core.models import build_model
    from core.runs.membership_stages import stack_shadows

    mlp, lenet = (build_model(a, (1, 8, 8), 10, w) for a, w in (("mlp", 1.0), ("lenet5", 0.25)))
    assert stack_shadows(mlp, torch.device("cpu"))
    assert stack_shadows(lenet, torch.device("cpu"))  # every layer has a grouped form
    lenet.features.append(torch.nn.Softmax(1))  # a layer without one: one by one on a CPU
    assert not stack_shadows(lenet, torch.device("cpu"))
    assert stack_shadows(lenet, torch.device("cuda"))
    # the stacked path (train_stacked): K conv models, true-class probabilities (K, n)
    build = build_plain(None, image_shape=(1, 8, 8),
                        train=MembershipTrainSpec(members=20, epochs=1, batch_size=8))
    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(16, 64, generator=g), torch.arange(16) % 10
    mask = np.zeros((2, 16), bool)
    mask[0, :8] = mask[1, 8:] = True
    many = build.train_many(lambda: build_model("resnet10", (1, 8, 8), 10, 0.0625), X, y, mask,
                            seed=0)
    p = many(X, y)
    assert p.shape == (2, 16) and torch.all((p > 0) & (p < 1))


# -- tiny conv runs ------------------------------------------------------------------------------


def _finite_metrics(r, *names):
    for n in names:
        assert math.isfinite(r.metrics[n]), n


def test_membership_runs_lenet5_plain_with_shadows_and_resnet10_under_dp():
    r = run({**MEMBERSHIP, "model": LENET,
             "attack": {**MEMBERSHIP["attack"], "attackers": ["loss", "lira_offline"]}})
    _finite_metrics(r, "utility_acc", "mia_loss_auc", "mia_lira_offline_auc")
    assert r.config["model"] == LENET
    dp = run({**MEMBERSHIP, "model": {"arch": "resnet10", "width": 0.0625},
              "defense": {"kind": "dp_sgd", "noise_multiplier": 1.0, "epochs": 1}})
    _finite_metrics(dp, "utility_acc", "mia_loss_auc", "epsilon_accountant")


def test_inf2guard_plays_with_the_registered_roles():
    r = run({**MEMBERSHIP, "model": {"arch": "inf2guard_mia", "width": 0.0625},
             "defense": {"kind": "inf2guard", "tradeoff_lambda": 0.5}})
    _finite_metrics(r, "utility_acc", "mia_loss_auc")
    other = run({**MEMBERSHIP, "model": LENET,
                 "defense": {"kind": "inf2guard", "tradeoff_lambda": 0.5}})
    assert any("Inf2Guard trains its own MLP" in n for n in other.info["notes"])


def test_gradient_leakage_inverts_lenet5():
    r = run({**GRADIENT, "model": LENET})
    _finite_metrics(r, "utility_acc", "recon_idlg_mse")
    assert r.config["model"] == LENET


def test_property_trains_an_architectures_encoder():
    from core.runs import property_stages as P

    spec = {"arch": "inf2guard_dra", "width": 0.0625}
    for model in (spec, LENET):
        r = run({**PROPERTY, "model": model})
        _finite_metrics(r, "utility_acc", "property_in_training_acc", "property_logreg_acc")
    cfg = parse_config({**PROPERTY, "model": spec})
    enc, head, adv = P.build_networks(cfg, 64, 10, (1, 8, 8))
    r_dim = enc(torch.rand(3, 64)).shape[1]
    assert head(torch.rand(3, r_dim)).shape == (3, 10)
    assert adv(torch.rand(3, r_dim)).shape == (3, PROPERTY["subsets"].get("n_values", 4))
    assert "model" in P.train_part(cfg, "cpu")
    assert "model" not in P.train_part(parse_config(PROPERTY), "cpu")


def test_image_runner_probe_counts_the_refusals():
    from benchmarks.models_bench import IMAGE_RUNNERS, image_runners_accepting_arch

    accepting, total, refused = image_runners_accepting_arch(run=False)
    assert total == len(IMAGE_RUNNERS) == 5
    assert accepting == total - len(refused)
    assert refused == {} and accepting == total  # every image runner takes the probe's model


def test_repr_reconstruction_bounds_an_architectures_encoder():
    r = run({**REPR, "model": LENET})
    _finite_metrics(r, "utility_acc", "recon_decoder_in_training_mse", "recon_inversion_mse")
    # r is LeNet-5's 84-unit penultimate layer at width 0.25
    assert r.metrics["representation_dim"] == 21
