"""Architecture ``lenet5``: LeNet-5 of the seed-001 paper's Table 2 (spec 001 §5.3): 62,006
parameters for RGB 32×32 and 10 classes, 61,706 for one channel. Every image is resized to
32×32 (bilinear) in front of it, as the paper resized every data set. Its ``encoder`` is the network up to the 84-unit
penultimate layer (r = 84·width)."""

from __future__ import annotations

from core.foundation.parts import ARCHITECTURES, ArchitecturePart


def build(shape, n_classes, *, width, role):
    from core.models.lenet import LeNet5

    net = LeNet5(tuple(shape), n_classes, width=width)
    if role == "encoder":
        # the representation is the 84-unit penultimate layer: the classifier less its last
        # linear layer (what the representation runners aggregate, perturb and attack)
        net.classifier = net.classifier[:-1]
    return net


ARCHITECTURES.register("lenet5", ArchitecturePart(
    name="lenet5", title="LeNet-5", builder=f"{__name__}:build", side=32, resize="always",
    adapt=False, order=20, roles=("classifier", "encoder"),
    paper_params=(("classifier", 62_006),),
    source="spec 001 §5.3 (paper Table 2: 6.20×10^4 parameters)",
    description="conv 6@5×5 → pool → conv 16@5×5 → pool → FC 400-120-84-classes, ReLU."))
