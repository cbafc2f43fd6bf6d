"""LeNet-5 as in the seed-001 paper's Table 2 (spec 001 §5.3), with a width multiplier.

conv 6@5×5 → max-pool 2 → conv 16@5×5 → max-pool 2 → FC 400 → 120 → 84 → classes, ReLU:
62,006 parameters for RGB 32×32 and 10 classes, 61,706 for one channel. Every input is resized
to 32×32 (bilinear) in front of it, as the paper resized every data set, so 8×8 digits and
25×25 faces run as is and the layer sizes do not depend on the data. At width 1 it is
:class:`core.models.nn.LeNet5` (same layers, names and initialisation); ``width`` scales the channels
(6, 16) and hidden units (120, 84).
"""

from __future__ import annotations

from torch import Tensor, nn

from core.models.common import ImageInput, SeededInit, scaled

SIDE = 32


class LeNet5(SeededInit):
    """LeNet-5 on (C, H, W) inputs of any size (resized to 32×32), ``width`` × its widths.
    PyTorch's default initialisation."""

    init_rule = "default"

    def __init__(self, image_shape: tuple[int, int, int], n_classes: int,
                 width: float = 1.0) -> None:
        super().__init__()
        c = int(image_shape[0])
        c1, c2, h1, h2 = (scaled(v, width) for v in (6, 16, 120, 84))
        self.input = ImageInput(tuple(image_shape), SIDE, "always")
        self.features = nn.Sequential(
            nn.Conv2d(c, c1, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 5), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(c2 * 5 * 5, h1), nn.ReLU(), nn.Linear(h1, h2), nn.ReLU(),
            nn.Linear(h2, n_classes))
        self.reset()

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.features(self.input(x)).flatten(1))
