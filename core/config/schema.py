"""Validated experiment configs (DESIGN: Contracts / Config).

One pydantic model per experiment kind, joined in a discriminated union on ``kind``.
Ranges are enforced here and nowhere else; :class:`ConfigError` turns pydantic's errors into
one line per problem that names the field, the value given and the allowed range, e.g.

    tradeoff_lambda: got 1.5; allowed range 0 <= value <= 1

Configs load from YAML (libyaml's safe loader, duplicate keys refused) or JSON through
:mod:`core.config.files` (a size cap checked before reading, regular files only, UTF-8 errors
naming the line, nesting and alias expansion bounded); :func:`cache_key` is the sha256 of the
canonical JSON of the validated config plus the engine version.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from annotated_types import Ge, Gt, Le, Len, Lt
from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    TypeAdapter,
    ValidationError,
    model_serializer,
    model_validator,
)

from core.config.base import Block
from core.config.files import MAX_DEPTH
from core.config.trained import TrainedTarget
from core.foundation.parts import (
    DEFENSES,
    attack_by_config_name,
    attacks_for,
    baseline_for,
    check_attackers,
    check_combination,
    config_names,
    defense_blocks,
)

# Names of the built-in data sets (core.data.registry.DATASETS must agree; a test checks).
# ``DataSpec.name`` also takes a set registered with `privlab data add` (core.data.user).
DatasetName = Literal[
    "digits", "mnist5k", "faces", "synthetic", "adult", "mnist", "fashion_mnist", "cifar10", "celeba"
]
DATASETS_BUILTIN = frozenset(DatasetName.__args__)
Split = Literal["train", "test", "aux", "all"]




def _existing_dir(value: str | None) -> str | None:
    """``data_dir`` must name a folder that exists: a download never creates one wherever a
    config points (issue 21)."""
    try:
        missing = value is not None and not Path(value).expanduser().is_dir()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        missing = True
    if missing:
        from pydantic_core import PydanticCustomError

        raise PydanticCustomError("no_such_dir", "no such folder; create it first (privlab "
                                  "never creates data_dir) or leave data_dir out")
    return value


DataDir = Annotated[str | None, AfterValidator(_existing_dir)]


_Model = Block


def family_defense(family: str) -> Any:
    """The type of ``family``'s ``defense`` field, generated from the registry: the one block
    of a single-defense family, else the union of its defenses' blocks tagged by ``kind``."""
    import functools
    import operator

    blocks = defense_blocks(family)
    if len(blocks) == 1:
        return blocks[0]
    return Annotated[functools.reduce(operator.or_, blocks), Field(discriminator="kind")]


def _block(name: str) -> Any:
    """The config block of the registered defense ``name`` (a family's default defense)."""
    return DEFENSES.get(name).config


FederatedDefense = family_defense("attribute_privacy")
GradientDefense = family_defense("gradient_leakage")
MembershipDefense = family_defense("membership")
FilDefense = family_defense("fisher_information")
PropertyDefense = family_defense("property")
ReprDefense = family_defense("repr_reconstruction")


def attack_spec(family: str, base: type[Block]) -> type[Block]:
    """``family``'s attack config: ``base`` (the family's own fields: which attackers, shadow
    counts, ...) carrying every setting its registered attacks declare in their settings
    blocks (:attr:`core.foundation.parts.AttackPart.settings`, each in its attack's catalog module),
    generated from the registry as the defense unions are. Two blocks may share a setting only
    with the same type and default (the fresh attackers' ``max_train``); the chosen attacks'
    settings are validated by their own blocks (:func:`check_attack_settings`)."""
    from pydantic import create_model

    fields: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for part in attacks_for(family):
        for name, info in (part.settings.model_fields.items() if part.settings else ()):
            if name in base.model_fields:
                raise TypeError(f"{part.name}.settings.{name}: the {family} attack config "
                                "declares it already")
            if name in fields and (repr(fields[name][1]) != repr(info)):
                raise TypeError(f"{part.name}.settings.{name}: declared differently by "
                                f"{owner[name]}")
            fields.setdefault(name, (info.annotation, info))
            owner.setdefault(name, part.name)
    return create_model(base.__name__.lstrip("_"), __base__=base, __module__=__name__,
                        __doc__=base.__doc__, **fields)


def check_attack_settings(family: str, spec: BaseModel) -> None:
    """Validate the settings of ``spec``'s chosen attackers by their own declarations: every
    setting an attack reads must be a field of the family's config, and its settings block
    must accept the values (one-line ValueError naming the field)."""
    carried = type(spec).model_fields
    for name in spec.attackers:
        part = attack_by_config_name(family, name)
        for field_ in part.setting_names():
            if field_ not in carried:
                raise ValueError(f"attack.{field_}: attack {name!r} reads a setting the "
                                 f"{family} attack config does not carry; declare it in the "
                                 "attack's settings block (in its catalog module)")
        if part.settings is not None:
            part.settings.model_validate({f: getattr(spec, f) for f in part.settings.model_fields})


class DataSpec(_Model):
    """Which data set, which private attribute, and how it is split.

    Splits are deterministic from the experiment's ``seed``: *train* (the devices' / model
    owner's data), *test* (utility and attack scoring) and *aux* (the attacker's auxiliary data).
    """

    name: str = Field(
        "synthetic", description="a built-in data set (DatasetName) or one registered with "
        "`privlab data add`"
    )
    private_attribute: str | None = Field(
        None, description="private attribute to protect and attack; None = the data set's default"
    )
    data_dir: DataDir = Field(
        None, description="an existing directory of real data files; None = $PRIVLAB_DATA_DIR "
        "or the user data dir"
    )
    max_samples: Annotated[int, Ge(50), Le(1_000_000)] | None = Field(
        None, description="seeded subsample cap on the whole data set (speed)"
    )
    test_fraction: Annotated[float, Ge(0.05), Le(0.5)] = 0.2
    aux_fraction: Annotated[float, Ge(0.05), Le(0.5)] = 0.2
    # synthetic only
    n_samples: Annotated[int, Ge(100), Le(200_000)] = 4000
    dependence: Annotated[float, Ge(0.0), Le(1.0)] = Field(
        0.6, description="synthetic: how strongly the task label depends on the private attribute"
    )
    # registered sets only
    fingerprint: str | None = Field(
        None, description="registered data sets: the registration's sha256 of the files and "
        "options, filled in at validation so that the cache key changes with the files; "
        "None for built-in sets"
    )

    @model_validator(mode="before")
    @classmethod
    def _resolve_fingerprint(cls, data: Any) -> Any:
        """A registered set's fingerprint is copied from its registration (core.data.user)."""
        if isinstance(data, dict) and data.get("fingerprint") is None:
            name = data.get("name")
            if isinstance(name, str) and name not in DATASETS_BUILTIN:
                from core.data.user import get_entry

                try:
                    entry = get_entry(name)
                except ValueError:  # a broken registration: reported by the after-validator
                    entry = None
                if entry is not None:
                    data = {**data, "fingerprint": entry["fingerprint"]}
        return data

    @model_validator(mode="after")
    def _check_attribute(self) -> DataSpec:
        from core.foundation.checks import range_error

        if self.test_fraction + self.aux_fraction > 0.8:
            raise range_error("test_fraction + aux_fraction",
                              round(self.test_fraction + self.aux_fraction, 10), 0, 0.8,
                              note="the rest is the training split")
        from core.data.registry import get_info

        if self.name in DATASETS_BUILTIN:
            if self.fingerprint is not None:
                raise ValueError(f"fingerprint: got {self.fingerprint!r}; only registered data "
                                 f"sets have one ({self.name!r} is built in): leave it out")
        else:
            from core.data.user import current_fingerprint

            try:
                get_info(self.name)
                current_fingerprint(self.name, self.fingerprint)
            except ValueError as exc:  # DataError too: one line naming the field
                msg = str(exc)
                raise ValueError(msg[5:] if msg.startswith("data.") else f"name: {msg}") from None
        if self.private_attribute is not None:
            allowed = get_info(self.name).attributes
            if self.private_attribute not in allowed:
                raise ValueError(
                    f"private_attribute: got {self.private_attribute!r}; allowed for "
                    f"{self.name!r}: {', '.join(allowed)}"
                )
        return self


class ModelSpec(_Model):
    """The network a runner trains (:data:`core.foundation.parts.ARCHITECTURES`, built by
    :func:`core.models.build_model`): ``arch`` a registered architecture, ``width`` its width
    multiplier within the range the architecture declares. The default (``mlp`` at width 1) is
    the model every image runner trained before architectures were a choice."""

    arch: str = Field("mlp", description="a registered architecture (privlab parts --family "
                                         "models)")
    width: float = Field(1.0, description="width multiplier, within the architecture's range")
    # registered models only
    fingerprint: str | None = Field(
        None, description="a model registered with `privlab model add`: the registration's "
        "sha256 of the file and options, filled in at validation so that every run key changes "
        "with the file; None for the architectures privlab declares")

    @model_validator(mode="before")
    @classmethod
    def _resolve_fingerprint(cls, data: Any) -> Any:
        """A registered model's fingerprint is copied from its registration (core.models.user)."""
        if isinstance(data, dict) and data.get("fingerprint") is None:
            from core.foundation.parts import ARCHITECTURES

            arch = data.get("arch")
            # a non-string arch is left for the field's own one-line type error
            part = (ARCHITECTURES.get(arch) if isinstance(arch, str) and arch in ARCHITECTURES
                    else None)
            if getattr(part, "fingerprint", None):
                data = {**data, "fingerprint": part.fingerprint}
        return data

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        from core.foundation.parts import architecture

        try:
            part = architecture(self.arch)
            part.check_width(self.width)
        except ValueError as err:
            # the part's messages name ``model.<field>``; the enclosing block adds ``model.``
            raise ValueError(str(err).removeprefix("model.")) from None
        if getattr(part, "fingerprint", None):
            from core.models.user import check_current

            check_current(self.arch, self.fingerprint)
        elif self.fingerprint is not None:
            raise ValueError(f"fingerprint: got {self.fingerprint!r}; only registered models "
                             f"have one ({self.arch!r} is declared by privlab): leave it out")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> Any:
        """Without a fingerprint the dump is the one stored runs were keyed by."""
        out = handler(self)
        if isinstance(out, dict) and out.get("fingerprint") is None:
            out.pop("fingerprint", None)
        return out

    @property
    def part(self) -> Any:
        """The registered :class:`core.foundation.parts.ArchitecturePart`."""
        from core.foundation.parts import architecture

        return architecture(self.arch)


def check_encoder_model(model: ModelSpec, kind: str) -> None:
    """One line for a kind that trains ``model``'s ``encoder`` role when the architecture
    declares none (the default model keeps the kind's own MLP encoder)."""
    from core.foundation.parts import ARCHITECTURES

    if model != ModelSpec() and "encoder" not in model.part.roles:
        with_encoder = [n for n, a in ARCHITECTURES.items() if "encoder" in a.roles]
        raise ValueError(f"model.arch: got {model.arch!r}; {kind} trains an encoder and "
                         f"{model.arch!r} declares none (allowed: {ModelSpec().arch!r}, "
                         f"{', '.join(with_encoder)})")


def check_model_data(model: ModelSpec, data_name: str) -> None:
    """Validation-time check that ``model.arch`` takes the kind of data ``data_name`` holds
    (a conv net on tabular rows is one line naming both); the channel count is checked when
    the data are loaded."""
    from core.data.registry import get_info

    model.part.check_data(data_name)
    if get_info(data_name).kind == "tabular":
        model.part.check_input((1, 1, 2), data=data_name)


class _Experiment(_Model):
    seed: Annotated[int, Ge(0), Le(2**31 - 1)] = 0
    device: Literal["auto", "cpu", "cuda"] = "auto"


# ---------------------------------------------------------------------------------------------
# projection


class ProjectionConfig(_Experiment):
    """2-D projection (PCA / t-SNE / UMAP) of a data set's raw features."""

    kind: Literal["projection"] = "projection"
    data: DataSpec = DataSpec()
    method: Literal["pca", "tsne", "umap"] = "pca"
    split: Split = "train"
    max_points: Annotated[int, Ge(10), Le(20_000)] = 2000
    perplexity: Annotated[float, Ge(2.0), Le(100.0)] = 30.0
    n_neighbors: Annotated[int, Ge(2), Le(200)] = 15
    min_dist: Annotated[float, Ge(0.0), Le(1.0)] = 0.1


# ---------------------------------------------------------------------------------------------
# tappfl (federated attribute privacy)


class FedAvgSpec(_Model):
    """FedAvg simulation settings (Flower's vocabulary: clients, rounds, fraction_fit)."""

    num_devices: Annotated[int, Ge(1), Le(1000)] = 20
    fraction_fit: Annotated[float, Gt(0.0), Le(1.0)] = 0.2
    rounds: Annotated[int, Ge(1), Le(200)] = 5
    local_epochs: Annotated[int, Ge(1), Le(100)] = 1
    batch_size: Annotated[int, Ge(1), Le(4096)] = 10
    lr: Annotated[float, Gt(0.0), Le(10.0)] = 0.01
    partition: Literal["iid", "dirichlet", "attribute"] = "iid"
    alpha: Annotated[float, Gt(0.0), Le(1000.0)] = 0.5
    vectorised: bool = True


class _AttackSpec(_Model):
    """Fresh attribute-inference attackers trained by the server on frozen representations
    (names from :data:`core.foundation.parts.ATTACKS`; each runs on the release and on raw x), with
    their settings (each attack's block)."""

    attackers: tuple[str, ...] = ("logreg", "mlp")

    @model_validator(mode="after")
    def _check_attackers(self) -> _AttackSpec:
        check_attackers("attribute_privacy", self.attackers)
        check_attack_settings("attribute_privacy", self)
        return self


AttackSpec = attack_spec("attribute_privacy", _AttackSpec)


# -- defense blocks: a tagged block each, carrying only its own parameters ---------------------














class AttributePrivacyConfig(_Experiment):
    """Attribute privacy of a federated encoder's representations (TAPPFL, AAAI 2024, and its
    baselines; spec B5-B10): train with a defense, release r, attack u, score, bound.

    Formerly ``kind: tappfl`` (still accepted: :mod:`core.config.migrations`)."""

    kind: Literal["attribute_privacy"] = "attribute_privacy"
    data: DataSpec = DataSpec()
    model: ModelSpec = ModelSpec()
    defense: FederatedDefense = _block("tappfl")()
    adversary_steps: Annotated[int, Ge(1), Le(20)] = Field(
        1, description="in-training attribute-adversary (Ψ) steps per extractor (Θ) step"
    )
    adversary_lr_scale: Annotated[float, Gt(0.0), Le(100.0)] = Field(
        1.0, description="in-training adversary (Ψ) learning rate as a multiple of fl.lr "
        "(Algorithm 1's lr1/lr3)"
    )
    pretrain_epochs: Annotated[int, Ge(0), Le(100)] = 1
    representation_dim: Annotated[int, Ge(2), Le(1024)] = 128
    hidden_dim: Annotated[int, Ge(2), Le(4096)] = 64
    critic_hidden: Annotated[int, Ge(2), Le(4096)] = 64
    fl: FedAvgSpec = FedAvgSpec()
    attack: AttackSpec = AttackSpec()
    projection_points: Annotated[int, Ge(0), Le(5000)] = 1000

    @model_validator(mode="before")
    @classmethod
    def _migrate_old_shape(cls, data: Any) -> Any:
        """Direct construction with the v1 keywords (``defense="dp_gaussian"``,
        ``tradeoff_lambda=...``) goes through the same migration as stored configs."""
        if isinstance(data, dict):
            from core.config.migrations import migrate

            data, _ = migrate({"kind": "attribute_privacy", **data})
        return data

    @property
    def tradeoff_lambda(self) -> float:
        """λ the encoder trains at: the TAPPFL block's, else 0 (utility term only)."""
        return float(getattr(self.defense, "tradeoff_lambda", 0.0))

    @model_validator(mode="after")
    def _check_combination(self) -> AttributePrivacyConfig:
        check_model_data(self.model, self.data.name)
        check_encoder_model(self.model, self.kind)
        check_combination(self.kind, self.defense.kind, self.attack.attackers)
        return self


#: the old name (kind ``tappfl``) for code that imported it
TappflConfig = AttributePrivacyConfig


# ---------------------------------------------------------------------------------------------
# gradient leakage (the channel-capacity defense against data reconstruction; spec 001)

IMAGE_DATASETS = frozenset({"digits", "mnist5k", "faces", "mnist", "fashion_mnist", "cifar10", "celeba"})








class AuditSpec(_Model):
    """One-run privacy audit (Steinke, Nasr & Jagielski 2023; :mod:`core.attacks.audit`): the
    defense's training runs once more with ``canaries`` canaries, each in with probability ½,
    and the correct guesses give an ε lower bound at ``confidence``. ``kind``: ``off`` (no
    audit; the default, it costs a training), ``white_box`` (gradient canaries beside the
    clipped gradient), ``black_box`` (mislabelled canary records scored by loss) or ``auto``
    (white box, except for a defense that noises the inputs, the κ channel, whose gradient
    channel is not what it protects: black box). ``tests``: how many audits share
    ``confidence`` (a grid of G settings), Bonferroni-corrected to 1 − (1 − confidence)/G."""

    kind: Literal["off", "auto", "white_box", "black_box"] = "off"
    canaries: Annotated[int, Ge(10), Le(100_000)] = Field(
        1000, description="canaries m (white box: at most the model's parameters; black box: "
                          "at most the rows left outside the training pool)")
    confidence: Annotated[float, Ge(0.5), Lt(1.0)] = Field(
        0.95, description="joint confidence of the tests audits (Bonferroni)")
    tests: Annotated[int, Ge(1), Le(1000)] = Field(
        1, description="audits sharing the confidence (the points of a grid)")
    direction: Literal["dirac", "random"] = Field(
        "dirac", description="white box: one coordinate per canary, or a random direction")

    @property
    def enabled(self) -> bool:
        return self.kind != "off"


class ImageTrainSpec(_Model):
    """How the victim model trains: centrally (the paper's setting) or in the FedAvg loop
    (each device perturbs its own data); the model from ``core.models.nn.IMAGE_MODELS``."""

    model: Literal["lenet_sigmoid", "lenet5", "mlp"] = Field(
        "mlp", description="mlp (sigmoid hidden layer) and lenet5 train in seconds; "
        "lenet_sigmoid is DLG's attack model, initialised U(−0.5, 0.5) as in DLG (it trains with "
        "Adam 3e-3 over ~20 epochs; benchmarks/dlg_lenet.py)")
    setting: Literal["central", "fedavg"] = "central"
    epochs: Annotated[int, Ge(0), Le(200)] = Field(
        5, description="central: epochs over the train split (0 = no training)")
    batch_size: Annotated[int, Ge(1), Le(4096)] = 32
    lr: Annotated[float, Gt(0.0), Le(10.0)] = 0.003
    optimizer: Literal["sgd", "adam"] = "adam"
    fl: FedAvgSpec = FedAvgSpec(num_devices=10, fraction_fit=0.5, rounds=3, local_epochs=1,
                                batch_size=32, lr=0.1)


class _InversionSpecCfg(_Model):
    """The gradient-inversion attacker (names from :data:`core.foundation.parts.ATTACKS`): ``targets``
    independent targets, each one observed upload of ``batch_size`` images, attacked in one
    batched optimisation; the observation is one step's gradient or a FedAvg local update
    (the inverters' settings block)."""

    attackers: tuple[str, ...] = ("idlg",)
    targets: Annotated[int, Ge(1), Le(256)] = 8
    model_state: Literal["fresh", "trained"] = Field(
        "fresh", description="attack the upload made from the freshly initialised model "
        "(round 1) or from the trained model (the last round)")
    model_inversion: bool = Field(True, description="also run model inversion on the trained "
                                  "model (one representative per class, the paper's Fig. 10)")

    @model_validator(mode="after")
    def _check_attackers(self) -> _InversionSpecCfg:
        check_attackers("gradient_leakage", self.attackers)
        check_attack_settings("gradient_leakage", self)
        return self


InversionSpecCfg = attack_spec("gradient_leakage", _InversionSpecCfg)


class GradientLeakageConfig(_Experiment):
    """Gradient leakage and the channel-capacity defense (spec 001): train an image classifier
    under a defense (none, a κ channel, DP-SGD), release uploads, invert them (DLG / iDLG /
    Inverting Gradients) and the trained model (model inversion), score against the clean
    targets, and put Theorem 1's bound and the Wiener MMSE beside the measured error."""

    kind: Literal["gradient_leakage"] = "gradient_leakage"
    data: DataSpec = DataSpec(name="digits")
    model: ModelSpec = ModelSpec()
    defense: GradientDefense = _block("channel")()
    train: ImageTrainSpec = ImageTrainSpec()
    attack: InversionSpecCfg = InversionSpecCfg()
    audit: AuditSpec = AuditSpec()

    @model_validator(mode="after")
    def _check_data(self) -> GradientLeakageConfig:
        from core.data.registry import get_info

        if self.data.name not in IMAGE_DATASETS and get_info(self.data.name).kind != "image":
            raise ValueError(f"data.name: got {self.data.name!r}; gradient leakage needs an "
                             f"image data set ({', '.join(sorted(IMAGE_DATASETS))} or a "
                             "registered image folder)")
        if self.image_model is not None and self.model != ModelSpec():
            raise ValueError(f"model.arch: got {self.model.arch!r} at width {self.model.width:g} "
                             f"with train.model {self.train.model!r}; name the network once "
                             "(train.model: mlp, or model left at its default)")
        check_combination(self.kind, self.defense.kind, self.attack.attackers)
        return self

    @property
    def image_model(self) -> str | None:
        """``train.model`` where it names a network of :data:`core.models.nn.IMAGE_MODELS` other
        than its default (DLG's LeNet-sigmoid, LeNet-5): the victim; None: ``model`` is."""
        default = ImageTrainSpec.model_fields["model"].default
        return None if self.train.model == default else self.train.model


# ---------------------------------------------------------------------------------------------
# membership (Inf2Guard's MIA defense, DP-SGD and the κ channel against loss / LiRA / RMIA)

#: the membership attacks a config may name (registered in core.foundation.parts as ``mia_<name>``)
MEMBERSHIP_ATTACKS = config_names("membership")






class MembershipTrainSpec(_Model):
    """The target model's training (shadow and reference models repeat it, defense included).
    ``members`` rows of a pool of 2·members train rows train the target; the other half are
    the non-members it is scored against."""

    members: Annotated[int, Ge(20), Le(100_000)] = 500
    epochs: Annotated[int, Ge(1), Le(1000)] = 60
    batch_size: Annotated[int, Ge(1), Le(4096)] = 64
    lr: Annotated[float, Gt(0.0), Le(10.0)] = 1e-3
    optimizer: Literal["sgd", "adam"] = "adam"


class _MembershipAttackSpec(_Model):
    """Membership attacks (:mod:`core.attacks.membership`); LiRA and RMIA read K shadow /
    reference models trained with the target's own procedure on halves of the pool (RMIA's
    settings: its block)."""

    attackers: tuple[str, ...] = ("loss", "lira_offline", "lira_online", "rmia")
    shadows: Annotated[int, Ge(2), Le(256)] = Field(16, description="shadow models K (even)")
    targets: Annotated[int, Ge(1), Le(257)] = Field(
        1, description="target models whose scores are pooled (as ML Privacy Meter does): the "
                       "target and targets − 1 shadow models, each scored against the others")

    @model_validator(mode="after")
    def _check(self) -> _MembershipAttackSpec:
        check_attackers("membership", self.attackers)
        check_attack_settings("membership", self)
        if self.shadows % 2:
            raise ValueError(f"shadows: got {self.shadows}; must be even (each row is in exactly "
                             "half the shadow models)")
        from core.foundation.checks import range_error

        if self.rmia_references > self.shadows // 2:
            raise range_error("rmia_references", self.rmia_references, 1, self.shadows // 2,
                              note="shadows/2")
        if self.targets > self.shadows + 1:
            raise range_error("targets", self.targets, 1, self.shadows + 1, note="shadows + 1")
        if (self.targets > 1 and self.rmia_references > self.shadows // 2 - 1
                and any("rmia_references" in attack_by_config_name("membership", a).setting_names()
                        for a in self.attackers)):
            raise range_error("rmia_references", self.rmia_references, 1, self.shadows // 2 - 1,
                              note="with pooled targets a shadow target leaves each row "
                                   "shadows/2 − 1 OUT models")
        return self


MembershipAttackSpec = attack_spec("membership", _MembershipAttackSpec)


class MembershipConfig(_Experiment):
    """Membership inference against a trained model under a defense (Inf2Guard, DP-SGD, the
    κ channel, none): loss / confidence / entropy thresholds, LiRA offline and online, RMIA,
    and for Inf2Guard the representation attack and its own adversary; one ROC report each."""

    kind: Literal["membership"] = "membership"
    data: DataSpec = DataSpec(name="mnist5k")
    model: ModelSpec = ModelSpec()
    defense: MembershipDefense = Field(default_factory=lambda: DEFENSES.get(baseline_for("membership")).config())
    train: MembershipTrainSpec = MembershipTrainSpec()
    attack: MembershipAttackSpec = MembershipAttackSpec()
    audit: AuditSpec = AuditSpec()
    projection_points: Annotated[int, Ge(0), Le(5000)] = Field(
        1000, description="pool rows in the t-SNE of the release coloured by membership (0 = none)")
    target: TrainedTarget | None = Field(
        None, description="a model trained elsewhere, audited in place of the target privlab "
                          "trains (privlab audit); None: privlab trains the target")

    @model_validator(mode="after")
    def _check_combination(self) -> MembershipConfig:
        check_model_data(self.model, self.data.name)
        # the representation attacks accept representation releases: only Inf2Guard's
        check_combination(self.kind, self.defense.kind, self.attack.attackers)
        if self.target is not None:
            check_trained_target(self)
        return self


def check_trained_target(cfg: MembershipConfig) -> None:
    """What a model trained elsewhere allows: plain training as the shadows' recipe (the
    weights carry no defense privlab could repeat), the data set whole (member indices are its
    rows), the default model for a scikit-learn estimator (its own class is the model)."""
    none = baseline_for("membership")
    if cfg.defense.kind != none:
        raise ValueError(f"defense.kind: got {cfg.defense.kind!r}; a model trained elsewhere is "
                         f"audited with shadows trained by plain training ({none!r})")
    if cfg.data.max_samples is not None:
        raise ValueError(f"data.max_samples: got {cfg.data.max_samples}; a model trained "
                         "elsewhere is audited on the whole data set (its members are row "
                         "indices of it): leave it out")
    if cfg.audit.enabled and cfg.target.canaries is None:
        raise ValueError(f"audit.kind: got {cfg.audit.kind!r}; a model trained elsewhere is "
                         "audited on the canaries its training included (target.canaries); "
                         "without them leave audit off")
    if cfg.target.framework == "sklearn" and cfg.model != ModelSpec():
        raise ValueError(f"model.arch: got {cfg.model.arch!r}; a scikit-learn target is its own "
                         "model (shadows are sklearn.base.clone copies): leave model out")


# ---------------------------------------------------------------------------------------------
# fisher information (FIL of output-perturbed linear / logistic regression; spec 002 Part A)

#: nominal attributes of each FIL view an attack may target (besides ``label``)
FIL_TARGETS = {
    ("adult", "paper"): ("marital_status", "sex", "race", "workclass", "education",
                         "occupation", "native_country"),
    ("adult", "standard"): (),
    ("synthetic", None): ("b",),
    ("digits", None): (),
    ("mnist5k", None): (),
}
FIL_ATTACKS = config_names("fisher_information")


class FilDataSpec(_Model):
    """A FIL data view (:mod:`core.data.fil_views`): two digit classes in PCA / unit-ball
    form, Adult in the paper's view (or the other pages' view), or a synthetic GLM."""

    name: Literal["digits", "mnist5k", "adult", "synthetic"] = "digits"
    classes: tuple[Annotated[int, Ge(0), Le(9)], Annotated[int, Ge(0), Le(9)]] = Field(
        (0, 1), description="digits / mnist5k: the two classes (label 1 = the second)")
    pca_dim: Annotated[int, Ge(2), Le(256)] = Field(20, description="digits / mnist5k: PCA dims")
    adult_view: Literal["paper", "standard"] = Field(
        "paper", description="adult: the FIL paper's 86-column view or the other pages' view")
    data_dir: DataDir = None
    max_samples: Annotated[int, Ge(50), Le(1_000_000)] | None = Field(
        None, description="seeded cap on the training rows (speed)")
    test_fraction: Annotated[float, Ge(0.05), Le(0.5)] = 0.2
    n_samples: Annotated[int, Ge(100), Le(200_000)] = Field(1000, description="synthetic: rows")
    n_features: Annotated[int, Ge(2), Le(500)] = Field(10, description="synthetic: columns")
    correlation: Annotated[float, Ge(0.0), Le(0.95)] = Field(
        0.3, description="synthetic: feature correlation ρ^|j−k|")
    outlier_fraction: Annotated[float, Ge(0.0), Le(0.5)] = Field(
        0.02, description="synthetic: rows with features ×4 and the label flipped")

    @model_validator(mode="after")
    def _check(self) -> FilDataSpec:
        if self.classes[0] == self.classes[1]:
            raise ValueError(f"classes: got {list(self.classes)}; expected two different digits")
        return self

    def targets(self) -> tuple[str, ...]:
        """What an attack may target on this view: ``label`` and its nominal attributes."""
        view = self.adult_view if self.name == "adult" else None
        return ("label", *FIL_TARGETS[(self.name, view)])




class FilModelSpec(_Model):
    """The GLM: least squares (targets ±1) or logistic regression, no intercept, with the L2
    weight ``l2`` (the paper's λ in Σℓ + (nλ/2)‖w‖²; not TAPPFL's trade-off λ)."""

    model: Literal["linear", "logistic"] = "linear"
    l2: Annotated[float, Ge(0.0), Le(100.0)] = Field(
        1e-3, description="L2 weight λ of Σℓ + (nλ/2)‖w‖² (FIL's λ)")

    @model_validator(mode="after")
    def _check(self) -> FilModelSpec:
        if self.model == "logistic" and self.l2 < 1e-6:
            from core.foundation.checks import range_text

            raise ValueError(f"l2: got {self.l2:g}; logistic regression needs l2 >= 1e-6 "
                             "(separable data has no finite minimiser, and the DP sensitivity "
                             "2/(nλ) overflows as λ -> 0); " + range_text(1e-6, 100.0))
        return self


class IRFILSpec(_Model):
    """Iteratively reweighted FIL (Algorithm 1 with the corrected weighted Jacobian, Eq. 29)."""

    iterations: Annotated[int, Ge(0), Le(50)] = Field(5, description="T (0 = no reweighting)")
    weight_method: Literal["sample", "class", "hybrid"] = "sample"
    min_weight: Annotated[float, Ge(0.0), Le(1.0)] = 0.0
    max_weight: Annotated[float, Ge(1.0), Le(1e9)] | None = None
    release: bool = Field(False, description="release IRFIL's last iterate (False: the plain "
                          "model is released; IRFIL is shown beside it)")

    @model_validator(mode="after")
    def _check(self) -> IRFILSpec:
        if self.max_weight is not None and self.max_weight <= self.min_weight:
            raise ValueError(f"max_weight: got {self.max_weight:g}; must exceed min_weight = "
                             f"{self.min_weight:g}")
        return self


class FilAttackSpec(_Model):
    """Attacks on the released weights (spec 002 §A10), repeated over ``noise_trials`` draws,
    and the Cramér–Rao panel's unbiased reconstruction over ``crb_trials`` draws per σ."""

    attackers: tuple[str, ...] = FIL_ATTACKS
    target: str | None = Field(None, description="attribute attacked (None = the view's default)")
    noise_trials: Annotated[int, Ge(1), Le(10_000)] = 20
    crb_trials: Annotated[int, Ge(10), Le(100_000)] = 1000
    sigma_grid: Annotated[int, Ge(2), Le(30)] = Field(
        7, description="σ values of the utility / attack / Cramér–Rao sweep")
    max_targets: Annotated[int, Ge(10), Le(1_000_000)] = Field(
        2000, description="training rows attacked per draw (seeded subsample)")

    @model_validator(mode="after")
    def _check(self) -> FilAttackSpec:
        check_attackers("fisher_information", self.attackers)
        check_attack_settings("fisher_information", self)
        return self


#: FIL-LiRA runs by default on views with at most this many training rows
FIL_LIRA_AUTO_ROWS = 5000


class FilLiraSpec(_Model):
    """LiRA against the FIL page's own release (issue #22 item 5; :mod:`core.attacks.
    fil_membership`): shadow GLMs fitted the defender's way on subsets of train ∪ test, each
    released with its own noise draw; online LiRA over ``draws`` target release draws."""

    enabled: bool | None = Field(
        None, description=f"run it (None: on for views of at most {FIL_LIRA_AUTO_ROWS:,} "
                          "training rows, where the K shadow fits and IRFIL runs take seconds)")
    shadows: Annotated[int, Ge(4), Le(256)] = Field(16, description="shadow GLMs K")
    draws: Annotated[int, Ge(2), Le(1000)] = Field(
        20, description="target release draws (the first half picks LiRA's most exposed rows, "
                        "the second half scores them)")
    top_fraction: Annotated[float, Ge(0.01), Le(0.5)] = Field(
        0.1, description="share of training rows counted as LiRA's most exposed")


class FisherInformationConfig(_Experiment):
    """Fisher information loss of an output-perturbed linear / logistic regression (Hannun et
    al., UAI 2021; spec 002 Part A): η per example / attribute / label / group / data set,
    IRFIL, white-box / black-box / prior attacks and the Cramér–Rao panel."""

    kind: Literal["fisher_information"] = "fisher_information"
    data: FilDataSpec = FilDataSpec()
    model: FilModelSpec = FilModelSpec()
    defense: FilDefense = _block("fil_output_perturbation")()
    granularity: Literal["example", "attribute", "label", "group", "dataset"] = Field(
        "example", description="which η σ is solved for and the headline reports")
    irfil: IRFILSpec = IRFILSpec()
    attack: FilAttackSpec = FilAttackSpec()
    lira: FilLiraSpec = FilLiraSpec()

    @model_validator(mode="after")
    def _check(self) -> FisherInformationConfig:
        check_combination(self.kind, self.defense.kind, self.attack.attackers)
        allowed = self.data.targets()
        if self.attack.target is not None and self.attack.target not in allowed:
            raise ValueError(f"attack.target: got {self.attack.target!r}; allowed for "
                             f"{self.data.name!r}: {', '.join(allowed)}")
        if self.defense.epsilon is not None and self.model.model == "linear":
            raise ValueError("defense.epsilon: least squares has no finite L2 sensitivity, so "
                             "no σ gives (ε, δ)-DP; set sigma or eta_target, or use logistic")
        return self

    @property
    def target(self) -> str:
        """The attacked attribute (the view's default when unset)."""
        if self.attack.target is not None:
            return self.attack.target
        t = self.data.targets()
        return t[1] if len(t) > 1 else "label"


# ---------------------------------------------------------------------------------------------
# property inference (Inf2Guard's PIA defense, spec 004 §2.2 / §3.2)

#: property attackers (registered in core.foundation.parts as ``property_<name>``)
PROPERTY_ATTACKS = config_names("property")




class PropertySubsetSpec(_Model):
    """Subsets whose property is the share of one value of the private attribute, binned into
    K classes on the paper's ratio grid (K = 4: 0.2-0.5, 7: 0.2-0.8, 11: 0.0-1.0), the same
    number per bin, sizes uniform in [size_min, size_max] (:mod:`core.data.subsets`)."""

    n_values: Annotated[int, Ge(4), Le(11)] = Field(
        4, description="K property classes: 4, 7 or 11 (the paper's ratio grids)")
    property_value: str | None = Field(
        None, description="the attribute value whose share is the property; None = 'Female' "
                          "where the attribute has it (the paper's female ratio), else code 1")
    size_min: Annotated[int, Ge(2), Le(4096)] = 32
    size_max: Annotated[int, Ge(2), Le(4096)] = 256
    train_per_bin: Annotated[int, Ge(5), Le(100_000)] = Field(
        500, description="defender's subsets per bin (train split)")
    aux_per_bin: Annotated[int, Ge(5), Le(100_000)] = Field(
        500, description="attacker's shadow subsets per bin (aux split)")
    test_per_bin: Annotated[int, Ge(5), Le(100_000)] = Field(
        250, description="attacked target subsets per bin (test split)")

    @model_validator(mode="after")
    def _check(self) -> PropertySubsetSpec:
        if self.n_values not in (4, 7, 11):
            raise ValueError(f"n_values: got {self.n_values}; allowed: 4, 7, 11 (the paper's "
                             "ratio grids)")
        from core.foundation.checks import range_error

        if self.size_min > self.size_max:
            raise range_error("size_min", self.size_min, 2, self.size_max, note="size_max")
        return self


class PropertyTrainSpec(_Model):
    """Algorithm 2's training: pre-training epochs (encoder + head, then the adversary on
    frozen aggregates), then the λ game over minibatches of ``batch_subsets`` subsets."""

    epochs: Annotated[int, Ge(1), Le(1000)] = 20
    pretrain_epochs: Annotated[int, Ge(0), Le(100)] = 3
    batch_subsets: Annotated[int, Ge(1), Le(4096)] = 32
    lr: Annotated[float, Gt(0.0), Le(10.0)] = 1e-3
    adversary_lr: Annotated[float, Gt(0.0), Le(10.0)] = 3e-3
    representation_dim: Annotated[int, Ge(2), Le(1024)] = 32
    hidden_dim: Annotated[int, Ge(2), Le(4096)] = 64


class _PropertyAttackSpec(_Model):
    """Property attacks on the target subsets' aggregates: the in-training adversary, fresh
    K-way classifiers trained on shadow subsets from the aux split (their settings block), the
    prior."""

    attackers: tuple[str, ...] = PROPERTY_ATTACKS

    @model_validator(mode="after")
    def _check(self) -> _PropertyAttackSpec:
        check_attackers("property", self.attackers)
        check_attack_settings("property", self)
        return self


PropertyAttackSpec = attack_spec("property", _PropertyAttackSpec)


class PropertyConfig(_Experiment):
    """Property inference against shared representations (Inf2Guard, spec 004 §2.2, §3.2):
    the encoder trained under Algorithm 2, subsets of the test split attacked through their
    aggregated representations, per-sample utility, the K-ary leakage bound."""

    kind: Literal["property"] = "property"
    data: DataSpec = DataSpec(name="adult")
    model: ModelSpec = ModelSpec()
    defense: PropertyDefense = _block("inf2guard_property")()
    subsets: PropertySubsetSpec = PropertySubsetSpec()
    train: PropertyTrainSpec = PropertyTrainSpec()
    attack: PropertyAttackSpec = PropertyAttackSpec()
    projection_points: Annotated[int, Ge(0), Le(3000)] = Field(
        400, description="target subsets projected (t-SNE), 0 = none")

    @model_validator(mode="after")
    def _check_combination(self) -> PropertyConfig:
        check_model_data(self.model, self.data.name)
        check_encoder_model(self.model, self.kind)
        check_combination(self.kind, self.defense.kind, self.attack.attackers)
        return self


# ---------------------------------------------------------------------------------------------
# representation reconstruction (Inf2Guard's learned perturbation vs fixed noise channels;
# spec 004 §2.3, §3.3, Theorem 3)

REPR_CHANNELS = ("learned", "gaussian", "laplace", "uniform", "dp")
REPR_ATTACKS = config_names("repr_reconstruction")




class ReprTrainSpec(_Model):
    """Encoder, task head and in-training decoder (Algorithm 4), Adam."""

    epochs: Annotated[int, Ge(1), Le(500)] = 10
    batch_size: Annotated[int, Ge(1), Le(4096)] = 64
    lr: Annotated[float, Gt(0.0), Le(10.0)] = 1e-3
    hidden_dim: Annotated[int, Ge(2), Le(4096)] = 256
    representation_dim: Annotated[int, Ge(2), Le(1024)] = Field(
        256, description="width of r; the paper's DRA encoder is shallow and wider than its "
                         "input (2 conv layers, 32 channels at full resolution), and a narrow r "
                         "hides the image by compression alone (mnist5k, λ = 0.4, ε = 0, "
                         "fresh decoder 60 epochs: SSIM 0.62 at 64, 0.73 at 256)")
    decoder_hidden: Annotated[int, Ge(2), Le(4096)] = Field(
        256, description="the in-training decoder Ψ's hidden width")
    max_train: Annotated[int, Ge(50), Le(1_000_000)] = Field(
        3000, description="seeded cap on the training rows (speed)")


class _ReprAttackSpec(_Model):
    """Reconstruction attacks on r + δ (:mod:`core.attacks.reconstruction`), scored on
    ``targets`` test images (the paper attacks 50); each attack's settings are its block's."""

    attackers: tuple[str, ...] = REPR_ATTACKS
    targets: Annotated[int, Ge(2), Le(2000)] = 50

    @model_validator(mode="after")
    def _check(self) -> _ReprAttackSpec:
        check_attackers("repr_reconstruction", self.attackers)
        check_attack_settings("repr_reconstruction", self)
        return self


ReprAttackSpec = attack_spec("repr_reconstruction", _ReprAttackSpec)


class ReprBoundSpec(_Model):
    """Where Theorem 3 is evaluated: ℓ2 at η = ``eta_rmse``·√d (a per-pixel RMSE) and ℓ∞ at
    ``eta_linf``."""

    # from 1e-3: the ball-volume terms d·ln η of Theorem 3 run away below (a per-pixel error
    # of 1e-3 is already far finer than any attack reaches)
    eta_rmse: Annotated[float, Ge(1e-3), Le(1.0)] = 0.15
    eta_linf: Annotated[float, Ge(1e-3), Le(1.0)] = 0.25


class ReprReconstructionConfig(_Experiment):
    """Reconstruction of images from shared representations r + δ: Inf2Guard's learned
    perturbation against fixed noise channels and DP noise (spec 004 §2.3), attacked by the
    in-training decoder, a fresh decoder and optimisation inversion (§3.3), Theorem 3 beside."""

    kind: Literal["repr_reconstruction"] = "repr_reconstruction"
    data: DataSpec = DataSpec(name="digits")
    model: ModelSpec = ModelSpec()
    defense: ReprDefense = _block("inf2guard_dra")()
    train: ReprTrainSpec = ReprTrainSpec()
    attack: ReprAttackSpec = ReprAttackSpec()
    bound: ReprBoundSpec = ReprBoundSpec()

    @model_validator(mode="after")
    def _check_data(self) -> ReprReconstructionConfig:
        from core.data.registry import get_info

        if self.data.name not in IMAGE_DATASETS and get_info(self.data.name).kind != "image":
            raise ValueError(f"data.name: got {self.data.name!r}; reconstruction needs an image "
                             f"data set ({', '.join(sorted(IMAGE_DATASETS))} or a registered "
                             "image folder)")
        check_encoder_model(self.model, self.kind)
        check_combination(self.kind, self.defense.kind, self.attack.attackers)
        return self


# ---------------------------------------------------------------------------------------------
# sweep (a grid over another kind's config)

#: at most this many points (grid × seeds) in one sweep
MAX_SWEEP_POINTS = 10_000
Seed = Annotated[int, Ge(0), Le(2**31 - 1)]


class SweepConfig(_Model):
    """A sweep (DESIGN: Architecture / Sweeps): the cartesian product of ``grid`` (dotted field
    path of ``base`` -> values) × ``seeds``, one stored run per point (:mod:`core.config.sweeps`,
    :mod:`core.runs.sweep`); only points missing from the store run.

    ``executor``, ``workers`` and ``ray_address`` say where points run, not what they compute:
    they are in no cache key (:data:`not_keyed`, honoured by :func:`canonical_json`)."""

    #: fields left out of the canonical JSON, hence of the cache key
    not_keyed: ClassVar[frozenset[str]] = frozenset({"executor", "workers", "ray_address"})

    kind: Literal["sweep"] = "sweep"
    base: dict[str, Any] = Field(description="a config mapping of any other kind (validated)")
    grid: dict[str, Annotated[list[Any], Len(1, MAX_SWEEP_POINTS)]] = Field(
        default_factory=dict, description="dotted field path of base -> the values it takes")
    seeds: Annotated[list[Seed], Len(1, 1000)] = Field(
        description="one point per seed and grid combination; default: the base's seed")
    executor: Literal["serial", "local", "ray"] = "serial"
    workers: Annotated[int, Ge(1), Le(1024)] | None = Field(
        None, description="local: processes (default: the usable cores); ray: tasks in flight")
    ray_address: str | None = Field(None, description="Ray cluster; default $RAY_ADDRESS, else a local Ray")

    @model_validator(mode="before")
    @classmethod
    def _normalise_base(cls, data: Any) -> Any:
        """The base validated and with its defaults filled in (so equivalent sweeps share a
        key); ``seeds`` defaults to the base's seed."""
        if isinstance(data, dict) and isinstance(data.get("base"), dict | BaseModel):
            data = {**data, "base": normalise_base(data["base"])}
            if data.get("seeds") is None:
                data["seeds"] = [data["base"].get("seed", 0)]
        return data

    @model_validator(mode="after")
    def _check_points(self) -> SweepConfig:
        expand(self)  # every point must validate (ConfigError lines name grid.<path>)
        return self

    @property
    def seed(self) -> int:
        """The first seed (what :func:`core.runs.experiments.run` seeds and records)."""
        return self.seeds[0]


# ---------------------------------------------------------------------------------------------
# the union

Config = Annotated[ProjectionConfig | AttributePrivacyConfig | GradientLeakageConfig
                   | MembershipConfig | FisherInformationConfig
                   | PropertyConfig
                   | ReprReconstructionConfig
                   | SweepConfig, Field(discriminator="kind")]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(Config)
CONFIG_MODELS: dict[str, type[_Model]] = {
    "projection": ProjectionConfig,
    "attribute_privacy": AttributePrivacyConfig,
    "gradient_leakage": GradientLeakageConfig,
    "membership": MembershipConfig,
    "fisher_information": FisherInformationConfig,
    "property": PropertyConfig,
    "repr_reconstruction": ReprReconstructionConfig,
    "sweep": SweepConfig,
}
#: the experiment models themselves (exact types: a subclass may loosen what they check)
_CONFIG_TYPES = frozenset(CONFIG_MODELS.values())


class ConfigError(ValueError):
    """A config failed validation. ``str(err)`` has one line per problem; ``problems`` the list."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems) if len(problems) == 1 else "\n".join(problems))

    def __reduce__(self):  # a pool worker's ConfigError reaches the parent with its problems
        return (type(self), (self.problems,))


def _union_models(ann: Any) -> list[type[BaseModel]]:
    """The BaseModel members of an annotation (a model, a union of models, Annotated[...])."""
    args = getattr(ann, "__args__", None)
    if args is None and hasattr(ann, "__origin__"):
        args = (ann.__origin__,)
    cands = args if args is not None else (ann,)
    out: list[type[BaseModel]] = []
    for c in cands:
        if isinstance(c, type) and issubclass(c, BaseModel):
            out.append(c)
        elif getattr(c, "__args__", None) or getattr(c, "__origin__", None):
            out.extend(_union_models(c))
    return out


def _tag(model: type[BaseModel]) -> str | None:
    f = model.model_fields.get("kind")
    return None if f is None else f.default


def _walk(model: type[BaseModel] | None, loc: tuple[Any, ...]):
    """Walk ``loc`` through nested models, dropping the tags pydantic inserts for nested
    discriminated unions (``defense.tappfl.tradeoff_lambda`` -> ``defense.tradeoff_lambda``).
    Returns ``(FieldInfo of the last field or None, cleaned loc)``."""
    info = None
    clean: list[Any] = []
    parts = list(loc)
    i = 0
    while i < len(parts):
        part = parts[i]
        clean.append(part)
        if model is None or not isinstance(part, str):
            info = info if isinstance(part, int) else None
            i += 1
            model = None
            continue
        info = model.model_fields.get(part)
        if info is None:
            model = None
            i += 1
            continue
        cands = _union_models(info.annotation)
        model = cands[-1] if cands else None
        if len(cands) > 1 and i + 1 < len(parts):
            tagged = {_tag(c): c for c in cands}
            if parts[i + 1] in tagged:
                model = tagged[parts[i + 1]]
                i += 1  # skip the tag
        i += 1
    return info, tuple(clean)


def _field_info(model: type[BaseModel] | None, loc: tuple[Any, ...]):
    """The FieldInfo of the last field of ``loc`` (None if unknown)."""
    return _walk(model, loc)[0]


def _allowed_range(info) -> str | None:
    if info is None:
        return None
    from core.foundation.checks import range_text

    bounds: dict[str, Any] = {}
    metas = list(info.metadata)
    for arg in getattr(info.annotation, "__args__", ()):  # Optional[Annotated[...]]
        metas.extend(getattr(arg, "__metadata__", ()))
    for m in metas:
        if isinstance(m, Ge | Gt):
            bounds.update(lo=getattr(m, "ge", getattr(m, "gt", None)), lo_open=isinstance(m, Gt))
        elif isinstance(m, Le | Lt):
            bounds.update(hi=getattr(m, "le", getattr(m, "lt", None)), hi_open=isinstance(m, Lt))
    return range_text(**bounds) if "lo" in bounds or "hi" in bounds else None


_PLAIN_KEY = re.compile(r"[A-Za-z_][\w.\-\[\]]*")
_LONG_QUOTED = re.compile(r"""(['"])([^'"\n]{57})[^'"\n]{20,}\1""")


def _loc_part(p: Any) -> str:
    """A path element as shown: a field name as is, any other key quoted (an unknown key may
    hold anything, newlines included; a message stays one line)."""
    text = str(p)
    if isinstance(p, int) or _PLAIN_KEY.fullmatch(text):
        return text
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def format_validation_error(err: ValidationError, model: type[BaseModel] | None = None) -> list[str]:
    """One line per error: ``field.path: got <value>; <allowed range or pydantic's reason>``."""
    lines = []
    for e in err.errors(include_url=False):
        loc = tuple(e.get("loc", ()))
        # the discriminated union puts the tag first: ('tappfl', 'fl', 'rounds')
        m = model
        if loc and isinstance(loc[0], str) and loc[0] in CONFIG_MODELS and model is None:
            m, loc = CONFIG_MODELS[loc[0]], loc[1:]
        info, loc = _walk(m, loc)
        name = ".".join(_loc_part(p) for p in loc) or "config"
        msg = e.get("msg", "invalid")
        if msg.startswith("Value error, "):
            # model validators already name their field; prefix the enclosing block (``data.``)
            cause = (e.get("ctx") or {}).get("error")
            parts = (cause.problems if isinstance(cause, ConfigError)  # one line per problem
                     else msg[len("Value error, "):].splitlines())
            lines.extend(f"{name}.{part}" if loc else part for part in parts)
            continue
        given = e.get("input")
        given_s = repr(given) if not isinstance(given, dict) else "{...}"
        if len(given_s) > 60:
            given_s = given_s[:57] + "..."
        rng = _allowed_range(info)
        if e.get("type") == "missing":
            lines.append(f"{name}: required field is missing")
        elif e.get("type") == "extra_forbidden":
            lines.append(f"{name}: unknown field (got {given_s})")
        elif e.get("type") == "union_tag_invalid":
            ctx = e.get("ctx") or {}
            tag = ctx.get("tag", given_s)
            if loc:  # a nested tagged block, e.g. defense.kind
                lines.append(f"{name}.kind: got {tag!r}; allowed: {ctx.get('expected_tags', '')}")
            else:
                lines.append(f"kind: got {tag!r}; allowed: {', '.join(CONFIG_MODELS)}")
        elif rng and e.get("type") in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
            lines.append(f"{name}: got {given_s}; {rng}")
        else:
            extra = f" ({rng})" if rng else ""
            lines.append(f"{name}: got {given_s}; {msg}{extra}")
    # one line each, whatever was given; a long quoted value (a 10,000-character name) is
    # elided so that the line still shows the field and the allowed values
    flat = [" ".join(line.splitlines()) for line in lines]
    return [_LONG_QUOTED.sub(r"\1\2...\1", f) if len(f) > 300 else f for f in flat]


def parse_config(obj: dict[str, Any] | BaseModel, notes: list[str] | None = None) -> Any:
    """Validate a mapping into the config model for its ``kind``; a config model (already
    validated: models are frozen) is returned as it is, so the typed model a page or the CLI
    validated once travels through the store and the runner without another pass.

    A mapping of an older shape is migrated first (:func:`core.config.migrations.migrate`); what the
    migration changed is appended to ``notes`` when a list is given. Any other pydantic model
    is dumped and validated as a mapping."""
    from core.config.files import ConfigFileError, check_shape
    from core.config.migrations import migrate

    if type(obj) in _CONFIG_TYPES:
        return obj
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    if not isinstance(obj, dict):
        raise ConfigError([f"config: got {type(obj).__name__}; expected a mapping with a 'kind' key"])
    try:
        check_shape(obj, "config")  # before anything recurses into it (deepcopy, pydantic)
    except ConfigFileError as exc:
        raise ConfigError([str(exc)]) from None
    kind = obj.get("kind")
    if "kind" in obj and not isinstance(kind, str):
        given = repr(kind) if len(repr(kind)) <= 60 else repr(kind)[:57] + "..."
        raise ConfigError([f"kind: got {given}; allowed: {', '.join(CONFIG_MODELS)}"])
    obj, changed = migrate(obj)
    if notes is not None:
        notes.extend(changed)
    if "kind" not in obj:
        raise ConfigError([f"kind: required field is missing; allowed: {', '.join(CONFIG_MODELS)}"])
    try:
        return _ADAPTER.validate_python(obj)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err)) from None
    except RecursionError:  # pragma: no cover - check_shape bounds the depth first
        raise ConfigError([f"config: nests too deeply; at most {MAX_DEPTH} levels"]) from None


def set_path(obj: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b.c = value`` inside nested dicts (for ``--set`` overrides)."""
    parts = dotted.split(".")
    cur = obj
    for p in parts[:-1]:
        nxt = cur.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[p] = nxt
        cur = nxt
    cur[parts[-1]] = value


def apply_overrides(obj: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key=value`` strings; values are parsed as YAML scalars (``1e-3``, ``true``, ``[a, b]``)."""
    from core.config.files import ConfigFileError, check_shape, parse_value

    try:
        check_shape(obj, "config")  # the JSON round trip below would expand YAML aliases
        out = json.loads(json.dumps(obj))
        for item in overrides:
            if "=" not in item:
                raise ConfigError([f"--set: got {item!r}; expected key=value, e.g. tradeoff_lambda=0.5"])
            key, raw = item.split("=", 1)
            apply_override(out, key.strip(), parse_value(raw, f"--set {key.strip()}"))
    except ConfigFileError as exc:
        raise ConfigError([str(exc)]) from None
    return out


def apply_override(obj: dict[str, Any], key: str, value: Any) -> None:
    """Set the dotted ``key`` to ``value`` in place (one ``--set`` item, one sweep grid knob)."""
    if key.endswith(".kind") and key != "kind":
        # switching a tagged block's kind starts a fresh block: the old kind's parameters
        # (λ of a tappfl block) do not belong to the new one
        set_path(obj, key[: -len(".kind")], {"kind": value})
        return
    set_path(obj, key, value)


def load_config(path: str | Path, overrides: list[str] | None = None) -> Any:
    """Load YAML or JSON from ``path`` (:mod:`core.config.files`: regular files of at most
    1 MiB, UTF-8, duplicate keys, nesting and alias expansion bounded), apply ``--set``
    overrides, validate. Every refusal is a one-line ConfigError."""
    from core.config.files import ConfigFileError, decode_utf8, parse_text, read_bytes

    p = Path(path)
    try:
        text = decode_utf8(read_bytes(p), p.name)
        obj = parse_text(text, p.name, json_=p.suffix.lower() == ".json")
    except ConfigFileError as exc:
        raise ConfigError([str(exc)]) from None
    if not isinstance(obj, dict):
        raise ConfigError([f"config file: {p.name} must hold a mapping with a 'kind' key"])
    return parse_config(apply_overrides(obj, overrides or []))


def canonical_json(config: BaseModel) -> str:
    """Sorted-key, compact JSON of the validated config with every default filled in, less
    the fields its model declares ``not_keyed`` (a sweep's executor: where, not what)."""
    dumped = config.model_dump(mode="json", exclude=set(getattr(config, "not_keyed", ())) or None)
    return json.dumps(dumped, sort_keys=True, separators=(",", ":"))


def cache_key(config: BaseModel) -> str:
    """sha256 of the canonical JSON of the validated config + the engine version and source
    fingerprint (DESIGN: Cache key): a code change never serves a stale run; a training override
    in force (:mod:`core.foundation.overrides`) is part of the key too."""
    from core.foundation.fingerprint import engine_id
    from core.foundation.overrides import active

    payload = canonical_json(config) + "|engine=" + engine_id()
    if active():
        payload += "|overrides=" + ",".join(active())
    return hashlib.sha256(payload.encode()).hexdigest()


# -- a sweep's points: validating a sweep is validating each of its points ---------------------

#: paths a grid may not set: the kind is the base's, seeds have their own list
_RESERVED = {"kind": "a sweep's points share the base's kind; sweep one of its fields",
             "seed": "set the sweep's seeds instead"}
#: at most this many problem lines in one error
_MAX_PROBLEMS = 5


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its knob ``values`` (grid path -> value), ``seed`` and validated
    ``config``."""

    values: dict[str, Any]
    seed: int
    config: Any

    @property
    def label(self) -> str:
        knobs = ", ".join(f"{p}={_short(v)}" for p, v in self.values.items())
        return f"{knobs}, seed={self.seed}" if knobs else f"seed={self.seed}"

    @property
    def key(self) -> str:
        return cache_key(self.config)


def _short(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))


def normalise_base(base: Any) -> dict[str, Any]:
    """The base validated (any kind but ``sweep``), as a mapping with defaults filled in.
    Raises :class:`ConfigError` whose lines name ``base.<field>``."""
    if isinstance(base, dict) and base.get("kind") == "sweep":
        raise ConfigError(["base.kind: got 'sweep'; a sweep of a sweep is not allowed "
                           + "(put both grids in one sweep)"])
    try:
        cfg = parse_config(base)
    except ConfigError as exc:
        raise ConfigError([f"base.{p}" for p in exc.problems]) from None
    if cfg.kind == "sweep":
        raise ConfigError(["base.kind: got 'sweep'; a sweep of a sweep is not allowed"])
    return cfg.model_dump(mode="json")


def _check_path(path: str) -> str | None:
    parts = path.split(".")
    if not path or any(not p for p in parts):
        return f"grid.{path}: not a dotted field path (e.g. defense.tradeoff_lambda)"
    if path in _RESERVED:
        return f"grid.{path}: {_RESERVED[path]}"
    return None


def _grid_problem(line: str, paths: list[str], label: str) -> str:
    """A point's validation problem as a grid problem: ``grid.<path>: ...`` when it is about a
    grid path (or an unknown block on the way to one), else naming the point."""
    name, _, rest = line.partition(":")
    for p in paths:
        if name == p or name.startswith(p + "."):
            return f"grid.{line}"
    if rest.strip().startswith("unknown field"):
        for p in paths:
            if p.startswith(name + "."):
                return f"grid.{p}: unknown field"
    return f"grid point {label}: {line}"


def expand(sweep: Any) -> list[Point]:
    """The points of a sweep (a :class:`~core.config.schema.SweepConfig`), grid order, seeds
    innermost. Every point is validated; the problems (at most five) are one ConfigError."""
    paths = list(sweep.grid)
    problems = [p for p in map(_check_path, paths) if p]
    if problems:
        raise ConfigError(problems)
    n = math.prod(len(v) for v in sweep.grid.values()) * len(sweep.seeds)
    if n > MAX_SWEEP_POINTS:
        raise ConfigError([f"grid: got {n} points (grid × seeds); allowed at most {MAX_SWEEP_POINTS}"])
    # a ``.kind`` path starts a fresh block (apply_override): set it before its block's fields
    order = sorted(range(len(paths)), key=lambda i: (not paths[i].endswith(".kind"), i))
    points: list[Point] = []
    seen: set[str] = set()
    for combo in itertools.product(*sweep.grid.values()):
        values = dict(zip(paths, combo, strict=True))
        for seed in sweep.seeds:
            obj = copy.deepcopy(sweep.base)
            for i in order:
                apply_override(obj, paths[i], copy.deepcopy(combo[i]))
            obj["seed"] = seed
            point = Point(values=values, seed=seed, config=None)
            try:
                cfg = parse_config(obj)
            except ConfigError as exc:
                for line in exc.problems:
                    msg = _grid_problem(line, paths, point.label)
                    if msg not in seen:
                        seen.add(msg)
                        problems.append(msg)
                continue
            points.append(Point(values=values, seed=seed, config=cfg))
    if problems:
        more = len(problems) - _MAX_PROBLEMS
        raise ConfigError(problems[:_MAX_PROBLEMS] + ([f"grid: ... and {more} more problems"]
                                                      if more > 0 else []))
    return points
