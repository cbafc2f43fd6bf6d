"""K copies of one network run as **one grouped network**: the layout that trains K conv nets
together (shadow and reference models, FedAvg devices) over stacked weights.

The K copies' activations sit side by side on the channel axis, (B, K·C, H, W) in
``channels_last`` memory, and (B, K·F) for features; copy k's batch is row-for-row beside the
others' (every copy sees B rows). Each layer becomes its K-fold grouped form, whose weights
are a *view* of the stacked (K, ...) tensors, so autograd gives each copy its own gradient:

- ``Conv2d(cin, cout, groups=g)`` → ``Conv2d(K·cin, K·cout, groups=K·g)`` (kernels (K, cout,
  cin/g, kh, kw) seen as (K·cout, cin/g, kh, kw));
- ``BatchNorm1d/2d(C)`` → ``(K·C)``: per-channel statistics are per-copy statistics, and the
  K copies' running statistics are one (K·C) view of the stacked (K, C) buffers, updated in
  place (BatchNorm, not GroupNorm: nothing needs replacing);
- ``GroupNorm(G, C)`` → ``GroupNorm(K·G, K·C)``; ``Linear`` → :class:`StackedLinear` (one
  ``baddbmm`` over (K, B, in)); ``Unflatten(1, (C, ...))`` → ``Unflatten(1, (K·C, ...))``;
- ``Dropout`` → :class:`SeededDropout`, masks from a local generator;
- :class:`core.models.common.ImageInput` → the interpolation alone (rows are laid out before);
- activations, pooling, ``Identity``, ``Flatten`` and containers act channel-wise: unchanged.

A container's own forward must act channel-wise too (flatten from dim 1, spatial means,
residual sums), as every :mod:`core.models` network does; one that declares
``channelwise = False`` (a user's registered model, whose forward privlab cannot read) is
refused, as is any other leaf
(:func:`check_groupable`), and the caller keeps ``vmap(functional_call)``.

Why not ``vmap(functional_call)`` alone: vmap already turns K stacked kernels into one grouped
convolution, but it permutes every activation between (K, B, ...) and (B, K·C, ...) around
each convolution and runs the grouped kernels on contiguous (not ``channels_last``) memory,
which on a CPU cost more than the K separate convolutions (benchmarks/models_bench.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call

from core.models.common import ImageInput

__all__ = ["GroupedNet", "SeededDropout", "StackedLinear", "check_groupable", "groupable"]

#: leaves that act channel-wise (elementwise or per channel) and hold nothing to stack
_PASS = (nn.ReLU, nn.Sigmoid, nn.Tanh, nn.LeakyReLU, nn.GELU, nn.MaxPool2d, nn.AvgPool2d,
         nn.AdaptiveAvgPool2d, nn.Identity, nn.Flatten)
#: leaves with a grouped form
_GROUPED = (nn.Conv2d, nn.Linear, nn.BatchNorm1d, nn.BatchNorm2d, nn.GroupNorm, nn.Dropout,
            nn.Unflatten, ImageInput)  # and SeededDropout (defined below)


def check_groupable(module: nn.Module) -> None:
    """Raise a one-line error naming the first layer without a grouped form (TypeError: a
    layer of another kind; ValueError: a layer whose settings have none)."""
    for name, m in module.named_modules():
        if next(m.children(), None) is not None:
            if getattr(m, "channelwise", True) is False:
                raise ValueError(f"model: {name or 'the module'} ({type(m).__name__}) declares "
                                 "a forward that does not act channel-wise")
            if any(True for _ in m.parameters(recurse=False)):
                raise ValueError(f"model: {name or 'the module'} ({type(m).__name__}) holds "
                                 "parameters of its own; allowed: layers with a grouped form")
            continue
        if not isinstance(m, _PASS + _GROUPED + (SeededDropout,)):
            raise TypeError(f"model: {name or 'the module'} ({type(m).__name__}) has no "
                             "grouped form; allowed: " + ", ".join(
                                 c.__name__ for c in _GROUPED + _PASS))
        if isinstance(m, nn.Unflatten) and m.dim != 1:
            raise ValueError(f"model: {name} unflattens dim {m.dim}; allowed: dim 1")


def groupable(module: nn.Module) -> bool:
    """Whether :class:`GroupedNet` can run K copies of ``module``."""
    try:
        check_groupable(module)
    except (TypeError, ValueError):
        return False
    return True


class StackedLinear(nn.Module):
    """K linear layers on (B, K·in) → (B, K·out): weight (K, out, in), bias (K, out)."""

    def __init__(self, k: int, in_features: int, out_features: int, bias: bool) -> None:
        super().__init__()
        self.k, self.in_features, self.out_features = k, in_features, out_features
        self.weight = nn.Parameter(torch.empty(k, out_features, in_features))
        self.bias = nn.Parameter(torch.empty(k, out_features)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        b = x.shape[0]
        xk = x.reshape(b, self.k, self.in_features).transpose(0, 1)  # (K, B, in)
        wt = self.weight.transpose(1, 2)
        y = torch.bmm(xk, wt) if self.bias is None else torch.baddbmm(self.bias.unsqueeze(1), xk, wt)
        return y.transpose(0, 1).reshape(b, self.k * self.out_features)


class SeededDropout(nn.Module):
    """Dropout whose masks come from ``generator(device)`` (a local stream, never the global
    RNG: concurrent runs stay reproducible). Identity in eval mode."""

    def __init__(self, p: float, generator: Callable[[torch.device], torch.Generator]) -> None:
        super().__init__()
        self.p = float(p)
        self.generator = generator

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = torch.rand(x.shape, generator=self.generator(x.device), device=x.device) >= self.p
        return x * keep.to(x.dtype) / (1.0 - self.p)


class _GroupedInput(nn.Module):
    """(B, K·C·H·W) rows → (B, K·C, H', W') channels_last, resized as ``ImageInput`` does."""

    def __init__(self, k: int, shape: tuple[int, int, int], out_hw: tuple[int, int]) -> None:
        super().__init__()
        self.k, self.shape, self.out_hw = k, shape, tuple(out_hw)

    def forward(self, x: Tensor) -> Tensor:
        c, h, w = self.shape
        z = x.reshape(x.shape[0], self.k * c, h, w)
        if (h, w) != self.out_hw:
            z = F.interpolate(z, size=self.out_hw, mode="bilinear", align_corners=False)
        return z.contiguous(memory_format=torch.channels_last)


class _GroupedUnflatten(nn.Module):
    def __init__(self, k: int, sizes: tuple[int, ...]) -> None:
        super().__init__()
        self.sizes = (k * int(sizes[0]), *(int(s) for s in sizes[1:]))

    def forward(self, x: Tensor) -> Tensor:
        z = x.reshape(x.shape[0], *self.sizes)
        return z.contiguous(memory_format=torch.channels_last) if z.dim() == 4 else z


def _grouped_leaf(m: nn.Module, k: int, track_running_stats: bool,
                  generator: Callable[[torch.device], torch.Generator] | None) -> nn.Module:
    if isinstance(m, nn.Conv2d):
        return nn.Conv2d(k * m.in_channels, k * m.out_channels, m.kernel_size, m.stride,
                         m.padding, m.dilation, k * m.groups, m.bias is not None,
                         m.padding_mode)
    if isinstance(m, nn.Linear):
        return StackedLinear(k, m.in_features, m.out_features, m.bias is not None)
    if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
        track = track_running_stats and m.track_running_stats
        bn = type(m)(k * m.num_features, m.eps, m.momentum, m.affine, track)
        bn.num_batches_tracked = None  # the momentum is set: the count is never read
        return bn
    if isinstance(m, nn.GroupNorm):
        return nn.GroupNorm(k * m.num_groups, k * m.num_channels, m.eps, m.affine)
    if isinstance(m, SeededDropout):
        return SeededDropout(m.p, generator or m.generator)
    if isinstance(m, nn.Dropout):
        if generator is None:
            raise ValueError("model: dropout needs a generator; allowed: modules without "
                             "dropout, or a generator for its masks")
        return SeededDropout(m.p, generator)
    if isinstance(m, nn.Unflatten):
        return _GroupedUnflatten(k, tuple(m.unflattened_size))
    if isinstance(m, ImageInput):
        return _GroupedInput(k, m.shape, m.out_hw)
    return copy.deepcopy(m)


def _convert(module: nn.Module, k: int, track: bool, generator) -> nn.Module:
    """The K-fold grouped copy of ``module`` (on the meta device: its own tensors are never
    used, :class:`GroupedNet` passes every parameter and buffer)."""
    if next(module.children(), None) is None:
        return _grouped_leaf(module, k, track, generator)
    out = copy.copy(module)
    out._modules = {n: _convert(c, k, track, generator) for n, c in module._modules.items()}
    out._parameters = {}
    out._buffers = {}
    return out


#: per-name reshape of a stacked (K, ...) tensor into the grouped layer's own shape
_MERGE_K = (nn.Conv2d, nn.BatchNorm1d, nn.BatchNorm2d, nn.GroupNorm)


class GroupedNet:
    """K copies of ``template`` as one grouped network (module docstring).

    ``net(params, buffers, x)``: ``params`` / ``buffers`` name → (K, *shape) (the template's
    names; buffers may be a subset: BatchNorm running statistics, updated in place in
    training mode, ``num_batches_tracked`` counted), ``x`` (K, B, *in_shape) → (K, B, F)
    (each copy's output flattened). The copy count K is read from ``x``; grouped modules are
    built once per K. ``track_running_stats=False`` makes every BatchNorm use batch
    statistics only (no buffers needed). ``generator(device)``: the dropout masks' stream."""

    def __init__(self, template: nn.Module, *, track_running_stats: bool = True,
                 generator: Callable[[torch.device], torch.Generator] | None = None) -> None:
        check_groupable(template)
        self.template = template
        self.track = bool(track_running_stats)
        self.generator = generator
        owners = {}
        for mname, m in template.named_modules():
            for pname, _ in (*m.named_parameters(recurse=False), *m.named_buffers(recurse=False)):
                owners[f"{mname}.{pname}" if mname else pname] = m
        self._merge = {n for n, m in owners.items() if isinstance(m, _MERGE_K)}
        self._modules: dict[int, nn.Module] = {}

    def module(self, k: int) -> nn.Module:
        """The grouped module of k copies (built once)."""
        if k not in self._modules:
            with torch.device("meta"):
                g = _convert(self.template, k, self.track, self.generator)
            g.train(self.template.training)
            self._modules[k] = g
        return self._modules[k]

    def train(self, mode: bool = True) -> GroupedNet:
        self.template.train(mode)
        for g in self._modules.values():
            g.train(mode)
        return self

    def _view(self, name: str, v: Tensor) -> Tensor:
        return v.reshape(-1, *v.shape[2:]) if name in self._merge else v

    def __call__(self, params: dict[str, Tensor], buffers: dict[str, Tensor], x: Tensor) -> Tensor:
        k, b = int(x.shape[0]), int(x.shape[1])
        g = self.module(k)
        state = {n: self._view(n, v) for n, v in params.items()}
        if self.track:
            state.update({n: self._view(n, v) for n, v in buffers.items()
                          if not n.endswith("num_batches_tracked")})
        xg = x.transpose(0, 1).reshape(b, k * x.shape[2], *x.shape[3:])
        out = functional_call(g, state, (xg,), strict=False)
        if self.track and g.training:  # BatchNorm's batch count, per copy, as it keeps it
            with torch.no_grad():
                for n, v in buffers.items():
                    if n.endswith("num_batches_tracked"):
                        v.add_(1)
        return out.reshape(b, k, -1).transpose(0, 1)
