"""TAPPFL's CIFAR-10 networks (spec 003, Appendix B / Table 3; every conv3 is 3×3 with BN and
ReLU as in the authors' code).

- feature extractor f(x; Θ): 2 × conv3-64, max-pool, 2 × conv3-128, max-pool: r is
  128 × 8 × 8 for a 32×32 image;
- privacy network q_Ψ(u | r), VGG-style: 3 × conv3-256, max-pool, 3 × conv3-512, max-pool,
  3 × conv3-512, max-pool, 2 × linear-4096 (ReLU, dropout 0.5), linear to the private
  attribute's values.

The task classifier (what a membership study trains) is the feature extractor followed by a
head of the privacy network's shape with the task's classes: the paper scores utility with a
separately trained head on r and gives no other architecture for it. ``width`` scales every
channel and hidden width. Inputs below 32×32 are resized up (five max-pools need 32).
Initialisation: VGG's rule (:func:`core.models.common.init_tree_` "vgg"), as in the paper's code.
"""

from __future__ import annotations

from torch import Tensor, nn

from core.models.common import SeededInit, scaled


def _conv(cin: int, cout: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]


class TappflExtractor(SeededInit):
    init_rule = "vgg"

    def __init__(self, in_channels: int, width: float = 1.0) -> None:
        super().__init__()
        c64, c128 = scaled(64, width), scaled(128, width)
        self.out_channels = c128
        self.convnet = nn.Sequential(*_conv(in_channels, c64), *_conv(c64, c64), nn.MaxPool2d(2),
                                     *_conv(c64, c128), *_conv(c128, c128), nn.MaxPool2d(2))
        self.reset()

    def forward(self, x: Tensor) -> Tensor:
        return self.convnet(x)


class TappflPrivacy(SeededInit):
    """The VGG-style network on r (``rep_channels`` × H × W) → ``n_out`` logits."""

    init_rule = "vgg"

    def __init__(self, rep_channels: int, hw: tuple[int, int], n_out: int,
                 width: float = 1.0) -> None:
        super().__init__()
        c256, c512, h = scaled(256, width), scaled(512, width), scaled(4096, width)
        layers: list[nn.Module] = []
        cin = rep_channels
        for cout in (c256, c512, c512):
            for _ in range(3):
                layers += _conv(cin, cout)
                cin = cout
            layers.append(nn.MaxPool2d(2))
        self.convnet = nn.Sequential(*layers)
        flat = c512 * (hw[0] // 8) * (hw[1] // 8)
        self.fcnet = nn.Sequential(nn.Linear(flat, h), nn.ReLU(inplace=True), nn.Dropout(),
                                   nn.Linear(h, h), nn.ReLU(inplace=True), nn.Dropout(),
                                   nn.Linear(h, n_out))
        self.reset()

    def forward(self, r: Tensor) -> Tensor:
        return self.fcnet(self.convnet(r).flatten(1))
