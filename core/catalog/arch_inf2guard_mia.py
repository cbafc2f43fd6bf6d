"""Architecture ``inf2guard_mia``: Inf2Guard's CIFAR-10 membership networks from ResNet-18
pieces (spec 004 §5.3, paper Tables 12 and 15): the encoder (ResNet-18 to layer4[0], 6,448,192
parameters), the membership network and the utility network (layer4[1] → pool → linear:
4,721,153 and 4,725,770 parameters). ``classifier`` is encoder + utility network, the task
classifier. Images below 32×32 are resized up to 32."""

from __future__ import annotations

from core.foundation.parts import ARCHITECTURES, ArchitecturePart


def build(shape, n_classes, *, width, role):
    from torch import nn

    from core.models.inf2guard import MiaEncoder, MiaHead

    enc = MiaEncoder(shape[0], width)
    if role == "encoder":
        return enc
    if role == "membership":
        return MiaHead(enc.out_channels, 1)
    head = MiaHead(enc.out_channels, n_classes)
    return head if role == "utility" else nn.Sequential(enc, head)


ARCHITECTURES.register("inf2guard_mia", ArchitecturePart(
    name="inf2guard_mia", title="Inf2Guard MIA (ResNet-18 pieces)", builder=f"{__name__}:build",
    side=32, resize="smaller", cpu_width=0.25, order=60,
    roles=("classifier", "encoder", "membership", "utility"),
    paper_params=(("encoder", 6_448_192), ("membership", 4_721_153), ("utility", 4_725_770)),
    source="spec 004 §5.3; Inf2Guard Tables 12 and 15",
    description="Encoder: 3×3 stem, BN, ReLU, max-pool, ResNet-18 layer1-3 and layer4[0]; "
                "membership / utility: layer4[1], average pool, Linear(512 → 1 / classes)."))
