"""The engine's order strategies (core.engine.order): the seeded shuffle and Poisson sampling
as Opacus' DPDataLoader draws it, and fit() over steps that may be empty."""

from __future__ import annotations

import math

import pytest
import torch

from core.engine.hooks import Hook, StepState
from core.engine.loop import Objective, fit
from core.engine.order import Poisson, Shuffle
from core.engine.recipe import Recipe


def _opacus_batches(n: int, batch_size: int, seed: int, epochs: int) -> list[list[int]]:
    """The index lists Opacus' Poisson loader yields for a plain loader of batch_size."""
    from opacus.data_loader import DPDataLoader
    from torch.utils.data import DataLoader, TensorDataset

    ds = TensorDataset(torch.arange(n))
    plain = DataLoader(ds, batch_size=batch_size, generator=torch.Generator().manual_seed(seed))
    loader = DPDataLoader.from_data_loader(plain)
    return [b[0].tolist() for _ in range(epochs) for b in loader]


@pytest.mark.parametrize(("n", "batch_size"), [(50, 10), (30, 1), (7, 7)])
def test_poisson_draws_opacus_loader_rows_bit_for_bit(n, batch_size):
    k = -(-n // batch_size)
    want = _opacus_batches(n, batch_size, seed=3, epochs=3)
    order = Poisson(torch.Generator().manual_seed(3), 1.0 / k)
    assert order.steps(n, batch_size) == k
    got = [(idx.tolist(), m) for _ in range(3) for idx, m in order.epoch(n, batch_size, "cpu")]
    assert [g for g, _ in got] == want
    assert all(len(g) == m for g, m in got)  # the host count is the step's size
    if batch_size == 1:  # q = 1/30 over 30 rows: about a third of the steps are empty
        assert any(m == 0 for _, m in got)


def test_poisson_draws_in_chunks_as_one_stream(monkeypatch):
    import core.engine.order as order_mod

    whole = [i.tolist() for i, _ in Poisson(torch.Generator().manual_seed(9), 0.1)
             .epoch(40, 4, "cpu")]
    monkeypatch.setattr(order_mod, "_CHUNK", 90)  # two steps of 40 rows per draw
    chunked = [i.tolist() for i, _ in Poisson(torch.Generator().manual_seed(9), 0.1)
               .epoch(40, 4, "cpu")]
    assert chunked == whole and len(whole) == 10


def test_shuffle_is_the_seeded_permutation_in_minibatches():
    perm = torch.randperm(10, generator=torch.Generator().manual_seed(4))
    got = list(Shuffle(torch.Generator().manual_seed(4)).epoch(10, 4, "cpu"))
    assert [m for _, m in got] == [4, 4, 2]
    assert torch.equal(torch.cat([i for i, _ in got]), perm)


def test_poisson_rejects_a_bad_rate_in_one_line():
    with pytest.raises(ValueError, match=r"^rate: got 0\.0; allowed"):
        Poisson(torch.Generator(), 0.0)
    with pytest.raises(ValueError, match=r"^rate: got 1\.5; allowed"):
        Poisson(torch.Generator(), 1.5)


def test_fit_takes_the_orders_rows_and_averages_the_loss_over_rows_taken():
    n = 12
    X = torch.randn(n, 3, generator=torch.Generator().manual_seed(0))
    w = torch.zeros(3, requires_grad=True)
    losses: list[float] = []
    taken: list[list[int]] = []

    def objective(rows: torch.Tensor) -> torch.Tensor:
        loss = (X[rows] @ w - 1.0).pow(2).mean()  # NaN on an empty step
        losses.append(float(loss.detach()) * len(rows) if len(rows) else 0.0)
        return loss

    class Rows(Hook):
        def before_step(self, state: StepState) -> None:
            taken.append(state.idx.tolist())
            assert state.rows == len(state.idx)

    log = fit([w], Objective(objective, n), recipe=Recipe(epochs=1, batch_size=1, lr=0.01,
                                                          optimizer="sgd"),
              order=Poisson(torch.Generator().manual_seed(5), 1.0 / n), hooks=[Rows()])
    want = [i.tolist() for i, _ in Poisson(torch.Generator().manual_seed(5), 1.0 / n)
            .epoch(n, 1, "cpu")]
    assert taken == want and log.steps == n
    assert any(not t for t in taken)  # the seed gives empty steps, which still step
    rows = sum(len(t) for t in taken)
    assert math.isfinite(log.train_loss[0])
    assert log.train_loss[0] == pytest.approx(sum(losses) / rows, rel=1e-6)

