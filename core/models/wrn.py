"""Wide ResNet WRN-28-2 (Zagoruyko & Komodakis 2016), the default architecture of the LiRA
reference code (Carlini et al. 2022, ``wrn28-2``).

Pre-activation BasicBlocks (BN → ReLU → 3×3 conv → BN → ReLU → 3×3 conv, plus the input, or a
1×1 projection of the pre-activated input where the shape changes), depth 28 = 6·4 + 4: a 3×3
stem of 16 channels, three groups of 4 blocks of 16·k, 32·k, 64·k channels (k = 2, strides 1,
2, 2), then BN → ReLU → global average pool → linear. Convolutions carry no bias. ``width``
scales every channel count (width 0.5 is WRN-28-1). Initialisation: torchvision's ResNet rule
(kaiming-normal fan_out convolutions, PyTorch's default linear layer).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from core.models.common import SeededInit, scaled

DEPTH = 28
WIDEN = 2


class WideBlock(nn.Module):
    """One pre-activation wide-ResNet block."""

    def __init__(self, nin: int, nout: int, stride: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(nin)
        self.conv1 = nn.Conv2d(nin, nout, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(nout)
        self.conv2 = nn.Conv2d(nout, nout, 3, stride=1, padding=1, bias=False)
        self.proj = (nn.Conv2d(nin, nout, 1, stride=stride, bias=False)
                     if nin != nout or stride != 1 else None)

    def forward(self, x: Tensor) -> Tensor:
        o1 = F.relu(self.bn1(x))
        z = self.conv2(F.relu(self.bn2(self.conv1(o1))))
        return z + (self.proj(o1) if self.proj is not None else x)


class WideResNet(SeededInit):
    """WRN-``depth``-``widen`` on ``in_channels`` images, channel counts × ``width``."""

    init_rule = "torchvision"

    def __init__(self, in_channels: int, n_classes: int, width: float = 1.0,
                 depth: int = DEPTH, widen: int = WIDEN) -> None:
        super().__init__()
        n = (depth - 4) // 6
        widths = [scaled(16, width)] + [scaled(c * widen, width) for c in (16, 32, 64)]
        self.stem = nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=False)
        blocks: list[nn.Module] = []
        nin = widths[0]
        for g, stride in zip(range(3), (1, 2, 2)):
            for i in range(n):
                blocks.append(WideBlock(nin, widths[g + 1], stride if i == 0 else 1))
                nin = widths[g + 1]
        self.blocks = nn.Sequential(*blocks)
        self.bn = nn.BatchNorm2d(nin)
        self.fc = nn.Linear(nin, n_classes)
        self.reset()

    def forward(self, x: Tensor) -> Tensor:
        z = F.relu(self.bn(self.blocks(self.stem(x))))
        return self.fc(F.adaptive_avg_pool2d(z, 1).flatten(1))
