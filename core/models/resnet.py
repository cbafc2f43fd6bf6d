"""ResNet-10 and ResNet-18 with the CIFAR stem, built from torchvision's ``ResNet`` class.

The CIFAR stem (He et al. 2016 §4.2, and every CIFAR ResNet since) replaces ImageNet's 7×7
stride-2 convolution and 3×3 max-pool by one 3×3 stride-1 convolution and no pooling, so a
32×32 image reaches the last stage at 4×4. BasicBlocks [2, 2, 2, 2] give ResNet-18
(11,173,962 parameters for 10 classes) and [1, 1, 1, 1] ResNet-10 (spec 001 §5.3: 4,903,242).

``width`` scales every stage (64-128-256-512 × width) for a narrower CPU copy of the same
family; torchvision's ``_make_layer`` builds the stages, so the blocks, shortcuts and forward
are torchvision's own. Initialisation: torchvision's rule (:func:`init_tree_` "torchvision").
"""

from __future__ import annotations

import torch
from torch import nn
from torchvision.models.resnet import BasicBlock, ResNet

from core.models.common import InitRule, init_tree_, scaled

#: ResNet-18's stage widths at width 1
STAGES = (64, 128, 256, 512)


class CifarResNet(ResNet):
    """torchvision's ResNet with BasicBlocks ``layers``, ``in_channels`` input channels, the
    CIFAR stem (``maxpool=False``) or the ImageNet 3×3 max-pool after a 3×3 stem
    (``maxpool=True``: Inf2Guard's encoder, Table 12), stage widths ``STAGES`` × ``width``."""

    init_rule: InitRule = "torchvision"

    def __init__(self, layers: list[int], in_channels: int, n_classes: int,
                 width: float = 1.0, maxpool: bool = False) -> None:
        # torchvision hard-codes the stage widths; its own modules are built on the meta
        # device (no memory, no init) and every layer is rebuilt below at this width
        with torch.device("meta"):
            super().__init__(BasicBlock, list(layers), num_classes=n_classes)
        w = [scaled(c, width) for c in STAGES]
        self.stage_widths = tuple(w)
        self.inplanes = w[0]
        self.conv1 = nn.Conv2d(in_channels, w[0], kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(w[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1) if maxpool else nn.Identity()
        self.layer1 = self._make_layer(BasicBlock, w[0], layers[0])
        self.layer2 = self._make_layer(BasicBlock, w[1], layers[1], stride=2)
        self.layer3 = self._make_layer(BasicBlock, w[2], layers[2], stride=2)
        self.layer4 = self._make_layer(BasicBlock, w[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(w[3], n_classes)
        self.seeded_init_(None)

    def seeded_init_(self, generator: torch.Generator | None) -> CifarResNet:
        init_tree_(self, generator, self.init_rule)
        return self


def resnet10(in_channels: int, n_classes: int, width: float = 1.0) -> CifarResNet:
    return CifarResNet([1, 1, 1, 1], in_channels, n_classes, width)


def resnet18(in_channels: int, n_classes: int, width: float = 1.0) -> CifarResNet:
    return CifarResNet([2, 2, 2, 2], in_channels, n_classes, width)
