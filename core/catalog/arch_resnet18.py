"""Architecture ``resnet18``: torchvision's ResNet-18 (BasicBlocks [2, 2, 2, 2]) with the CIFAR
stem (3×3 stride-1 convolution, no max-pool): 11,173,962 parameters for 10 classes. Images
below 32×32 are resized up to 32 (bilinear)."""

from __future__ import annotations

from core.foundation.parts import ARCHITECTURES, ArchitecturePart


def build(shape, n_classes, *, width, role):
    from core.models.resnet import resnet18

    return resnet18(shape[0], n_classes, width)


ARCHITECTURES.register("resnet18", ArchitecturePart(
    name="resnet18", title="ResNet-18", builder=f"{__name__}:build", side=32,
    resize="smaller", cpu_width=0.25, order=40, paper_params=(("classifier", 11_173_962),),
    source="He et al. 2016 with the CIFAR stem (torchvision.models.resnet.ResNet)",
    description="BasicBlocks [2,2,2,2] of 64-128-256-512 channels, CIFAR stem, FC 512 → classes."))
