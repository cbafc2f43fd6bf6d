"""Architecture ``inf2guard_dra``: Inf2Guard's CIFAR reconstruction networks (spec 004 §5.3,
paper Table 14): the shallow 2-conv encoder (r = 32 × H × W), a conv decoder (the
reconstruction adversary, a mirror of the encoder: the paper gives none) and Table 14's
utility network. ``classifier`` is encoder + utility network. Images keep their size (the
decoder reconstructs the data's own pixels)."""

from __future__ import annotations

from core.foundation.parts import ARCHITECTURES, ArchitecturePart


def build(shape, n_classes, *, width, role):
    from torch import nn

    from core.models.inf2guard import DraDecoder, DraEncoder, DraUtility

    enc = DraEncoder(shape[0], width)
    if role == "encoder":
        return enc
    if role == "decoder":
        return DraDecoder(enc.out_channels, shape[0], width)
    util = DraUtility(enc.out_channels, tuple(shape[1:]), n_classes, width)
    return util if role == "utility" else nn.Sequential(enc, util)


ARCHITECTURES.register("inf2guard_dra", ArchitecturePart(
    name="inf2guard_dra", title="Inf2Guard DRA (2-conv encoder, conv decoder)",
    builder=f"{__name__}:build", side=None, resize="never", cpu_width=0.25, order=70,
    roles=("classifier", "encoder", "decoder", "utility"),
    source="spec 004 §5.3; Inf2Guard Table 14 (decoder: ours, mirroring the encoder)",
    description="Encoder: 2 × (3×3 conv 32, BN), no ReLU; decoder: 3×3 conv 32, BN, ReLU, "
                "3×3 conv to C, sigmoid; utility: Table 14's conv stack and MLP."))
