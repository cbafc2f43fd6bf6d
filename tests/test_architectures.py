"""Architectures as registered parts: exact parameter counts, every network builds, runs
forward and backward at full and narrow width, one-line errors, ``privlab parts --family
models``, and ``mlp`` equal to today's model."""

from __future__ import annotations

import json

import pytest
import torch

from core.foundation.parts import (
    ARCHITECTURES,
    architecture,
    architectures_for,
    describe,
    input_kind,
)
from core.models import build_model, forward_flops, param_count

PAPER_COUNTS = [
    ("lenet5", (3, 32, 32), "classifier", 62_006),
    ("lenet5", (1, 32, 32), "classifier", 61_706),
    ("resnet10", (3, 32, 32), "classifier", 4_903_242),
    ("resnet18", (3, 32, 32), "classifier", 11_173_962),
    # Inf2Guard Table 15 (CIFAR-10): encoder, Pri/Atk and utility network
    ("inf2guard_mia", (3, 32, 32), "encoder", 6_448_192),
    ("inf2guard_mia", (3, 32, 32), "membership", 4_721_153),
    ("inf2guard_mia", (3, 32, 32), "utility", 4_725_770),
]


@pytest.mark.parametrize("arch,shape,role,count", PAPER_COUNTS)
def test_paper_parameter_counts(arch, shape, role, count):
    assert param_count(arch, shape, 10, role=role) == count
    assert param_count(ARCHITECTURES.get(arch), shape, 10, role=role) == count


def test_declared_paper_counts_hold():
    declared = [(a.name, r, n) for a in ARCHITECTURES.values() for r, n in a.paper_params]
    assert len(declared) >= 6
    for name, role, n in declared:
        assert param_count(architecture(name), *architecture(name).reference, role=role) == n, (name, role)


def test_at_least_eight_registered():
    assert len(ARCHITECTURES) >= 8
    assert {"mlp", "lenet5", "resnet10", "resnet18", "wrn28_2", "inf2guard_mia", "inf2guard_dra",
            "tappfl_cifar"} <= set(ARCHITECTURES)




@pytest.mark.parametrize("name", sorted(ARCHITECTURES.names()))
def test_every_role_builds_and_trains_a_step(name):
    a = architecture(name)
    shape = (3, 16, 16)
    for width in (1.0, a.widths[0] if a.cpu_width == 1.0 else a.cpu_width):
        r = None
        if "encoder" in a.roles:
            with torch.no_grad():
                r = build_model(name, shape, 4, width, role="encoder")(torch.rand(2, 3 * 16 * 16))
        for role in a.roles:
            torch.manual_seed(0)
            net = build_model(name, shape, 4, width, role=role)
            full = param_count(name, shape, 4, width, role=role)
            assert sum(p.numel() for p in net.parameters()) == full
            x = torch.rand(2, 3 * 16 * 16) if role in a.image_roles else r
            out = net(x)
            out.float().pow(2).mean().backward()
            grads = [p.grad for p in net.parameters()]
            assert all(g is not None and torch.isfinite(g).all() for g in grads), (name, role)
            assert torch.isfinite(out).all()
            if role == "classifier":
                assert out.shape == (2, 4)
            if role == "decoder":
                assert out.shape == (2, 3 * 16 * 16) and 0 <= out.min().item() <= out.max().item() <= 1


def test_narrow_width_is_smaller_and_costs_less():
    for name, a in ARCHITECTURES.items():
        if a.cpu_width < 1:
            # channel widths enter the weights and the convolutions' cost squared
            assert param_count(a, *a.reference, a.cpu_width) < a.cpu_width * param_count(a, *a.reference), name
            assert forward_flops(a, *a.reference, a.cpu_width) < a.cpu_width * forward_flops(a, *a.reference), name
            assert "narrower copy" in a.width_label(a.cpu_width)


def test_flops_cost_model_known_values():
    # mlp on 8x8: 2 * (64*64 + 64*10) multiply-adds; LeNet-5 at 32x32 RGB: convolutions and
    # the three linear layers, pooling not counted
    assert forward_flops("mlp", (1, 8, 8), 10) == 2 * (64 * 64 + 64 * 10)
    macs = 28 * 28 * 6 * 75 + 10 * 10 * 16 * 150 + 400 * 120 + 120 * 84 + 84 * 10
    assert forward_flops("lenet5", (3, 32, 32), 10) == 2 * macs


def test_mlp_is_todays_model():
    from core.models.nn import image_classifier, seeded

    for shape in ((1, 8, 8), (1, 1, 12)):
        ours = build_model("mlp", shape, 10, seed=1234)
        today = seeded(lambda s=shape: image_classifier("mlp", s, 10), 1234)
        assert type(ours) is type(today)
        a, b = ours.state_dict(), today.state_dict()
        assert list(a) == list(b)
        assert all(torch.equal(a[k], b[k]) for k in a)
    # tabular rows as (d,) build the same network as the runners' (1, 1, d)
    assert torch.equal(build_model("mlp", (12,), 2, seed=5).fc1.weight,
                       build_model("mlp", (1, 1, 12), 2, seed=5).fc1.weight)


def test_lenet5_full_width_is_core_nn_lenet5():
    from core.models.nn import LeNet5, seeded

    ours = build_model("lenet5", (1, 8, 8), 10, seed=7)
    today = seeded(lambda: LeNet5((1, 8, 8), 10), 7)
    a, b = ours.state_dict(), today.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    x = torch.rand(5, 64)
    assert torch.allclose(ours(x), today(x))


def test_seed_gives_the_same_network_and_bn_models_seed_too():
    for name in ("resnet10", "wrn28_2", "inf2guard_dra", "tappfl_cifar"):
        a = build_model(name, (3, 32, 32), 10, 0.125, seed=3)
        b = build_model(name, (3, 32, 32), 10, 0.125, seed=3)
        c = build_model(name, (3, 32, 32), 10, 0.125, seed=4)
        sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
        assert all(torch.equal(sa[k], sb[k]) for k in sa), name
        assert any(not torch.equal(sa[k], sc[k]) for k in sa if sa[k].is_floating_point()), name


def test_declared_resize():
    assert architecture("resnet18").transform((1, 8, 8)) == "bilinear resize 8×8 → 32×32"
    assert architecture("resnet18").transform((3, 64, 64)) == "none"
    assert architecture("lenet5").transform((3, 64, 64)) == "bilinear resize 64×64 → 32×32"
    assert architecture("inf2guard_dra").transform((3, 8, 8)) == "none"
    # 8x8 digits reach ResNet-18 as 32x32: its output is that of the resized image
    net = build_model("resnet18", (1, 8, 8), 10, 0.125, seed=0).eval()
    x = torch.rand(3, 1, 8, 8)
    big = torch.nn.functional.interpolate(x, size=(32, 32), mode="bilinear", align_corners=False)
    assert torch.allclose(net(x.flatten(1)), net.net(big), atol=1e-6)


@pytest.mark.parametrize("call,match", [
    (lambda: build_model("resnet18", (1, 1, 12), 2, data="adult"),
     (r"^model\.arch: got 'resnet18'; it needs an image input \(3×32×32 or resized\), "
     r"data 'adult' is tabular$")),
    (lambda: build_model("lenet5", (14,), 2),
     r"^model\.arch: got 'lenet5'; it needs an image input .*, the data is tabular$"),
    (lambda: build_model("resnet50", (3, 32, 32), 10),
     r"^model\.arch: got 'resnet50'; allowed: mlp, lenet5, .*$"),
    (lambda: build_model("resnet18", (3, 32, 32), 10, 0.0),
     r"^model\.width: got 0\.0; allowed: \[0\.0625, 4\] for 'resnet18'$"),
    (lambda: build_model("resnet18", (3, 32, 32), 10, role="decoder"),
     r"^model\.role: got 'decoder'; allowed for 'resnet18': classifier$"),
    (lambda: build_model("resnet18", (5, 32, 32), 10, data="x"),
     r"^model\.arch: got 'resnet18'; it takes 1 or 3 channels, data 'x' has 5$"),
    (lambda: build_model("resnet18", (3, 32, 32), 1),
     r"^n_classes: got 1"),
    (lambda: build_model("mlp", (3, 32), 10), r"^in_shape: got \(3, 32\); allowed: "),
])
def test_errors_are_one_line(call, match):
    with pytest.raises(ValueError, match=match) as e:
        call()
    assert "\n" not in str(e.value)


def test_tabular_keeps_the_mlp():
    assert input_kind((12,)) == ("tabular", (1, 1, 12))
    assert input_kind((1, 8, 8))[0] == "image"
    assert architectures_for((1, 1, 14)) == ["mlp"]
    assert len(architectures_for((3, 32, 32))) >= 8


def test_describe_lists_models_light():
    d = describe()
    names = [m["name"] for m in d["models"]]
    assert names[:2] == ["mlp", "lenet5"] and len(names) >= 8
    assert "params" not in d["models"][0]  # the plain listing builds nothing


def test_cli_parts_family_models(capsys):
    from cli.main import main

    assert main(["parts", "--family", "models", "--json"]) == 0
    models = json.loads(capsys.readouterr().out)["models"]
    assert len(models) >= 8
    byname = {m["name"]: m for m in models}
    assert byname["resnet18"]["params"]["classifier"] == 11_173_962
    assert byname["resnet18"]["params_cpu_width"]["classifier"] < 1_000_000
    assert byname["lenet5"]["forward_flops"] > 0
    assert main(["parts", "--family", "models"]) == 0
    out = capsys.readouterr().out
    assert all(n in out for n in byname) and "11.174 M" in out
