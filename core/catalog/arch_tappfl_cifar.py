"""Architecture ``tappfl_cifar``: TAPPFL's CIFAR-10 feature extractor and VGG-style privacy
network (spec 003, Appendix B / Table 3). ``classifier`` is the extractor followed by a head
of the privacy network's shape with the task's classes (the paper scores utility with a
separately trained head and gives no other architecture for it); ``privacy`` predicts the
private attribute's values (its ``n_classes``). Images below 32×32 are resized up to 32."""

from __future__ import annotations

from core.foundation.parts import ARCHITECTURES, ArchitecturePart


def build(shape, n_classes, *, width, role):
    from torch import nn

    from core.models.tappfl import TappflExtractor, TappflPrivacy

    enc = TappflExtractor(shape[0], width)
    if role == "encoder":
        return enc
    hw = (shape[1] // 4, shape[2] // 4)
    head = TappflPrivacy(enc.out_channels, hw, n_classes, width)
    return head if role == "privacy" else nn.Sequential(enc, head)


ARCHITECTURES.register("tappfl_cifar", ArchitecturePart(
    name="tappfl_cifar", title="TAPPFL CIFAR-10 (extractor + VGG-style privacy net)",
    builder=f"{__name__}:build", side=32, resize="smaller", cpu_width=0.25, order=80,
    roles=("classifier", "encoder", "privacy"),
    source="spec 003 Appendix B (TAPPFL Table 3)",
    description="Extractor: 2 × conv3-64, pool, 2 × conv3-128, pool (BN, ReLU); privacy: "
                "3 × conv3-256, pool, 2 × (3 × conv3-512, pool), 2 × linear-4096 with dropout."))
