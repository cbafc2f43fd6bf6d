"""Which rows each step of :func:`core.engine.loop.fit` takes: the epoch's order.

- :class:`Shuffle` (the default): every epoch a seeded permutation ``torch.randperm(n)`` cut
  into minibatches of the batch size, the last one smaller; every row once per epoch.
- :class:`Poisson`: every step takes each row independently with probability q, so a step's
  size is Binomial(n, q) and may be 0; int(1/q) steps per epoch. This is the sampling the
  subsampled Gaussian mechanism's accounting assumes (Abadi et al. 2016, §3.1; Mironov et al.
  2019), and its draws are those of Opacus' ``DPDataLoader`` (``UniformWithReplacementSampler``:
  ``torch.rand(n) < q`` per step) from the same generator, bit for bit.
- :class:`Planned`: the rows of every step given ahead (a FedAvg round plan's batches for one
  device).

An order draws on the host from a local CPU generator (never the global RNG) and moves an
epoch's rows to the device in one transfer, so no step reads a value back from the device;
each batch comes with its row count as a host integer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from core.foundation.checks import check_range

if TYPE_CHECKING:
    import torch
    from torch import Tensor

__all__ = ["Order", "Planned", "Poisson", "Shuffle"]

#: most uniforms a Poisson epoch draws at once (bounds host memory for large n·steps)
_CHUNK = 1 << 22


class Order:
    """An epoch's minibatches: :meth:`steps` per epoch, :meth:`epoch` the (rows, count)
    pairs, rows a LongTensor on the device."""

    def steps(self, n: int, batch_size: int) -> int:
        """Steps per epoch over ``n`` rows."""
        raise NotImplementedError

    def epoch(self, n: int, batch_size: int, device: torch.device | str
              ) -> Iterator[tuple[Tensor, int]]:
        """The steps of one epoch: (row indices (m,) on ``device``, m)."""
        raise NotImplementedError


class Shuffle(Order):
    """A seeded permutation per epoch in minibatches of ``batch_size`` (the last smaller), or
    cut by ``split(perm, batch_size)`` where a procedure batches its rows otherwise
    (Inf2Guard's property game joins a trailing single subset to the batch before it)."""

    def __init__(self, generator: torch.Generator,
                 split: Callable[[Tensor, int], Sequence[Tensor]] | None = None) -> None:
        self.generator, self.split = generator, split

    def steps(self, n: int, batch_size: int) -> int:
        if self.split is None:
            return -(-n // batch_size)
        import torch

        return len(self.split(torch.arange(n), batch_size))

    def epoch(self, n: int, batch_size: int, device: torch.device | str
              ) -> Iterator[tuple[Tensor, int]]:
        import torch

        perm = torch.randperm(n, generator=self.generator).to(device)
        if self.split is not None:
            for idx in self.split(perm, batch_size):
                yield idx, len(idx)
            return
        for i in range(0, n, batch_size):
            yield perm[i:i + batch_size], min(batch_size, n - i)


class Poisson(Order):
    """Each row in each step with probability ``rate`` (q), ``int(1/q)`` steps per epoch as
    Opacus counts them; ``generator`` a CPU generator (the one a ``DPDataLoader`` would get).
    The batch size is not used: the expected step size is q·n."""

    def __init__(self, generator: torch.Generator, rate: float) -> None:
        check_range("rate", rate, 0.0, 1.0, lo_open=True)
        if generator.device.type != "cpu":
            raise ValueError(f"generator: on {generator.device}; allowed: a CPU generator "
                             "(the sampler draws on the host, as Opacus' loader does)")
        self.generator, self.rate = generator, float(rate)

    def steps(self, n: int, batch_size: int) -> int:
        return int(1 / self.rate)

    def epoch(self, n: int, batch_size: int, device: torch.device | str
              ) -> Iterator[tuple[Tensor, int]]:
        import torch

        g = self.generator
        # A DataLoader draws one int64 (its workers' base seed) from its generator when an
        # epoch's iterator starts, before the sampler's first step: drawn here too, so that
        # every step's rows equal those of Opacus' loader on the same generator.
        torch.empty((), dtype=torch.int64).random_(generator=g)
        k = self.steps(n, batch_size)
        per = max(1, _CHUNK // max(1, n))
        cols, counts = [], []
        for s in range(0, k, per):
            # CPU uniforms are drawn serially: rand(c, n) equals c successive rand(n)
            mask = torch.rand(min(per, k - s), n, generator=g) < self.rate
            cols.append(mask.nonzero()[:, 1])
            counts += mask.sum(1).tolist()
        rows = torch.cat(cols).to(device)
        yield from zip(rows.split(counts), counts, strict=True)


class Planned(Order):
    """The steps' rows given ahead: step s takes ``index[s, :counts[s]]`` (``index`` (T, b) on
    the device, ``counts`` the T row counts on the host); every epoch repeats the T steps."""

    def __init__(self, index: Tensor, counts: list[int]) -> None:
        if len(counts) > len(index) or any(not 0 <= int(m) <= index.shape[-1] for m in counts):
            raise ValueError(f"counts: got {len(counts)} counts for {len(index)} planned steps "
                             f"of {index.shape[-1]} rows; allowed: at most one count per step, "
                             f"each in [0, {index.shape[-1]}]")
        self.index, self.counts = index, [int(m) for m in counts]

    def steps(self, n: int, batch_size: int) -> int:
        return len(self.counts)

    def epoch(self, n: int, batch_size: int, device: torch.device | str
              ) -> Iterator[tuple[Tensor, int]]:
        for s, m in enumerate(self.counts):
            yield self.index[s, :m], m
