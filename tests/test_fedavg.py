"""FedAvg simulator: vectorised == sequential, size-weighted aggregation, upload hook, plans."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from core.defenses.tappfl import TappflObjective
from core.fl import FedAvgState, num_sampled, plan_round, run_fedavg
from core.foundation.progress import Cancelled, CancelToken, Progress
from core.models.nn import AttributeAdversary, Encoder, MICritic, seeded

D, REP, V = 6, 8, 3


def _data(n: int = 90, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    u = torch.randint(0, V, (n,), generator=g)
    x = torch.randn(n, D, generator=g) + u.unsqueeze(1).float()
    return {"x": x, "u": u}


def _unequal_partition() -> list[np.ndarray]:
    sizes = [7, 13, 0, 22, 5, 18, 25]  # one empty device, sizes not multiples of the batch
    cuts = np.cumsum(sizes)[:-1]
    return [p.astype(np.int64) for p in np.split(np.arange(sum(sizes)), cuts)]


def _tappfl_state(parts, *, dropout: float = 0.0, lam: float = 0.5, adversary_steps: int = 2):
    g = torch.Generator().manual_seed(0)  # a local stream: the engine seeds nothing global
    enc = seeded(Encoder(D, hidden=10, rep_dim=REP, dropout=dropout), g)
    adv = seeded(AttributeAdversary(REP, V, hidden=8), g)
    crit = seeded(MICritic(D, REP, V, hidden=8), g)
    n = len(parts)
    advs = [seeded(AttributeAdversary(REP, V, hidden=8), g) for _ in range(n)]
    crits = [seeded(MICritic(D, REP, V, hidden=8), g) for _ in range(n)]
    stack = lambda ms: {k: torch.stack([dict(m.named_parameters())[k].detach() for m in ms])
                        for k, _ in ms[0].named_parameters()}
    state = FedAvgState(shared=enc, private={"adversary": stack(advs), "critic": stack(crits)}, partition=parts)
    obj = TappflObjective(enc, adv, crit, tradeoff_lambda=lam, adversary_steps=adversary_steps)
    return obj, state


@pytest.mark.parametrize(("dropout", "lam", "chunk_bytes"),
                         [(0.0, 0.5, None), (0.3, 0.5, None), (0.0, 0.0, None), (0.0, 1.0, None),
                          (0.0, 0.5, 1)])  # 1 byte: every device in its own chunk
def test_vectorised_equals_sequential(dropout, lam, chunk_bytes, monkeypatch):
    if chunk_bytes is not None:
        monkeypatch.setattr("core.fl.vectorised.CHUNK_BYTES", chunk_bytes)
    parts = _unequal_partition()
    data = _data()
    out = []
    for vec in (True, False):
        obj, state = _tappfl_state(parts, dropout=dropout, lam=lam)
        run_fedavg(obj, state, data, rounds=2, fraction_fit=0.72, local_epochs=2, batch_size=4,
                   lr=0.1, seed=3, vectorised=vec, dropout=(dropout, 10) if dropout else None)
        out.append(state)
    a, b = out
    for (n, p), (_, q) in zip(a.shared.named_parameters(), b.shared.named_parameters()):
        assert torch.allclose(p, q, atol=1e-5), n
    for name in ("adversary", "critic"):
        for k in a.private[name]:
            assert torch.allclose(a.private[name][k], b.private[name][k], atol=1e-5), (name, k)
    for k in ("adversary_ce", "adversary_acc", "jsd_mi"):
        assert np.allclose(a.curves[k], b.curves[k], atol=1e-5), k
    # the model actually moved, and only sampled devices' private nets changed
    _, state0 = _tappfl_state(parts, dropout=dropout)
    moved = [not torch.equal(p, q) for p, q in zip(a.shared.parameters(), state0.shared.parameters())]
    assert all(moved)
    trained = np.flatnonzero(a.rounds_trained > 0)
    w0, w1 = state0.private["adversary"]["net.0.weight"], a.private["adversary"]["net.0.weight"]
    for d in range(len(parts)):
        same = torch.equal(w0[d], w1[d])
        assert same == (d not in trained or len(parts[d]) == 0), d


class _ShiftObjective:
    """Trivial local update with a known result: each valid step moves θ by +lr·mean(x) (a
    gradient step on −mean(x)·θ), so one full-batch step at lr = 1 gives θ_k = θ + x_k."""

    def __init__(self) -> None:
        self.shared = nn.Linear(1, 1, bias=False)
        nn.init.zeros_(self.shared.weight)
        self.private: dict[str, nn.Module] = {}

    def stacked_step(self, theta, private, batch, lr):
        w = theta["weight"]  # (K, 1, 1), a plain tensor: the objective does its own SGD
        g = -(batch.fields["x"] * batch.weight).sum(1)  # per-device d/dθ of −mean(x)·θ
        w -= lr * g.view(-1, 1, 1)
        return {"rows": batch.mask.sum(1)}

    def module_loss(self, theta, private, batch, lr):
        loss = -batch.fields["x"].mean() * theta.weight.sum()  # the engine takes the SGD step
        return loss, {"rows": torch.tensor(float(len(batch.fields["x"])))}

    def round_metrics(self, totals):
        return {"rows": float(totals["rows"])}


@pytest.mark.parametrize("vectorised", [True, False])
def test_fedavg_weights_by_local_data_size(vectorised):
    sizes = [3, 10, 1, 6]
    parts = np.split(np.arange(sum(sizes)), np.cumsum(sizes)[:-1])
    x = torch.cat([torch.full((s,), float(k + 1)) for k, s in enumerate(sizes)])  # device k holds x = k+1
    obj = _ShiftObjective()
    state = FedAvgState(shared=obj.shared, private={}, partition=[p.astype(np.int64) for p in parts])
    run_fedavg(obj, state, {"x": x}, rounds=1, fraction_fit=1.0, local_epochs=1, batch_size=max(sizes),
               lr=1.0, seed=0, vectorised=vectorised)
    expected = sum(s * (k + 1) for k, s in enumerate(sizes)) / sum(sizes)  # not the plain mean 2.5
    assert obj.shared.weight.item() == pytest.approx(expected, abs=1e-6)
    assert state.curves["rows"] == [float(sum(sizes))]


def test_upload_transform_hook_is_applied():
    parts = _unequal_partition()
    data = _data()
    seen = []

    def zero(deltas, *, generator):
        assert isinstance(generator, torch.Generator)
        seen.append({k: tuple(v.shape) for k, v in deltas.items()})
        return {k: torch.zeros_like(v) for k, v in deltas.items()}

    obj, state = _tappfl_state(parts)
    before = [p.detach().clone() for p in state.shared.parameters()]
    run_fedavg(obj, state, data, rounds=2, fraction_fit=0.5, local_epochs=1, batch_size=4, lr=0.1,
               seed=1, upload_transform=zero)
    assert len(seen) == 2
    k = num_sampled(len(parts), 0.5)
    for n, p in state.shared.named_parameters():
        assert seen[0][n] == (k, *p.shape)
    assert all(torch.equal(a, b) for a, b in zip(before, state.shared.parameters()))
    # ... while the private networks of sampled devices did train
    assert state.rounds_trained.sum() == 2 * k


def test_round_plan_covers_each_device_epoch_by_epoch():
    parts = _unequal_partition()
    rng = np.random.default_rng(0)
    plan = plan_round(rng, parts, round=1, fraction_fit=1.0, local_epochs=3, batch_size=4)
    assert list(plan.devices) == list(range(len(parts)))
    for i, d in enumerate(plan.devices):
        n = len(parts[d])
        assert plan.steps[i] == 3 * -(-n // 4)
        rows = plan.index[i][plan.mask[i]].numpy()
        assert sorted(rows) == sorted(np.repeat(parts[d], 3))  # every row once per epoch
        assert not plan.mask[i, plan.steps[i]:].any()
        for s in range(int(plan.steps[i])):
            m = int(plan.count[i, s])
            assert plan.mask[i, s, :m].all() and not plan.mask[i, s, m:].any()
            assert list(plan.roll[i, s, :m].numpy()) == [(j + 1) % m for j in range(m)]
    assert num_sampled(100, 0.1) == 10 and num_sampled(7, 0.01) == 1 and num_sampled(10, 0.25) == 3


def test_progress_and_cancel_and_on_round():
    parts = _unequal_partition()
    data = _data()
    obj, state = _tappfl_state(parts)
    seen, rounds = [], []
    run_fedavg(obj, state, data, rounds=2, fraction_fit=0.5, local_epochs=1, batch_size=4, lr=0.1,
               seed=0, progress=Progress(lambda f, m: seen.append(f)),
               on_round=lambda r, s: rounds.append((r, s.round)))
    assert rounds == [(1, 1), (2, 2)]
    assert seen and seen[-1] == pytest.approx(1.0) and all(b >= a - 1e-12 for a, b in itertools.pairwise(seen))
    assert len(state.curves["round_seconds"]) == 2
    token = CancelToken()
    token.cancel()
    obj, state = _tappfl_state(parts)
    with pytest.raises(Cancelled):
        run_fedavg(obj, state, data, rounds=2, fraction_fit=0.5, local_epochs=1, batch_size=4, lr=0.1,
                   seed=0, progress=Progress(None, token))


@pytest.mark.parametrize("vectorised", [True, False])
def test_cancel_is_checked_before_every_local_step(vectorised):
    # six local epochs: progress is reported only every few steps, the cancel check every step
    parts = _unequal_partition()
    obj, state = _tappfl_state(parts)
    token, steps = CancelToken(), []
    name = "stacked_step" if vectorised else "module_loss"
    inner = getattr(obj, name)

    def counting(*args):
        steps.append(1)
        if len(steps) == 3:
            token.cancel()
        return inner(*args)

    setattr(obj, name, counting)
    with pytest.raises(Cancelled):
        run_fedavg(obj, state, _data(), rounds=1, fraction_fit=1.0, local_epochs=6, batch_size=4,
                   lr=0.1, seed=0, vectorised=vectorised, progress=Progress(None, token))
    assert len(steps) == 3
