"""The registered architectures' networks (one module per family) and the one way to build
them: :func:`build_model`, with :func:`param_count` and :func:`forward_flops` (the cost model).

The declarations live in :mod:`core.catalog` (``arch_*.py``, registered in
:data:`core.foundation.parts.ARCHITECTURES`); this package holds the torch modules they build.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from core.foundation.checks import check_int

if TYPE_CHECKING:  # torch is imported where a network is built: reading the declarations
    # (core.models.user's registrations, the config schema) does not pay for it
    import torch

__all__ = ["build_encoder", "build_model", "describe_costs", "forward_flops", "param_count",
           "registered_counts", "role_input_shape"]


def _part(arch: Any):
    from core.foundation.parts import ArchitecturePart, architecture

    return arch if isinstance(arch, ArchitecturePart) else architecture(str(arch))


def build_model(arch: Any, in_shape: Iterable[int], n_classes: int, width: float = 1.0, *,
                role: str = "classifier", seed: int | torch.Generator | None = None,
                data: str | None = None) -> torch.nn.Module:
    """A fresh ``arch`` (a registered name or part) network for data of ``in_shape`` ((d,) or
    (1, 1, d) tabular rows, (C, H, W) images) and ``n_classes`` classes, at ``width`` × its
    widths, playing ``role`` (``"classifier"``: the model a runner trains). The image roles
    take flat rows or images and apply the declared resize. ``seed``: initialised by
    :func:`core.models.nn.seeded` from it (an int or a generator); None: the family's rule from the
    global RNG. ``data`` names the data set in errors. Every error is one line naming the
    field (``model.arch``, ``model.width``, ``model.role``, ``n_classes``)."""
    part = _part(arch)
    shape = part.check_input(in_shape, data)
    w = part.check_width(width)
    part.check_role(role)
    n_classes = check_int("n_classes", n_classes, 2)
    from core.foundation.registry import load_object

    # an adapted network is built for the images it sees (after the resize); one that adapts
    # its input itself (LeNet-5's resize, the MLP's flattening) for the data's own shape
    net_shape = part.net_shape(shape) if part.adapt else shape
    net = load_object(part.builder)(net_shape, n_classes, width=w, role=role)
    if part.adapt and role in part.image_roles:
        from core.models.common import Adapted, ImageInput

        net = Adapted(ImageInput(shape, part.side, part.resize), net)
    if seed is not None:
        from core.models.nn import seeded

        net = seeded(net, seed)
    return net


def build_encoder(arch: Any, in_shape: Iterable[int], n_classes: int, width: float = 1.0, *,
                  data: str | None = None) -> tuple[torch.nn.Module, int]:
    """``arch``'s ``encoder`` role with its output flattened (one r row per input, what the
    representation runners aggregate, perturb and attack) and r's dimension. Unseeded: the
    caller seeds it (:func:`core.models.nn.seeded`)."""
    import torch

    enc = build_model(arch, in_shape, n_classes, width, role="encoder", data=data)
    r_shape = role_input_shape(arch, in_shape, n_classes, width, role="utility")
    return torch.nn.Sequential(enc, torch.nn.Flatten()), int(math.prod(r_shape))


def param_count(arch: Any, in_shape: Iterable[int], n_classes: int, width: float = 1.0, *,
                role: str = "classifier") -> int:
    """Trainable parameters of :func:`build_model`'s network, built on the meta device."""
    import torch

    with torch.device("meta"):
        net = build_model(arch, in_shape, n_classes, width, role=role)
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def role_input_shape(arch: Any, in_shape: Iterable[int], n_classes: int, width: float = 1.0, *,
                     role: str = "classifier") -> tuple[int, ...]:
    """The shape of one input of ``role`` (without the batch dimension): flat rows for the
    image roles, the encoder's output (r) for the networks on representations."""
    import torch

    part = _part(arch)
    shape = part.check_input(in_shape)
    if role in part.image_roles:
        return (shape[0] * shape[1] * shape[2],)
    with torch.device("meta"):
        enc = build_model(part, shape, n_classes, width, role="encoder").eval()
        with torch.no_grad():
            r = enc(torch.empty(2, shape[0] * shape[1] * shape[2]))
    return tuple(r.shape[1:])


def forward_flops(arch: Any, in_shape: Iterable[int], n_classes: int, width: float = 1.0, *,
                  role: str = "classifier") -> int:
    """Forward FLOPs for one input (a multiply-add counts 2), counted by
    ``torch.utils.flop_counter.FlopCounterMode`` on the meta device in eval mode (batch 2,
    halved: BatchNorm needs no batch statistics in eval mode, a batch of 2 keeps every layer
    on its batched path)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    x_shape = role_input_shape(arch, in_shape, n_classes, width, role=role)
    with torch.device("meta"):
        net = build_model(arch, in_shape, n_classes, width, role=role).eval()
        x = torch.empty(2, *x_shape)
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            net(x)
    return int(counter.get_total_flops()) // 2


def registered_counts(arch: Any, width: float, in_shape: Iterable[int],
                      n_classes: int) -> tuple[int, int] | None:
    """(parameters, forward FLOPs) a registered model's checks measured (on the CPU, at width
    1) for data of ``in_shape`` and ``n_classes`` (:mod:`core.models.user`: a user's forward
    may not run on the meta device); None for any other architecture, width or input."""
    from core.foundation.parts import input_kind

    part = _part(arch)
    if not getattr(part, "measured", None) or float(width) != 1.0:
        return None
    shape = input_kind(in_shape)[1]
    for (data, fit), (_, params, flops) in zip(part.fits, part.measured, strict=True):
        if tuple(fit) == shape and dict(part.classes).get(data) == int(n_classes):
            return params, flops
    return None


def describe_costs() -> list[dict[str, Any]]:
    """:func:`core.foundation.parts.describe_models` with each architecture's parameter count per role and
    forward FLOPs at its reference input, full and CPU width (``privlab parts --family
    models``; meta-device builds)."""
    from core.foundation.parts import describe_models

    rows = describe_models()
    for row in rows:
        a = _part(row["name"])
        shape, classes = a.reference
        known = registered_counts(a, 1.0, shape, classes)
        if known is not None:  # a registered model: what its checks measured
            row["params"] = row["params_cpu_width"] = {"classifier": known[0]}
            row["forward_flops"] = row["forward_flops_cpu_width"] = known[1]
            row["fits"] = {d: list(s) for d, s in a.fits}
            continue
        row["params"] = {r: param_count(a, shape, classes, role=r) for r in a.roles}
        row["params_cpu_width"] = {r: param_count(a, shape, classes, a.cpu_width, role=r)
                                   for r in a.roles}
        row["forward_flops"] = forward_flops(a, shape, classes)
        row["forward_flops_cpu_width"] = forward_flops(a, shape, classes, a.cpu_width)
    return rows
