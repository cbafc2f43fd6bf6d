"""Architecture ``resnet10``: torchvision's ResNet with BasicBlocks [1, 1, 1, 1] and the CIFAR
stem (3×3 stride-1 convolution, no max-pool): 4,903,242 parameters for 10 classes (spec 001
§5.3, paper Table 2: 4.90×10^6). Images below 32×32 are resized up to 32 (bilinear)."""

from __future__ import annotations

from core.foundation.parts import ARCHITECTURES, ArchitecturePart


def build(shape, n_classes, *, width, role):
    from core.models.resnet import resnet10

    return resnet10(shape[0], n_classes, width)


ARCHITECTURES.register("resnet10", ArchitecturePart(
    name="resnet10", title="ResNet-10", builder=f"{__name__}:build", side=32,
    resize="smaller", cpu_width=0.25, order=30, paper_params=(("classifier", 4_903_242),),
    source="spec 001 §5.3 (paper Table 2: 4.90×10^6 parameters)",
    description="BasicBlocks [1,1,1,1] of 64-128-256-512 channels, CIFAR stem, FC 512 → classes."))
