"""Pieces every registered architecture shares: the input adapter (flat rows → images, the
declared resize), width scaling and seeded initialisation rules.

Every network here takes the rows a :class:`core.data.Dataset` holds, flat (n, C·H·W), or
images (n, C, H, W). A network that needs a larger input than the data's declares it: the
:class:`ImageInput` in front of it resizes bilinearly (``F.interpolate``), which is linear in
the pixels, so vmap and double backprop are unaffected.

Initialisation: each family's own rule (torchvision's ResNet, VGG's, PyTorch's defaults), run
in ``__init__`` from the global RNG and again from a local generator by
:func:`core.models.nn.seeded` through the ``seeded_init_`` method (the dashboard trains in concurrent
threads, where ``torch.manual_seed`` would race).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Resize = Literal["never", "smaller", "always"]
InitRule = Literal["default", "torchvision", "vgg"]


def scaled(channels: int, width: float) -> int:
    """``channels`` × ``width``, rounded, at least 1 (a narrower copy of the same family)."""
    return max(1, round(channels * float(width)))


def resized_side(shape: tuple[int, int, int], side: int | None, resize: Resize) -> tuple[int, int]:
    """(H, W) the network sees for data of ``shape`` = (C, H, W) under the declared resize."""
    _, h, w = shape
    if side is None or resize == "never":
        return h, w
    if resize == "always":
        return side, side
    return max(h, side), max(w, side)


class ImageInput(nn.Module):
    """Flat rows (n, C·H·W) or images → images (n, C, H', W'), bilinearly resized to the side
    the network declares (``resize``: "never", "smaller" (only a side below ``side`` grows to
    it), "always" (to ``side`` × ``side``)). No parameters."""

    def __init__(self, shape: tuple[int, int, int], side: int | None = None,
                 resize: Resize = "never") -> None:
        super().__init__()
        self.shape = tuple(int(s) for s in shape)
        self.out_hw = resized_side(self.shape, side, resize)

    def forward(self, x: Tensor) -> Tensor:
        z = x.reshape(-1, *self.shape)
        if tuple(z.shape[-2:]) != self.out_hw:
            z = F.interpolate(z, size=self.out_hw, mode="bilinear", align_corners=False)
        return z


class Adapted(nn.Module):
    """``net(input(x))``: a network behind its :class:`ImageInput`."""

    def __init__(self, input: ImageInput, net: nn.Module) -> None:
        super().__init__()
        self.input = input
        self.net = net

    def forward(self, x: Tensor) -> Tensor:
        return self.net(self.input(x))


def _empty(like: Tensor) -> Tensor:
    """A CPU tensor of ``like``'s shape and dtype to draw into (generators are CPU ones)."""
    return torch.empty(like.shape, dtype=like.dtype, device="meta" if like.is_meta else "cpu")


@torch.no_grad()
def init_tree_(module: nn.Module, generator: torch.Generator | None, rule: InitRule) -> None:
    """Initialise every layer under ``module`` in ``modules()`` order, drawing on the CPU from
    ``generator`` (the global RNG when None) and copying to the layer's device:

    - ``"default"``: PyTorch's ``reset_parameters`` of Conv/Linear (kaiming-uniform a = √5,
      bias U(±1/√fan_in));
    - ``"torchvision"``: torchvision's ResNet rule (conv: kaiming-normal, fan_out, ReLU gain;
      Linear: PyTorch's default);
    - ``"vgg"``: torchvision's VGG rule (conv: kaiming-normal fan_out, bias 0; Linear:
      N(0, 0.01²), bias 0), which TAPPFL's networks use too.

    Normalisation layers get weight 1, bias 0 and fresh running statistics under every rule.
    Another layer holding parameters is a TypeError naming it."""
    g = generator
    for name, m in module.named_modules():
        own = dict(m.named_parameters(recurse=False))
        if isinstance(m, nn.modules.batchnorm._NormBase | nn.GroupNorm | nn.LayerNorm):
            if getattr(m, "weight", None) is not None:
                m.weight.fill_(1.0)
                m.bias.zero_()
            if getattr(m, "running_mean", None) is not None:
                m.reset_running_stats()
            continue
        if not own:
            continue
        if not isinstance(m, nn.Conv2d | nn.Linear):
            raise TypeError(f"init_tree_: no initialisation for {name or 'the module'} "
                            f"({type(m).__name__})")
        conv = isinstance(m, nn.Conv2d)
        w = _empty(m.weight)
        if rule == "default" or (rule == "torchvision" and not conv):
            nn.init.kaiming_uniform_(w, a=math.sqrt(5), generator=g)
            if m.bias is not None:
                fan_in, _ = nn.init._calculate_fan_in_and_fan_out(w)
                bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
                m.bias.copy_(nn.init.uniform_(_empty(m.bias), -bound, bound, generator=g))
        else:
            if conv:
                nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu", generator=g)
            else:  # VGG's linear layers
                nn.init.normal_(w, 0.0, 0.01, generator=g)
            if m.bias is not None:
                m.bias.zero_()
        m.weight.copy_(w)


class SeededInit(nn.Module):
    """A network with its family's initialisation rule (:data:`init_rule`), applied in
    ``__init__`` (:meth:`reset`) and by :func:`core.models.nn.seeded` (``seeded_init_``)."""

    init_rule: InitRule = "default"

    def reset(self) -> None:
        self.seeded_init_(None)

    def seeded_init_(self, generator: torch.Generator | None) -> SeededInit:
        init_tree_(self, generator, self.init_rule)
        return self


def has_conv(module: nn.Module) -> bool:
    """True when ``module`` holds a convolution (K such models stacked run as one grouped
    convolution, which pays on a GPU and not on a CPU)."""
    return any(isinstance(m, nn.modules.conv._ConvNd) for m in module.modules())
