"""Architecture ``mlp``: today's small MLP on flattened inputs (:class:`core.models.nn.ImageMLP`:
C·H·W → 64 sigmoid units → classes), the model every membership run has trained so far and
the one tabular data keep. ``width`` scales the 64 hidden units; at width 1 it is exactly
``core.models.nn.image_classifier("mlp", ...)`` (same parameters and initialisation for a seed).
"""

from __future__ import annotations

from core.foundation.parts import ARCHITECTURES, ArchitecturePart

HIDDEN = 64


def build(shape, n_classes, *, width, role):
    from core.models.common import scaled
    from core.models.nn import ImageMLP

    return ImageMLP(tuple(shape), n_classes, hidden=scaled(HIDDEN, width))


ARCHITECTURES.register("mlp", ArchitecturePart(
    name="mlp", title="MLP (64 sigmoid units)", builder=f"{__name__}:build",
    inputs=("image", "tabular"), channels=None, adapt=False, order=10,
    reference=((1, 8, 8), 10), source="privlab's default (core.models.nn.ImageMLP)",
    description="Flattened input → 64 sigmoid hidden units → classes; tabular rows and images."))
