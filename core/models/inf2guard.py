"""Inf2Guard's CIFAR-10 networks (spec 004 §5.3; paper Tables 12, 14, 15).

**Membership (Table 12)**, ResNet-18 pieces (torchvision's ``BasicBlock`` and ``ResNet``
stages, 3×3 stem with BN, ReLU and the 3×3 stride-2 max-pool):

- encoder: stem → layer1 → layer2 → layer3 → layer4[0]: 6,448,192 parameters, the
  6,448,192-parameter encoder of Table 15 (the table's "CustomBlocks" grow it, its smallest
  encoder drops one block of layer1-3); output 512 × 2 × 2 for a 32×32 image;
- membership network: layer4[1] (a 512-channel BasicBlock) → average pool → Linear(512, 1), a
  membership logit: 4,721,153 parameters (Table 15, "Pri/Atk"; Table 12's "Linear-2" does
  not match that count, the count is kept);
- utility network: the same trunk → Linear(512, classes): 4,725,770 for 10 classes (Table 15).

**Reconstruction (Table 14)**: the shallow encoder is two 3×3 stride-1 convolutions of 32
channels, each with BN and no ReLU (r = 32 × H × W); the reconstruction adversary's decoder,
which the paper does not give, mirrors it: 3×3 conv 32 → BN → ReLU → 3×3 conv to C channels →
sigmoid (pixels in [0, 1]), flat rows out like the data; the utility network is Table 14's:
conv-64&BN → max-pool 2 (the authors' code has it; without it the flatten would be
64·H·W wide) → conv-128&BN, ReLU → 3 × [conv-128&BN, ReLU] → conv-64&BN, ReLU → flatten →
Linear-1024&BN, ReLU → Linear-64&BN, ReLU → Linear-classes.

``width`` scales every channel and hidden width. Initialisation: torchvision's ResNet rule for
the membership networks, PyTorch's defaults for the reconstruction networks (the authors' code
leaves them at the defaults).
"""

from __future__ import annotations

from torch import Tensor, nn
from torchvision.models.resnet import BasicBlock

from core.models.common import SeededInit, scaled
from core.models.resnet import CifarResNet


class MiaEncoder(SeededInit):
    """ResNet-18 up to layer4[0] with a 3×3 stem and max-pool (Table 12's encoder)."""

    init_rule = "torchvision"

    def __init__(self, in_channels: int, width: float = 1.0) -> None:
        super().__init__()
        net = CifarResNet([2, 2, 2, 2], in_channels, 2, width, maxpool=True)
        self.stem = nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool)
        self.layer1, self.layer2, self.layer3 = net.layer1, net.layer2, net.layer3
        self.layer4 = net.layer4[0]
        self.out_channels = net.stage_widths[3]
        self.reset()

    def forward(self, x: Tensor) -> Tensor:
        return self.layer4(self.layer3(self.layer2(self.layer1(self.stem(x)))))


class MiaHead(SeededInit):
    """layer4[1] of ResNet-18 → global average pool → Linear(channels, ``n_out``): the
    membership (``n_out`` = 1) and utility networks on the encoder's feature map."""

    init_rule = "torchvision"

    def __init__(self, channels: int, n_out: int) -> None:
        super().__init__()
        self.block = BasicBlock(channels, channels)
        self.fc = nn.Linear(channels, n_out)
        self.reset()

    def forward(self, r: Tensor) -> Tensor:
        return self.fc(self.block(r).mean((2, 3)))


def _conv_bn(cin: int, cout: int, relu: bool = False) -> list[nn.Module]:
    mods: list[nn.Module] = [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout)]
    return mods + [nn.ReLU()] if relu else mods


class DraEncoder(SeededInit):
    """Two 3×3 convolutions of 32 × ``width`` channels with BN, no ReLU (Table 14)."""

    def __init__(self, in_channels: int, width: float = 1.0) -> None:
        super().__init__()
        c = scaled(32, width)
        self.out_channels = c
        self.net = nn.Sequential(*_conv_bn(in_channels, c), *_conv_bn(c, c))
        self.reset()

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class DraDecoder(SeededInit):
    """The reconstruction adversary: r (c × H × W) → flat pixels (n, C·H·W) in [0, 1]."""

    def __init__(self, rep_channels: int, out_channels: int, width: float = 1.0) -> None:
        super().__init__()
        c = scaled(32, width)
        self.net = nn.Sequential(*_conv_bn(rep_channels, c, relu=True),
                                 nn.Conv2d(c, out_channels, 3, padding=1), nn.Sigmoid())

    def forward(self, r: Tensor) -> Tensor:
        return self.net(r).flatten(1)


class DraUtility(SeededInit):
    """Table 14's utility network on r (``rep_channels`` × H × W)."""

    def __init__(self, rep_channels: int, hw: tuple[int, int], n_classes: int,
                 width: float = 1.0) -> None:
        super().__init__()
        c64, c128, h1024, h64 = (scaled(v, width) for v in (64, 128, 1024, 64))
        convs = [*_conv_bn(rep_channels, c64), nn.MaxPool2d(2), *_conv_bn(c64, c128, relu=True)]
        for _ in range(3):
            convs += _conv_bn(c128, c128, relu=True)
        convs += _conv_bn(c128, c64, relu=True)
        self.convs = nn.Sequential(*convs)
        flat = c64 * (hw[0] // 2) * (hw[1] // 2)
        self.fc = nn.Sequential(nn.Linear(flat, h1024), nn.BatchNorm1d(h1024), nn.ReLU(),
                                nn.Linear(h1024, h64), nn.BatchNorm1d(h64), nn.ReLU(),
                                nn.Linear(h64, n_classes))
        self.reset()

    def forward(self, r: Tensor) -> Tensor:
        return self.fc(self.convs(r).flatten(1))
