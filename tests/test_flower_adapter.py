"""Flower adapter (core.fl.flower): the same FedAvg rounds through Flower's Ray simulation give
our simulator's model (same init, round plans, local steps, upload transform, aggregation), for
TAPPFL (through its thin caller core.defenses.tappfl_flower) and for the plain objective.

Flower and Ray come with the optional ``scale`` extra, which CI does not install (several
hundred MB, and Ray starts local processes): those tests are skipped there. One Ray serves both
simulations (the session fixture; the adapter leaves a Ray it did not start running)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.config.schema import DataSpec, FedAvgSpec, TappflConfig
from core.data import load_dataset
from core.fl.fedavg import run_fedavg
from core.fl.objectives import plain_objective
from core.fl.types import FedAvgState
from core.models.nn import init_module_

N_DEV, ROUNDS = 4, 2


@pytest.fixture
def ray_once(ray_session):
    """The session's Ray (tests/conftest.py), started once; the adapter leaves it running."""
    pytest.importorskip("flwr")
    return ray_session


def plain_setup(seed: int = 0):
    """A tiny 3-class problem on 4 devices of unequal size, and a seeded MLP classifier."""
    g = torch.Generator().manual_seed(seed)
    n, d = 90, 5
    x = torch.randn(n, d, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    parts = np.split(np.random.default_rng(seed).permutation(n), [15, 40, 70])
    obj = plain_objective(d, 3, hidden=8)
    init_module_(obj.shared, torch.Generator().manual_seed(seed))
    return obj, FedAvgState(shared=obj.shared, private={}, partition=parts), {"x": x, "y": y}


FL = {"rounds": ROUNDS, "fraction_fit": 1.0, "local_epochs": 2, "batch_size": 8, "lr": 0.2, "seed": 3}


def halve(deltas, *, generator):  # an upload transform (deterministic, so both paths agree)
    return {n: 0.5 * v for n, v in deltas.items()}


def test_plain_objective_vectorised_equals_sequential():
    obj_v, st_v, data = plain_setup()
    obj_s, st_s, _ = plain_setup()
    run_fedavg(obj_v, st_v, data, vectorised=True, **FL)
    run_fedavg(obj_s, st_s, data, vectorised=False, **FL)
    for (n, a), (_, b) in zip(st_v.shared.named_parameters(), st_s.shared.named_parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5, msg=n)
    assert st_v.curves["train_ce"] == pytest.approx(st_s.curves["train_ce"], abs=1e-5)
    assert st_v.curves["train_ce"][-1] < st_v.curves["train_ce"][0]  # it learns
    assert st_v.curves["device_updates"] == [4.0, 4.0]


@pytest.mark.slow
def test_flower_plain_objective_equals_simulator(ray_once):
    from core.fl.flower import ObjectiveRecipe, run_flower_fedavg

    obj, ref, data = plain_setup()
    run_fedavg(obj, ref, data, upload_transform=halve, **FL)
    _, st, _ = plain_setup()
    recipe = ObjectiveRecipe("plain", {"in_dim": 5, "n_classes": 3, "hidden": 8})
    run = run_flower_fedavg(recipe, st, data, upload_transform=halve, **FL)
    assert run.state is st and st.round == ROUNDS and st.curves["device_updates"] == [4.0, 4.0]
    assert list(st.rounds_trained) == [2, 2, 2, 2] and run.backend == "ray"
    import ray

    assert ray.is_initialized()  # the fixture's Ray outlives the simulation, for the next one
    for (n, a), (_, b) in zip(st.shared.named_parameters(), ref.shared.named_parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5, msg=n)
    assert st.curves["train_acc"] == pytest.approx(ref.curves["train_acc"], abs=1e-6)


@pytest.mark.slow
def test_flower_tappfl_equals_simulator(ray_once):
    from core.defenses.tappfl import train_tappfl
    from core.defenses.tappfl_flower import run_flower_simulation

    spec = DataSpec(name="synthetic", n_samples=300)
    ds = load_dataset(spec, seed=0)
    cfg = TappflConfig(
        data=spec, tradeoff_lambda=0.5, pretrain_epochs=1, representation_dim=8, hidden_dim=16,
        critic_hidden=16, adversary_steps=2, adversary_lr_scale=2.0,
        fl=FedAvgSpec(num_devices=N_DEV, fraction_fit=0.75, rounds=1, local_epochs=1, batch_size=16, lr=0.1),
    )
    # two rounds: round 2's extractor update depends on the Ψ_k, Ω_k each device trained in
    # round 1, so this also checks that they persist on the client side
    res = run_flower_simulation(cfg, ds, rounds=ROUNDS, num_cpus=2)
    ref = train_tappfl(cfg.model_copy(update={"fl": cfg.fl.model_copy(update={"rounds": ROUNDS})}), ds,
                       vectorised=False, num_threads=1)
    assert res["device_updates"] == 6 and res["curves"]["device_updates"] == [3.0, 3.0]
    assert res["backend"] == "ray" and res["device_updates_per_s"] > 0
    names = [n for n, _ in ref.extractor.named_parameters()]
    assert sorted(res["extractor"]) == sorted(names)
    for n, p in ref.extractor.named_parameters():
        np.testing.assert_allclose(res["extractor"][n], p.detach().numpy(), rtol=0, atol=1e-5, err_msg=n)
    for name, params in ref.fed.private.items():  # every device's Ψ_k, Ω_k, sampled or not
        for n, v in params.items():
            np.testing.assert_allclose(res["private"][name][n], v.numpy(), rtol=0, atol=1e-5, err_msg=f"{name}.{n}")
    np.testing.assert_allclose(res["curves"]["adversary_ce"], ref.curves["adversary_ce"], atol=1e-5)


DIGITS = DataSpec(name="digits", private_attribute="parity", max_samples=200)
TINY_CONV = {"arch": "lenet5", "width": 0.0625}


def _conv_cfg() -> TappflConfig:
    return TappflConfig(
        data=DIGITS, model=TINY_CONV, tradeoff_lambda=0.5, pretrain_epochs=0, hidden_dim=8,
        critic_hidden=8, fl=FedAvgSpec(num_devices=N_DEV, fraction_fit=0.75, rounds=1,
                                       local_epochs=1, batch_size=16, lr=0.1))


def test_a_client_builds_the_model_of_the_recipe():
    """The recipe carries the ModelSpec and the data's shape; a client's objective trains the
    same networks (names and shapes) as the simulator's; the MLP's recipe is unchanged."""
    from core.defenses.tappfl import train_tappfl
    from core.defenses.tappfl_conv import ConvTappflObjective
    from core.defenses.tappfl_flower import tappfl_recipe
    from core.fl.flower import ObjectiveRecipe

    ds = load_dataset(DIGITS, seed=0)
    cfg = _conv_cfg()
    recipe = ObjectiveRecipe.from_json(tappfl_recipe(cfg, ds.X.shape[1], 2, ds.image_shape).to_json())
    assert recipe.kwargs["model"] == TINY_CONV and recipe.kwargs["in_shape"] == [1, 8, 8]
    obj = recipe.build()
    assert isinstance(obj, ConvTappflObjective)
    ref = train_tappfl(cfg.model_copy(update={"fl": cfg.fl.model_copy(update={"rounds": 0})}), ds)
    shapes = lambda m: {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert shapes(obj.shared) == shapes(ref.extractor)
    assert shapes(obj.private["adversary"]) == shapes(ref.adversary)
    assert shapes(obj.private["critic"]) == shapes(ref.critic)
    mlp = tappfl_recipe(cfg.model_copy(update={"model": type(cfg.model)()}), 64, 2, (1, 8, 8))
    assert "model" not in mlp.kwargs and "in_shape" not in mlp.kwargs
    with pytest.raises(ValueError, match=r"^in_shape: got None; allowed: the data's \(C, H, W\) "
                                         r"with model.arch 'lenet5'$"):
        tappfl_recipe(cfg, 64, 2)


@pytest.mark.slow
def test_flower_tappfl_conv_equals_simulator(ray_once):
    from core.defenses.tappfl import train_tappfl
    from core.defenses.tappfl_flower import run_flower_simulation

    ds = load_dataset(DIGITS, seed=0)
    cfg = _conv_cfg()
    res = run_flower_simulation(cfg, ds, rounds=ROUNDS, num_cpus=2)
    ref = train_tappfl(cfg.model_copy(update={"fl": cfg.fl.model_copy(update={"rounds": ROUNDS})}),
                       ds, vectorised=False, num_threads=1)
    for n, p in ref.extractor.named_parameters():
        np.testing.assert_allclose(res["extractor"][n], p.detach().numpy(), rtol=0, atol=1e-5,
                                   err_msg=n)
    np.testing.assert_allclose(res["curves"]["adversary_ce"], ref.curves["adversary_ce"], atol=1e-5)


def test_recipe_errors_are_one_line():
    from core.fl.flower import ObjectiveRecipe

    with pytest.raises(ValueError, match="kwargs: not JSON-able"):
        ObjectiveRecipe("plain", {"in_dim": object()})
    r = ObjectiveRecipe("plain", {"in_dim": 5, "n_classes": 3})
    assert ObjectiveRecipe.from_json(r.to_json()) == r and r.build().shared.net[0].in_features == 5


@pytest.mark.parametrize("asked", [
    "core.fl.objectives:plain_objective",  # a module:function path, even of a real factory
    "os:system", "builtins:eval", "subprocess:run", "nope", "", "plain ",
])
def test_flower_refuses_an_unregistered_objective(asked):
    """Objectives come from the registry by registered name only; anything else is refused
    with a message naming what was asked for, and nothing is imported."""
    import json
    import sys

    from core.fl.flower import ObjectiveRecipe, _client_env

    before = set(sys.modules)
    with pytest.raises(ValueError, match="objective: got") as err:
        ObjectiveRecipe(asked)
    assert repr(asked) in str(err.value) and "\n" not in str(err.value)
    # a server message naming it is refused the same way by the client
    msg = json.dumps({"objective": asked, "kwargs": {}})
    with pytest.raises(ValueError, match="objective: got"):
        _client_env("/nonexistent-run-file.npz", msg)
    # the old message shape (a factory path) is refused, naming it
    with pytest.raises(ValueError, match="recipe: got"):
        ObjectiveRecipe.from_json(json.dumps({"factory": "os:system", "kwargs": {}}))
    assert not {"subprocess"} & (set(sys.modules) - before)


def test_load_object_only_loads_privlab_objects():
    from core.foundation.registry import load_object

    assert callable(load_object("core.fl.objectives:plain_objective"))
    for path in ("os:system", "builtins:eval", "core.fl:", "core.x;import os:y", "os.path:join"):
        with pytest.raises(ValueError, match="object path: got"):
            load_object(path)
