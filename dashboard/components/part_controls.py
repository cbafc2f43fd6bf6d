"""The one control builder: a defense's controls drawn from its declaration alone
(:class:`core.foundation.parts.DefensePart`), so a defense registered in :mod:`core.catalog` gets its
controls on its family's page with no page edit.

- the knob: :func:`dashboard.components.knob.knob_ui` from ``part.knob`` (a slider, or a
  select slider over :meth:`core.foundation.parts.Knob.positions`);
- each declared :class:`core.foundation.parts.Control` for the family, from the block's field: a
  ``Literal`` a select box (a segmented control when the control says so), a ``bool`` a
  checkbox, a bounded number a number box with the field's own range
  (:func:`dashboard.components.inputs.number_ui`).

Pages choose where the widgets go and their widget keys (``key(field)``); the values come back
as the block's fields.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from core.foundation.parts import DEFENSES, Control, DefensePart
from dashboard.components.inputs import number_ui
from dashboard.components.knob import knob_ui


def _literal_options(annotation: Any) -> tuple[Any, ...]:
    """The values of a ``Literal`` annotation (inside ``Optional`` too); empty otherwise."""
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is typing.Literal:
            return typing.get_args(arg)
    return ()


def control_ui(part: DefensePart, control: Control, *, key: str, where: Any = None) -> Any:
    """Draw one declared control of ``part`` under widget ``key`` into ``where``; its value."""
    where = st if where is None else where
    info = part.config.model_fields[control.field]
    label = control.label or control.field.replace("_", " ")
    help_ = control.help or info.description
    options = _literal_options(info.annotation)
    if options:
        st.session_state.setdefault(key, info.default)
        if control.segmented:
            return where.segmented_control(label, list(options), key=key, required=True,
                                           help=help_)
        return where.selectbox(label, list(options), key=key, help=help_)
    if info.annotation is bool:
        st.session_state.setdefault(key, bool(info.default))
        return bool(where.checkbox(label, key=key, help=help_))
    # the range is the block's own (delta, clip norm, ...)
    return number_ui(label, key=key, default=info.default, where=where,
                     field=(part.config, control.field), help=help_)


def controls_ui(family: str, defense: str, *, key: Callable[[str], str],
                where: Sequence[Any] | None = None) -> dict[str, Any]:
    """The defense's declared controls for ``family``: ``{field: value}``. ``where``: the
    containers, one per control (default: a row of columns)."""
    part = DEFENSES.get(defense)
    controls = part.controls_for(family)
    if not controls:
        return {}
    spots = list(where) if where is not None else list(st.columns(len(controls)))
    spots += list(st.columns(len(controls) - len(spots))) if len(spots) < len(controls) else []
    return {c.field: control_ui(part, c, key=key(c.field), where=w)
            for c, w in zip(controls, spots)}


def knob_control(family: str, defense: str, *, key: Callable[[str], str], where: Any = None,
                 dim: int | None = None, default: float | None = None) -> dict[str, Any]:
    """The defense's knob on ``family``'s page: ``{field: value}``, empty without a knob."""
    part = DEFENSES.get(defense)
    if part.knob is None:
        return {}
    field = part.knob.field
    return {field: float(knob_ui(defense, key=key(field), family=family, where=where, dim=dim,
                                 default=default))}


def defense_block_ui(family: str, defense: str, *, key: Callable[[str], str],
                     knob_where: Any = None, controls_where: Sequence[Any] | None = None,
                     dim: int | None = None) -> dict[str, Any]:
    """The defense block a page's controls give: ``{"kind": defense, knob field: value,
    control field: value, ...}`` (fields not drawn keep the block's defaults)."""
    return {"kind": defense,
            **knob_control(family, defense, key=key, where=knob_where, dim=dim),
            **controls_ui(family, defense, key=key, where=controls_where)}


# ---------------------------------------------------------------------------------------------
# the architecture a run trains (core.foundation.parts.ARCHITECTURES), its cost shown before Run


def _arch_titled(text: str, kind: str | None = None) -> str:
    """``text`` with registered names replaced by titles (parts, kinds and architectures)."""
    import re

    from core.foundation.parts import ARCHITECTURES
    from dashboard.base.format import titled

    # architectures first: a defense may share an architecture's name (Inf2Guard's DRA)
    for name, part in ARCHITECTURES.items():
        text = re.sub(rf"'{re.escape(name)}'|(?<![\w.']){re.escape(name)}(?![\w'])",
                      part.title, text)
    return titled(text, kind)


def _reason(text: str, kind: str) -> str:
    """A refusal's reason without its "got 'name' ...;" head, titled."""
    import re

    head, sep, rest = text.partition("; ")
    text = rest if sep and head.startswith("got ") else text
    # the select already lists what is allowed
    return _arch_titled(re.sub(r" \(allowed: [^()]*\)$", "", text), kind)


def _data_facts(config: Mapping[str, Any]) -> tuple[tuple[int, ...], int, int] | None:
    """(input shape, classes, train rows) of the config's data set; None when it cannot load."""
    from core.config.schema import DataSpec
    from core.data import load_dataset

    try:
        ds = load_dataset(DataSpec(**dict(config.get("data") or {})), int(config.get("seed", 0)))
    except Exception:  # noqa: BLE001 - the page's own data check says why
        return None
    shape = tuple(ds.image_shape) if ds.image_shape else (int(ds.X.shape[1]),)
    return shape, len(ds.label_names), len(ds.split("train"))


def _get_name(config: Mapping[str, Any]) -> str | None:
    return (config.get("data") or {}).get("name")


def _on_gpu() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def cost_text(config: Mapping[str, Any], arch: str, width: float,
              facts: tuple[tuple[int, ...], int, int]) -> str:
    """The line under the architecture control: parameters, forward FLOPs and the estimated
    training time of this run here and on a GPU (:mod:`core.engine.costs`; this machine's
    step timed on first use, in the background: :mod:`dashboard.components.cost_later`)."""
    from core.engine.costs import arch_cost, format_count, format_duration, image_passes
    from core.foundation.parts import architecture

    shape, classes, n_train = facts
    passes = image_passes(config, n_train)
    c = arch_cost(arch, width, shape, classes, passes)
    part = architecture(arch)
    resized = len(shape) == 3 and part.net_shape(tuple(shape)) != tuple(shape)
    head = (f"{part.width_label(width)}: **{c.params:,} parameters**, "
            f"**{format_count(c.forward_flops)}FLOPs** forward per image"
            + (f" ({part.transform(shape)})" if resized else ""))
    if passes is None:
        return head + "."
    gpu_here = "this GPU" if _on_gpu() else "a GPU"
    cpu = format_duration(c.cpu_seconds)
    gpu = format_duration(c.gpu_seconds)
    return (f"{head}. This run trains it on ≈ {format_count(passes)} images "
            f"(≈ {format_count(c.train_flops or 0)}FLOPs): **{cpu} on a CPU** "
            f"({c.cpu_based_on}); **{gpu} on {gpu_here}** ({c.gpu_based_on}; compute only).")


#: why a registered model is not offered to a visitor of a server reachable beyond loopback
NOT_OPERATOR = ("registered outside `privlab model add`; a server reachable beyond loopback "
                "offers only models the operator registered on the command line")


def shared_server_choices(choices: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    """``choices`` (name, reason or None) as this visitor may have them: on a server reachable
    beyond loopback (:func:`dashboard.base.auth.beyond_loopback`) a registered model is offered only
    where the operator registered it with ``privlab model add``; the page never registers or
    imports code itself."""
    from core.foundation.parts import ARCHITECTURES
    from core.models.user import BY_CLI
    from dashboard.base import auth

    if not auth.beyond_loopback():
        return choices
    out = []
    for name, reason in choices:
        by = getattr(ARCHITECTURES.get(name), "registered_by", None)
        out.append((name, NOT_OPERATOR if reason is None and by not in (None, BY_CLI)
                    else reason))
    return out


def architecture_ui(config: Mapping[str, Any], *, kind: str, key: str,
                    where: Any = None) -> dict[str, Any]:
    """The "Architecture" select (titles) and width multiplier of a page whose ``kind`` trains
    a registered architecture (``model: {arch, width}``), offering those the config takes on
    its data (:func:`core.engine.costs.architecture_choices`; the others listed with their
    one-line reason) and the run's cost before Run. Widget keys ``<key>_arch`` /
    ``<key>_width``. Returns ``config`` with ``model`` set where it is not the default (the
    default model leaves the config, and so its stored runs, as they were); ``config``
    unchanged for a kind without a ``model`` block or where only the default fits for a
    reason other than the data."""
    from core.config.schema import ModelSpec
    from core.engine.costs import architecture_choices, model_field
    from core.foundation.parts import ARCHITECTURES, architecture

    if not model_field(kind):
        return dict(config)
    where = st.container() if where is None else where
    if config.get("target"):  # a model trained elsewhere: its weights fix the architecture
        arch = (config.get("model") or {}).get("arch")
        where.caption(f"Architecture: **{ARCHITECTURES.get(arch).title}**, fixed by the trained "
                      "model's weights." if arch else "Architecture: the trained model's own "
                      "scikit-learn estimator (shadows are clones of it).")
        return dict(config)
    facts = _data_facts(config)
    shape = facts[0] if facts else None
    choices = shared_server_choices(architecture_choices(config, shape))
    default = ModelSpec()
    offered = [n for n, r in choices if r is None]
    refused = [(n, r) for n, r in choices if r is not None]
    data_refusal = f"data {_get_name(config)!r}"
    if len(offered) == 1 and not any(data_refusal in r for _, r in refused):
        return dict(config)  # the kind trains its own model: nothing to choose
    arch_key, width_key = f"{key}_arch", f"{key}_width"
    if st.session_state.get(arch_key) not in offered:
        st.session_state[arch_key] = default.arch
        st.session_state[width_key] = default.width

    def _width_for_arch() -> None:
        part = architecture(st.session_state[arch_key])
        st.session_state[width_key] = 1.0 if _on_gpu() else part.cpu_width

    st.session_state.setdefault(width_key, default.width)
    cols = where.columns([1.6, 0.8, 3.6])
    arch = cols[0].selectbox("Architecture", offered, key=arch_key,
                             format_func=lambda n: ARCHITECTURES.get(n).title,
                             on_change=_width_for_arch,
                             help="The network this run trains (registered architectures "
                                  "that take this page's data). Where the page has its own "
                                  "model choice too, another architecture needs that one at "
                                  "its default: the settings name the network once.")
    part = architecture(arch)
    lo, hi = part.widths
    w = st.session_state.get(width_key)
    if not isinstance(w, (int, float)) or not lo <= float(w) <= hi:
        st.session_state[width_key] = float(min(max(float(w or 1.0), lo), hi))
    width = float(cols[1].number_input(
        "Width ×", min_value=float(lo), max_value=float(hi), step=0.25, key=width_key,
        format="%g", help=f"Width multiplier, [{lo:g}, {hi:g}]: 1 is the architecture as "
                          f"published; a CPU run uses {part.cpu_width:g}."))
    if facts is not None:
        from core.engine.costs import image_passes
        from dashboard.components.cost_later import cost_or_placeholder

        cost_or_placeholder(cols[2], lambda: cost_text(config, arch, width, facts), arch=arch,
                            width=width, shape=facts[0], classes=facts[1],
                            timed=image_passes(config, facts[2]) is not None, draw=st.caption)
    if refused:
        lines = "\n".join(f"- {ARCHITECTURES.get(n).title}: {_reason(r, kind)}"
                          for n, r in refused)
        with where.expander(f"{len(refused)} architecture(s) not offered for these settings"):
            st.markdown(lines)
    chosen = ModelSpec(arch=arch, width=width)
    return dict(config) if chosen == default else {**config, "model": chosen.model_dump()}
