"""Architecture ``wrn28_2``: Wide ResNet 28-2, the default architecture of the LiRA reference
code (Carlini et al. 2022). Width 0.5 is WRN-28-1. Images below 32×32 are resized up to 32."""

from __future__ import annotations

from core.foundation.parts import ARCHITECTURES, ArchitecturePart


def build(shape, n_classes, *, width, role):
    from core.models.wrn import WideResNet

    return WideResNet(shape[0], n_classes, width)


ARCHITECTURES.register("wrn28_2", ArchitecturePart(
    name="wrn28_2", title="Wide ResNet 28-2", builder=f"{__name__}:build", side=32,
    resize="smaller", cpu_width=0.5, order=50,
    source="Zagoruyko & Komodakis 2016; LiRA (Carlini et al. 2022) reference code's wrn28-2",
    description="Pre-activation wide BasicBlocks, 4 per group of 32-64-128 channels, "
                "global average pool, linear."))
