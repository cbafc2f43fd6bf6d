"""The wrapper every registered model (:mod:`core.models.user`) runs behind: the rows a data set
holds (flat (n, C·H·W), or images) reshaped to the factory's input shape, and a seeded
initialisation from a local generator (:func:`core.models.nn.init_module_`'s contract: the
dashboard trains in concurrent threads, where the global RNG would race)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from core.models.nn import INIT_LAYERS, init_module_

#: layers whose own ``reset_parameters`` draws nothing at random (ones, zeros, running stats)
NORM_LAYERS: tuple[type[nn.Module], ...] = (
    nn.modules.batchnorm._NormBase, nn.GroupNorm, nn.LayerNorm)


class UserNet(nn.Module):
    """``net(x.reshape(-1, *in_shape))``. ``groupnorm``: BatchNorm replaced by GroupNorm
    (``opacus.validators.ModuleValidator.fix``) under every defense, the registration's
    option, so that a comparison of DP-SGD with the others trains one network.
    ``channelwise = False``: the user's forward is unknown to privlab, so K copies train
    through ``vmap`` (:func:`core.models.stacked.check_groupable`), never as one grouped
    network."""

    channelwise = False

    def __init__(self, net: nn.Module, in_shape: tuple[int, ...], *, groupnorm: bool = False) -> None:
        super().__init__()
        if not isinstance(net, nn.Module):
            raise TypeError(f"the factory returned {type(net).__name__}, not a torch.nn.Module")
        if groupnorm:
            from opacus.validators import ModuleValidator

            if ModuleValidator.validate(net, strict=False):
                net = ModuleValidator.fix(net)
        self.in_shape = tuple(int(s) for s in in_shape)
        self.net = net

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x.reshape(-1, *self.in_shape))

    @torch.no_grad()
    def seeded_init_(self, generator: torch.Generator | None) -> UserNet:
        """Every layer in ``modules()`` order: linear and convolution layers by PyTorch's
        default rule from ``generator`` (:func:`init_module_`), normalisation layers reset
        (deterministic), embeddings ~ N(0, 1); any other layer holding parameters is a
        TypeError naming it (the registration's determinism check reports it)."""
        gen = generator if generator is not None else torch.default_generator
        for name, m in self.net.named_modules():
            own = dict(m.named_parameters(recurse=False))
            if not own:
                continue
            if isinstance(m, INIT_LAYERS):
                init_module_(m, gen)
            elif isinstance(m, NORM_LAYERS):
                m.reset_parameters()
            elif isinstance(m, nn.Embedding):
                w = torch.empty(m.weight.shape, dtype=m.weight.dtype).normal_(generator=gen)
                m.weight.copy_(w)
            else:
                raise TypeError(f"no seeded initialisation for layer {name or 'net'} "
                                f"({type(m).__name__}); supported: "
                                f"{', '.join(t.__name__ for t in INIT_LAYERS)}, BatchNorm, "
                                "GroupNorm, LayerNorm, Embedding")
        return self
