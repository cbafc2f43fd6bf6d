"""TAPPFL: λ moves the in-training adversary, y is never used, presets, guards, helpers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from sklearn.metrics import balanced_accuracy_score

from core.config.schema import ConfigError, DataSpec, FedAvgSpec, TappflConfig
from core.data import load_dataset
from core.defenses.tappfl import adversary_proba, encode, paper_preset, quick_preset, train_tappfl

SPEC = DataSpec(name="synthetic", n_samples=2000, dependence=0.0)  # u-informative features, y ⟂ u


def _cfg(lam: float, **fl) -> TappflConfig:
    fl = {"num_devices": 4, "fraction_fit": 1.0, "rounds": 5, "local_epochs": 3, "batch_size": 16,
          "lr": 0.1} | fl
    return TappflConfig(data=SPEC, tradeoff_lambda=lam, pretrain_epochs=3, representation_dim=16,
                        hidden_dim=32, critic_hidden=32, fl=FedAvgSpec(**fl))


@pytest.fixture(scope="module")
def ds():
    return load_dataset(SPEC, seed=0)


def _in_training_bacc(state, ds) -> float:
    te = ds.split("test")
    p = adversary_proba(state, encode(state.extractor, ds.X[te]))
    return balanced_accuracy_score(ds.attribute()[te], p.argmax(1))


def test_lambda_one_drives_adversary_to_chance_lambda_zero_does_not(ds):
    leak = train_tappfl(_cfg(0.0), ds)
    priv = train_tappfl(_cfg(1.0), ds)
    assert _in_training_bacc(leak, ds) >= 0.7
    assert _in_training_bacc(priv, ds) <= 0.6
    assert leak.curves["adversary_bacc"][-1] >= 0.7
    assert priv.curves["adversary_bacc"][-1] <= 0.6
    assert priv.curves["adversary_ce"][-1] > leak.curves["adversary_ce"][-1]
    for k in ("adversary_ce", "adversary_acc", "adversary_bacc", "jsd_mi", "round_seconds"):
        assert len(leak.curves[k]) == 5 and np.all(np.isfinite(leak.curves[k]))


def test_task_label_is_never_used(ds):
    cfg = _cfg(0.5, rounds=2, local_epochs=1)
    a = train_tappfl(cfg, ds)
    shuffled = dataclasses.replace(ds, y=np.random.default_rng(1).permutation(ds.y))
    b = train_tappfl(cfg, shuffled)
    for p, q in zip(a.extractor.parameters(), b.extractor.parameters()):
        assert torch.equal(p, q)


def test_deterministic_and_vectorised_matches_sequential(ds):
    cfg = _cfg(0.5, num_devices=6, fraction_fit=0.5, rounds=2, local_epochs=1, batch_size=24)
    a = train_tappfl(cfg, ds)
    b = train_tappfl(cfg, ds)
    c = train_tappfl(cfg, ds, vectorised=False)
    for p, q, r in zip(a.extractor.parameters(), b.extractor.parameters(), c.extractor.parameters()):
        assert torch.equal(p, q)
        assert torch.allclose(p, r, atol=1e-5)


def test_too_many_devices_is_a_clear_error():
    small = DataSpec(name="synthetic", n_samples=100)
    tiny = load_dataset(small, seed=0)
    n_train = len(tiny.split("train"))
    cfg = _cfg(0.5, num_devices=n_train + 1).model_copy(update={"data": small})
    with pytest.raises(ConfigError, match=rf"fl\.num_devices: got {n_train + 1}; allowed range 1 <= value <= {n_train}"):
        train_tappfl(cfg, tiny)


def test_helpers_shapes(ds):
    st = train_tappfl(_cfg(0.5, rounds=1, local_epochs=1, fraction_fit=0.5), ds)
    te = ds.split("test")
    R = encode(st.extractor, ds.X[te], batch=50)
    assert R.shape == (len(te), 16) and R.dtype == np.float32
    p = adversary_proba(st, R)
    assert p.shape == (len(te), 2) and np.allclose(p.sum(1), 1, atol=1e-5)
    per = adversary_proba(st, R, devices="all", average=False)
    assert per.shape == (2, len(te), 2)
    assert len(st.partition) == 4 and sum(len(x) for x in st.partition) == len(ds.split("train"))
    assert st.pretrain_curves["pretrain_jsd_mi"] and len(st.pretrain_curves["pretrain_jsd_mi"]) == 3


def test_presets_follow_the_paper():
    p = paper_preset(SPEC)
    assert (p.fl.num_devices, p.fl.fraction_fit, p.fl.rounds, p.fl.batch_size, p.fl.local_epochs, p.fl.lr) == (
        100, 0.1, 20, 10, 10, 0.01)
    q = quick_preset(SPEC)
    assert q.fl.num_devices <= 20 and q.fl.rounds <= 5 and q.fl.local_epochs <= 2


def test_model_init_comes_from_a_local_generator_not_the_global_seed(monkeypatch):
    """Concurrent runs (dashboard threads) must not share torch's global RNG: the same config
    gives the same initial and trained weights whatever the global RNG was seeded with, and
    training never (re)seeds the global RNG."""
    spec = DataSpec(name="synthetic", n_samples=300, dependence=0.0)
    small = load_dataset(spec, seed=0)
    cfg = TappflConfig(data=spec, pretrain_epochs=1, representation_dim=4, hidden_dim=6, critic_hidden=6,
                       fl=FedAvgSpec(num_devices=3, fraction_fit=1.0, rounds=1, local_epochs=1,
                                     batch_size=32, lr=0.1))
    states = []
    for global_seed in (1, 12345):
        torch.manual_seed(global_seed)
        with monkeypatch.context() as mp:
            def no_global_seed(*_a, **_k):
                raise AssertionError("train_tappfl seeded torch's global RNG")

            mp.setattr(torch, "manual_seed", no_global_seed)
            mp.setattr(torch.random, "manual_seed", no_global_seed)
            states.append(train_tappfl(cfg, small))
    a, b = states
    for (n, p), (_, q) in zip(a.extractor.named_parameters(), b.extractor.named_parameters()):
        assert torch.equal(p, q), n
    for name in ("adversary", "critic"):
        for k, v in a.fed.private[name].items():
            assert torch.equal(v, b.fed.private[name][k]), (name, k)
    # the devices' adversaries Ψ_k start independent (drawn one after another from the stream)
    w = a.fed.private["adversary"]["net.0.weight"]
    assert not torch.equal(w[0], w[1])


def test_init_module_reproduces_pytorch_default_init():
    from torch import nn

    from core.models.nn import ConvEncoder, MICritic, init_module_, seeded

    for make in (lambda: MICritic(5, 4, 3, hidden=8), lambda: ConvEncoder((1, 8, 8), rep_dim=6)):
        torch.manual_seed(7)
        ref = make()  # PyTorch's reset_parameters from the global RNG
        torch.manual_seed(99)
        got = seeded(make, 7)
        for (n, p), (_, q) in zip(ref.named_parameters(), got.named_parameters()):
            assert torch.equal(p, q), n
    with pytest.raises(TypeError, match="LayerNorm"):
        init_module_(nn.Sequential(nn.Linear(3, 3), nn.LayerNorm(3)), torch.Generator())
