"""TAPPFL with a registered conv extractor: the grouped (all devices at once) step equals the
one-device-at-a-time reference, the paper's privacy network is the adversary, BatchNorm
statistics are per device, one-row batches are skipped, and the runner takes ``model``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.config.schema import DataSpec, FedAvgSpec, TappflConfig
from core.data import load_dataset
from core.defenses.tappfl import adversary_proba, encode, train_tappfl
from core.models.tappfl import TappflPrivacy

DIGITS = DataSpec(name="digits", private_attribute="parity", max_samples=400)


@pytest.fixture(scope="module")
def ds():
    return load_dataset(DIGITS, seed=0)


def _cfg(arch: str, width: float, **fl) -> TappflConfig:
    fl = {"num_devices": 4, "fraction_fit": 0.5, "rounds": 2, "local_epochs": 1,
          "batch_size": 24, "lr": 0.05} | fl
    return TappflConfig(data=DIGITS, model={"arch": arch, "width": width}, tradeoff_lambda=0.5,
                        pretrain_epochs=1, critic_hidden=16, hidden_dim=16, fl=FedAvgSpec(**fl))


def test_lenet_grouped_step_equals_the_reference(ds):
    # no dropout and no BatchNorm in LeNet-5: the two forms differ by float rounding only
    cfg = _cfg("lenet5", 0.5)
    a = train_tappfl(cfg, ds)
    b = train_tappfl(cfg, ds)
    c = train_tappfl(cfg, ds, vectorised=False)
    for (n, p), q, r in zip(a.extractor.named_parameters(), b.extractor.parameters(),
                            c.extractor.parameters()):
        assert torch.equal(p, q), n
        assert torch.allclose(p, r, atol=1e-5), n
    for name in ("adversary", "critic"):
        for n, v in a.fed.private[name].items():
            assert torch.allclose(v, c.fed.private[name][n], atol=1e-5), (name, n)
    assert np.allclose(a.curves["adversary_ce"], c.curves["adversary_ce"], atol=1e-5)


def test_tappfl_cifar_uses_the_papers_privacy_network_with_per_device_statistics(ds):
    cfg = _cfg("tappfl_cifar", 0.0625, rounds=1)
    st = train_tappfl(cfg, ds)
    assert isinstance(st.adversary[1], TappflPrivacy)
    te = ds.split("test")
    R = encode(st.extractor, ds.X[te])
    assert R.shape == (len(te), 8 * 8 * 8) and np.isfinite(R).all()
    per = adversary_proba(st, R, average=False)
    assert per.shape == (2, len(te), 2) and np.allclose(per.sum(-1), 1, atol=1e-5)
    # each trained device's Ψ_k keeps its own BatchNorm statistics, an untrained one none
    trained = np.flatnonzero(st.rounds_trained > 0)
    means = next(v for n, v in st.adversary_buffers.items() if n.endswith("running_mean"))
    assert not torch.allclose(means[trained[0]], means[trained[1]])
    untrained = np.flatnonzero(st.rounds_trained == 0)
    assert torch.all(means[untrained] == 0)
    # the released extractor's statistics are estimated (not the initial 0 / 1)
    ext_means = [b for n, b in st.extractor.named_buffers() if n.endswith("running_mean")]
    assert all(bool(m.abs().sum() > 0) for m in ext_means)


def test_one_row_batches_are_skipped_alike_in_both_forms(ds):
    # partition sizes give some devices a last batch of one row: BatchNorm cannot take it
    from core.defenses.tappfl import build_partition

    cfg = _cfg("tappfl_cifar", 0.0625, num_devices=3, fraction_fit=1.0, rounds=1)
    sizes = [len(p) for p in build_partition(cfg, ds)]
    bs = next(b for b in range(5, 100) if any(n % b == 1 for n in sizes))
    # λ = 0: Θ and Ω do not read Ψ, so the two forms' dropout streams cannot part them
    cfg = cfg.model_copy(update={"fl": cfg.fl.model_copy(update={"batch_size": bs}),
                                 "defense": cfg.defense.model_copy(update={"tradeoff_lambda": 0.0})})
    a = train_tappfl(cfg, ds)
    c = train_tappfl(cfg, ds, vectorised=False)
    steps = sum(-(-n // bs) for n in sizes)  # one-row batches included
    assert a.curves["adversary_ce"] and np.isfinite(a.curves["adversary_ce"]).all()
    assert np.isfinite(c.curves["adversary_ce"]).all() and steps > len(sizes)
    for p, q in zip(a.extractor.parameters(), c.extractor.parameters()):
        assert torch.isfinite(p).all() and torch.allclose(p, q, atol=1e-4)


def test_runner_takes_a_conv_model():
    from core.runs.experiments import run

    r = run({"kind": "attribute_privacy", "data": {"name": "digits", "private_attribute": "parity"},
             "model": {"arch": "lenet5", "width": 0.25}, "pretrain_epochs": 0,
             "projection_points": 0, "attack": {"attackers": ["logreg"]},
             "fl": {"num_devices": 2, "fraction_fit": 1.0, "rounds": 1}})
    assert 0.0 <= r.metrics["utility_acc"] <= 1.0
    assert np.isfinite(r.metrics["attack_logreg_auc"])
    assert r.config["model"] == {"arch": "lenet5", "width": 0.25}
