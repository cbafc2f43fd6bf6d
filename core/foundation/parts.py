"""Defenses and attacks as registered parts (DESIGN: Architecture).

A :class:`DefensePart` names its config block (a tagged pydantic model carrying only its own
parameters), the release it produces (:class:`Releases`, per family), its privacy knob, its
accounting, its builder (:class:`Builders`, per family) and whether it is its families'
undefended baseline; what a page draws for it (controls, live readouts, variants, the fixed
points a comparison may add, its order) is its :class:`PageSpec`, what its paper claims its
:class:`PaperSpec`. No module outside :mod:`core.catalog` and this one
compares a part's name with a string (``benchmarks/registry_bench.py`` counts it). An :class:`AttackPart` declares
everything a runner, a config and a page need: its :class:`Family`, the name a user writes in
``cfg.attack.attackers`` (:attr:`AttackPart.key`), one display title, the releases it accepts,
what else it needs, whether its scores pool over several target models, its metric names and
its protocol function. Registering a part here is the one edit that makes it appear in the
config's allowed names, the metric schema, the page's attacker list and ``privlab parts``.

Queries: :func:`attacks_for`, :func:`attack_by_config_name`, :func:`config_names`,
:func:`attack_titles`, :func:`defenses_for`; :func:`check_attackers` and
:func:`check_combination` run at config validation (one-line errors), and the pages read the
same entries to grey out what does not apply.

This module is light (no torch): builders and attack functions are ``"module:attr"`` strings
imported on use, every one resolved by ``tests/test_registry_strings.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from core.foundation.knowledge import ThreatModel
from core.foundation.registry import Registry, UnknownName

Direction = Literal["higher_is_more_private", "lower_is_more_private"]

#: what an attack may need beyond the release it observes (its threat card says it in words)
NEEDS = {
    "labels": "the candidate records' labels",
    "shadows": "shadow models trained the target's way on halves of a pool",
    "shadow_encoders": "shadow encoders trained the target's way (defense and λ included) on "
                       "halves of a pool, and their representations of the pool and population",
    "references": "reference (OUT) models and population records z never trained on",
    "encoder": "the released encoder (white box or as a query interface)",
    "aux": "auxiliary records with their private values",
    "in_training": "the defense's own adversary, trained inside its game",
    "gradients": "the uploaded gradient or update and the global model it started from",
    "model": "the released model's weights (white box)",
    "training_data": "every training value but the target's (FIL's white-box attacker)",
}


@dataclass(frozen=True)
class Family:
    """An attack family (one experiment kind): its metric names are
    ``metric_template.format(who=<attack's metric key>, stat=<stat>)`` for each of its
    attacks' ``stats`` (the family's ``stats`` unless an attack declares its own)."""

    name: str
    title: str
    metric_template: str
    stats: tuple[str, ...]
    #: ``"module:attr"`` of its per-record extractor, ``fn(result, attack=None) ->
    #: core.attacks.exposure_records.RecordScores`` (higher = more exposed); None: its runs keep no
    #: per-record scores
    exposure: str | None = None
    #: ``"module:attr"`` of its self-test input, ``fn() -> (release, knowledge, settings)``: a
    #: small seeded release, and settings that keep the attacks quick on it (applied where an
    #: attack's settings block has the field), on which the registry compares a new attack's
    #: scores with every existing one's (:func:`same_score_as`); None: no comparison
    self_test: str | None = None


FAMILIES: Registry[Family] = Registry("family")
for _f in (
        Family("attribute_privacy", "attribute inference on released representations",
               "attack_{who}_{stat}", ("acc", "bacc", "auc", "adv", "ce_nats"),
               exposure="core.attacks.exposure_records:attribute_records",
               self_test="core.attacks.attribute:self_test_records"),
        Family("membership", "membership inference", "mia_{who}_{stat}",
               ("auc", "adv", "bacc", "tpr_at_1pct_fpr", "tpr_at_0p1pct_fpr",
                "epsilon_lower_bound"), exposure="core.attacks.exposure_records:membership_records",
               self_test="core.attacks.membership:self_test_records"),
        Family("property", "property inference on aggregated representations",
               "property_{who}_{stat}", ("acc", "bacc", "auc", "ce_nats", "gap")),
        Family("gradient_leakage", "reconstruction from uploaded gradients", "recon_{who}_{stat}",
               ("mse", "psnr", "psnr_median", "ssim", "label_acc", "seconds"),
               exposure="core.attacks.exposure_records:gradient_records"),
        Family("repr_reconstruction", "reconstruction from shared representations r + δ",
               "recon_{who}_{stat}", ("mse", "psnr", "ssim", "frac_l2_ge_eta",
                                      "frac_linf_ge_eta")),
        Family("fisher_information", "attribute reconstruction from a perturbed GLM",
               "fil_attack_{who}_{stat}", ("acc",),
               exposure="core.attacks.exposure_records:fil_records")):
    FAMILIES.register(_f.name, _f)


def field_bounds(block: type, field: str) -> tuple[float, float]:
    """[low, high] of a pydantic ``block``'s numeric ``field`` (:func:`core.foundation.checks.field_range`).
    A knob's slider ends on values the block accepts, so both ends must be closed (``Ge`` and
    ``Le``); an open or a missing end is a ValueError naming the field."""
    from core.foundation.checks import field_range

    r = field_range(block, field)
    if r["lo"] is None or r["hi"] is None or r["lo_open"] or r["hi_open"]:
        raise ValueError(f"{block.__name__}.{field}: a knob needs closed bounds (Ge and Le) "
                         "on its field")
    return float(r["lo"]), float(r["hi"])


@dataclass(frozen=True)
class Knob:
    """A defense's privacy knob: the block ``field``, its symbol and range, the slider scale,
    and which way is more private."""

    field: str
    symbol: str
    label: str
    low: float
    high: float
    scale: Literal["linear", "log"]
    direction: Direction
    #: the metric a run reports the knob's effective budget under (Compare's x axis)
    budget_metric: str | None = None
    #: the knob values a comparison sweeps by default (core.runs.compare); empty: five values
    #: spread over [low, high] on the knob's scale
    grid: tuple[float, ...] = ()
    #: the few values a page's teaching sweep (its tradeoff curve) runs, chosen so that the
    #: knob visibly moves the page's metric in minutes on a CPU; empty: the comparison grid
    teaching: tuple[float, ...] = ()
    #: a slider's positions (a select slider over them); empty: a slider over [low, high] with
    #: ``step`` on a linear scale, a 1-2-5 ladder over [low, high] on a log scale
    options: tuple[float, ...] = ()
    #: a linear slider's step; None: a 1-2-5 step giving about 20 positions over [low, high]
    step: float | None = None
    #: (family, ((field, value), ...)): fields whose value differs on one family's page (the κ
    #: channel slides and sweeps other κ on the membership page than in gradient leakage);
    #: read through :meth:`for_family`
    family_fields: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()
    #: the knob's range and grids are per input dimension (κ/d on the gradient-leakage page):
    #: :meth:`for_dim` turns them into values for data of dimension d
    per_dim: bool = False

    @classmethod
    def of(cls, block: type, field: str, symbol: str, label: str,
           scale: Literal["linear", "log"], direction: Direction, **kw: Any) -> Knob:
        """The knob on ``block``'s field ``field``, its [low, high] read from the field's
        constraints (:func:`field_bounds`): a range is written once, on the block."""
        low, high = field_bounds(block, field)
        return cls(field, symbol, label, low, high, scale, direction, **kw)

    def for_family(self, family: str | None) -> Knob:
        """This knob as ``family``'s page shows it (its :attr:`family_fields` applied)."""
        from dataclasses import replace

        fields = dict(self.family_fields).get(family) if family else None
        return replace(self, family_fields=(), **dict(fields)) if fields else self

    def for_dim(self, d: int) -> Knob:
        """A :attr:`per_dim` knob for data of dimension ``d``: [low, high], the grids and the
        options times d, its positions the 1-2-5 ladder over [low·d, high·d] (1 % slack at the
        ends: low·d seldom falls on a 1-2-5 value); any other knob unchanged."""
        from dataclasses import replace

        if not self.per_dim:
            return self

        def times(vals: tuple[float, ...]) -> tuple[float, ...]:
            return tuple(float(f"{v * d:.6g}") for v in vals)

        low, high = self.low * d, self.high * d
        return replace(self, per_dim=False, low=low, high=high, grid=times(self.grid),
                       teaching=times(self.teaching),
                       options=times(self.options) if self.options else ladder(low, high, 0.01))

    @property
    def more_private(self) -> str:
        """``"higher"`` or ``"lower"``: which way of the knob is more private."""
        return "higher" if self.direction == "higher_is_more_private" else "lower"

    def spread(self, n: int = 5) -> tuple[float, ...]:
        """``n`` values over [low, high] on the knob's scale (4 significant digits)."""
        lo, hi = self.low, self.high
        if self.scale == "log" and lo > 0:
            vals = [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)]
        else:
            vals = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
        return tuple(float(f"{v:.4g}") for v in vals)

    def comparison_grid(self) -> tuple[float, ...]:
        """The values a comparison sweeps by default: :attr:`grid`, else :meth:`spread`."""
        return tuple(float(v) for v in self.grid) or self.spread()

    def teaching_grid(self) -> tuple[float, ...]:
        """The values a page's teaching sweep runs: :attr:`teaching`, else the comparison
        grid."""
        return tuple(float(v) for v in self.teaching) or self.comparison_grid()

    def slider_step(self) -> float:
        """A linear slider's step: :attr:`step`, else a 1-2-5 step of about 20 positions."""
        import math

        if self.step is not None:
            return float(self.step)
        raw = (self.high - self.low) / 20
        mag = 10 ** math.floor(math.log10(raw))
        return float(f"{min((m * mag for m in (1, 2, 5, 10)), key=lambda s: abs(s - raw)):.6g}")

    def positions(self) -> tuple[float, ...]:
        """A select slider's positions: :attr:`options`, else on a log scale the 1-2-5 ladder
        over [low, high] with the teaching grid added (each swept value can be shown); empty
        on a linear scale (a continuous slider with :meth:`slider_step`)."""

        if self.options:
            return tuple(float(v) for v in self.options)
        if self.scale != "log" or self.low <= 0:
            return ()
        return tuple(sorted(set(ladder(self.low, self.high)) | set(self.teaching_grid())))


def ladder(low: float, high: float, slack: float = 1e-4) -> tuple[float, ...]:
    """The 1-2-5 values of every decade within [low, high] (``low`` > 0), ascending; values
    within the relative ``slack`` outside an end are kept."""
    import math

    out = set()
    e = math.floor(math.log10(low))
    while 10.0 ** e <= high * (1 + slack):
        out.update(float(f"{m * 10.0 ** e:.6g}") for m in (1, 2, 5))
        e += 1
    return tuple(sorted(v for v in out if low * (1 - slack) <= v <= high * (1 + slack)))


@dataclass(frozen=True)
class Control:
    """A block field a family's page draws for a defense besides its knob: the widget follows
    the field's type (a ``Literal`` a choice, a ``bool`` a checkbox, a bounded number a number
    box with the field's own range, :mod:`dashboard.components.part_controls`)."""

    field: str
    #: the widget's label (default: the field's name in words)
    label: str | None = None
    #: the widget's help (default: the field's description)
    help: str | None = None
    #: the families whose pages draw it (empty: every family of the defense)
    families: tuple[str, ...] = ()
    #: a choice drawn as a segmented control (few options) instead of a select box
    segmented: bool = False


@dataclass(frozen=True)
class FixedPoint:
    """A setting of a defense a comparison may add beside its knob sweep (DP-SGD's ε = ∞:
    clipping without noise): ``params`` are block fields."""

    label: str
    params: tuple[tuple[str, Any], ...]
    #: what the widget offering it says
    question: str = ""
    help: str = ""


@dataclass(frozen=True)
class Releases:
    """What the adversary observes under a defense: its ``main`` release, where it differs by
    family (``none`` releases representations in attribute privacy and uploads in gradient
    leakage), and what it releases besides there (Inf2Guard's membership defense publishes its
    encoder's representations r too)."""

    main: str
    #: (family, release) pairs where the release differs from :attr:`main`
    per_family: tuple[tuple[str, str], ...] = ()
    #: (family, release) pairs released besides the main release there
    extra: tuple[tuple[str, str], ...] = ()

    def for_family(self, family: str) -> str:
        return dict(self.per_family).get(family, self.main)

    def all_for(self, family: str) -> tuple[str, ...]:
        """Every release of ``family``, the main one first."""
        return (self.for_family(family), *(r for f, r in self.extra if f == family))


@dataclass(frozen=True)
class Builders:
    """Where a defense's builder lives: ``"core.module:builder"`` (imported on use; a test
    resolves every one) or, for a part defined outside privlab, the callable itself; with
    the families whose runner builds it another way (``none`` trains plainly outside the
    FedAvg family)."""

    default: str | Callable[..., Any]
    per_family: tuple[tuple[str, str | Callable[..., Any]], ...] = ()

    def for_family(self, family: str) -> str | Callable[..., Any]:
        return dict(self.per_family).get(family, self.default)


@dataclass(frozen=True)
class PageSpec:
    """How pages and comparisons show a defense besides its knob."""

    #: the block fields a page draws besides the knob (:meth:`DefensePart.controls_for`)
    controls: tuple[Control, ...] = ()
    #: (family, ``"module:attr"``): the closed-form panel a family's page shows before any run
    #: (``fn(cfg, spec, shape, basis=None) -> {"cards", "notes", ...}``)
    readouts: tuple[tuple[str, str], ...] = ()
    #: a choice field of the block whose values are defenses of their own on a comparison
    #: plane (the κ channel's Natural / White / ...; core.runs.compare, the Compare page)
    variants: str | None = None
    #: (value, title) of the :attr:`variants` field's values where a page names them (default:
    #: the value capitalised)
    variant_titles: tuple[tuple[str, str], ...] = ()
    #: settings a comparison may add beside the knob sweep
    fixed_points: tuple[FixedPoint, ...] = ()
    #: where it is listed (pages, unions, ``privlab parts``): by ``order``, then registration
    order: int = 1000


@dataclass(frozen=True)
class PaperSpec:
    """What the defense's paper claims (the lessons check the claims on a comparison)."""

    #: defenses its paper claims it keeps more utility than at equal attack success
    outperforms: tuple[str, ...] = ()
    #: the name its paper's claims use (default: the title)
    short_title: str = ""


#: DefensePart keywords of the first, flat declaration shape -> (group, the group's field);
#: a declaration written that way still reads (one spelling is stored: the groups)
_FLAT = {"controls": ("page", "controls"), "readouts": ("page", "readouts"),
         "variants": ("page", "variants"), "variant_titles": ("page", "variant_titles"),
         "fixed_points": ("page", "fixed_points"), "order": ("page", "order"),
         "outperforms": ("paper", "outperforms"), "short_title": ("paper", "short_title"),
         "family_releases": ("release", "per_family"), "extra_releases": ("release", "extra"),
         "family_builders": ("builder", "per_family")}


@dataclass(frozen=True, init=False)
class DefensePart:
    """A registered defense: the engine's concerns as fields (its config block, release, knob,
    accounting, builder, whether it is its families' undefended baseline), the page's and
    the paper's in typed groups (:class:`PageSpec`, :class:`PaperSpec`). ``release`` and
    ``builder`` may be written as a string (one release, one builder for every family).
    Where the first config shape kept the block's parameters is the block's own
    ``legacy_fields`` (:mod:`core.config.migrations`)."""

    name: str
    title: str
    families: tuple[str, ...]
    release: Releases
    knob: Knob | None
    #: accountant name (:data:`core.bounds.accountants.ACCOUNTANTS`) or None for defenses with
    #: no formal guarantee, measured by attacks only
    accounting: str | None
    builder: Builders
    description: str
    #: the config block (a :class:`core.config.base.Block` with ``kind: Literal[name]``); the
    #: config unions of its families are generated from it (:func:`defense_blocks`)
    config: type | None
    #: the undefended baseline of its families (the plane's reference point)
    baseline: bool
    page: PageSpec
    paper: PaperSpec

    def __init__(self, name: str, title: str, families: tuple[str, ...],
                 release: str | Releases, knob: Knob | None, accounting: str | None,
                 builder: str | Callable[..., Any] | Builders, description: str = "",
                 config: type | None = None, baseline: bool = False,
                 page: PageSpec = PageSpec(), paper: PaperSpec = PaperSpec(),
                 **flat: Any) -> None:
        from dataclasses import replace

        groups: dict[str, Any] = {
            "release": release if isinstance(release, Releases) else Releases(release),
            "builder": builder if isinstance(builder, Builders) else Builders(builder),
            "page": page, "paper": paper}
        for key, value in flat.items():
            if key not in _FLAT:
                raise TypeError(f"DefensePart: got an unknown keyword {key!r}")
            group, field_ = _FLAT[key]
            groups[group] = replace(groups[group], **{field_: value})
        for key, value in (("name", name), ("title", title), ("families", tuple(families)),
                           ("knob", knob), ("accounting", accounting),
                           ("description", description), ("config", config),
                           ("baseline", baseline), *groups.items()):
            object.__setattr__(self, key, value)

    def controls_for(self, family: str) -> tuple[Control, ...]:
        """The controls ``family``'s page draws for this defense."""
        return tuple(c for c in self.page.controls if not c.families or family in c.families)

    def variant_values(self) -> tuple[str, ...]:
        """The values of the page's variants field (a ``Literal`` of the block); empty
        without one."""
        import typing

        if not self.page.variants or self.config is None:
            return ()
        return tuple(str(v) for v in typing.get_args(
            self.config.model_fields[self.page.variants].annotation))

    def readout_for(self, family: str) -> str | None:
        """``"module:attr"`` of ``family``'s live readout, None where it declares none."""
        return dict(self.page.readouts).get(family)

    @property
    def short(self) -> str:
        return self.paper.short_title or self.title

    def release_for(self, family: str) -> str:
        """The release this defense produces in ``family``."""
        return self.release.for_family(family)

    def releases_for(self, family: str) -> tuple[str, ...]:
        """Every release the adversary observes in ``family`` (the main one first)."""
        return self.release.all_for(family)

    def builder_for(self, family: str) -> str | Callable[..., Any]:
        """The builder the ``family``'s runner calls (``"module:attr"`` or the callable)."""
        return self.builder.for_family(family)


@dataclass(frozen=True)
class AttackPart:
    """A registered attack: everything a config, a runner, the metric schema and a page need.

    ``function`` is the protocol function the runner calls through
    :func:`core.attacks.protocol.run_attack` as ``function(release, knowledge, **options,
    **settings)``; its ``settings`` block (a :class:`core.config.base.Block` declared in its
    own catalog module) holds the ``cfg.attack`` fields it reads, with their ranges: the
    family's attack config carries every attack's block (:func:`core.config.schema.attack_spec`) and
    validates the chosen attacks' settings by their blocks. ``options`` are fixed keyword
    arguments (the preset a shared function runs). ``config_name`` is what a user writes in
    ``cfg.attack.attackers`` (default: ``name``); ``metric_key`` the ``{who}`` of its metric
    names (default: the config name)."""

    name: str
    title: str
    accepts: tuple[str, ...]
    threat: ThreatModel
    #: ``"core.module:function"`` (imported on use) or, for an attack defined outside
    #: privlab, the callable itself
    function: str | Callable[..., Any]
    #: a fresh attacker (trained after the defense)
    fresh: bool = False
    #: what kind of adversary: "in_training" (the one the defense trained against), "fresh",
    #: "baseline" (no model)
    role: Literal["in_training", "fresh", "baseline"] = "fresh"
    #: its settings block: the ``cfg.attack`` fields it reads, with their ranges (None: none)
    settings: type | None = None
    #: ``cfg.attack`` fields it reads besides its block's (a family's own field); a name the
    #: family's config does not carry is a one-line error at validation
    params: tuple[str, ...] = field(default_factory=tuple)
    family: str = "attribute_privacy"
    config_name: str | None = None
    #: keys of :data:`NEEDS`: what it reads beyond the release
    needs: tuple[str, ...] = ()
    #: its scores pool over several target models (the target and shadow models, each scored
    #: against the others: ML Privacy Meter's protocol)
    pools_targets: bool = False
    #: the stat suffixes of its metrics (None: its family's)
    stats: tuple[str, ...] | None = None
    metric_key: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    #: ``cfg.attack.attackers`` may list it (False: the runner always runs it, or another
    #: switch does: the in-training adversary, the prior, model inversion)
    selectable: bool = True
    #: registered :data:`SIGNALS` it reads (the runner computes each once per model)
    signals: tuple[str, ...] = ()
    #: where it is listed: by ``order``, then registration
    order: int = 1000

    def __post_init__(self) -> None:
        unknown = [n for n in self.needs if n not in NEEDS]
        if unknown:
            raise ValueError(f"needs of attack {self.name!r}: got {unknown[0]!r}; allowed: "
                             f"{', '.join(NEEDS)}")
        for sig in self.signals:
            SIGNALS.get(sig)

    def setting_names(self) -> tuple[str, ...]:
        """The ``cfg.attack`` fields it is called with: its block's, then its ``params``."""
        own = tuple(self.settings.model_fields) if self.settings is not None else ()
        return own + tuple(p for p in self.params if p not in own)

    @property
    def key(self) -> str:
        """The name a user writes in ``cfg.attack.attackers``."""
        return self.config_name or self.name

    @property
    def who(self) -> str:
        """The ``{who}`` of its metric names."""
        return self.metric_key or self.key

    def stat_names(self) -> tuple[str, ...]:
        return FAMILIES.get(self.family).stats if self.stats is None else self.stats

    def metric_name(self, stat: str) -> str:
        return FAMILIES.get(self.family).metric_template.format(who=self.who, stat=stat)

    def metric_names(self) -> tuple[str, ...]:
        """Every metric name a run reports for this attack."""
        return tuple(self.metric_name(s) for s in self.stat_names())


@dataclass(frozen=True)
class Signal:
    """What an attack reads from one model (ML Privacy Meter's signals): ``function(predict,
    X, y, *, image_shape, seed) -> np.ndarray`` (n, ...) with ``predict(X) -> class
    probabilities (n, C)`` the model's query interface. The runner computes each signal the
    chosen attacks declare once per model (the target, each shadow) inside its cached model
    stages."""

    name: str
    title: str
    function: str | Callable[..., Any]
    description: str = ""


#: the part declarations register themselves on import; the registries import them (the
#: :mod:`core.catalog` package, every module in it) on their first read
_CATALOG = "core.catalog"
SIGNALS: Registry[Signal] = Registry("signal", loader=_CATALOG)
DEFENSES: Registry[DefensePart] = Registry("defense", loader=_CATALOG,
                                           order=lambda d: d.page.order)
ATTACKS: Registry[AttackPart] = Registry("attack", loader=_CATALOG, order=lambda a: a.order,
                                         check=lambda name, part: _refuse_same_score(part))


#: a part's outputs on its family's self-test (each part is run on it once per process)
_SELF_TEST: dict[AttackPart, list[Any] | None] = {}


def self_test_scores(part: AttackPart) -> list[Any] | None:
    """``part``'s outputs on its family's self-test records (:attr:`Family.self_test`) as a list
    of arrays (every array field of what it returns), called with its settings' defaults;
    None where the family has no self-test or the records lack what the attack needs."""
    import dataclasses
    import inspect

    import numpy as np

    from core.foundation.registry import load_object

    fam = FAMILIES.get(part.family)
    if fam.self_test is None:
        return None
    if part in _SELF_TEST:
        return _SELF_TEST[part]
    release, knowledge, quick = load_object(fam.self_test)()
    try:
        fn = load_object(part.function)
    except (ValueError, ImportError, AttributeError):  # tests/test_registry_strings.py says why
        return None
    settings = part.settings().model_dump() if part.settings else {}
    kw = {**dict(part.options), **settings,
          **{k: v for k, v in quick.items() if k in settings}}
    params = inspect.signature(fn).parameters
    if "seed" in params:
        kw["seed"] = 0
    try:
        out = fn(release, knowledge, **kw)
    except (ValueError, TypeError, KeyError):  # the records lack what it reads
        _SELF_TEST[part] = None
        return None
    values = ([getattr(out, f.name) for f in dataclasses.fields(out)]
              if dataclasses.is_dataclass(out) else [out])
    names = ([f.name for f in dataclasses.fields(out)] if dataclasses.is_dataclass(out)
             else ["value"])
    # arrays and numbers compared as floats, a score's orientation as itself; labels such as
    # an output's attacker name are not scores
    _SELF_TEST[part] = [v if isinstance(v, str) else np.asarray(v, dtype=float)
                        for n, v in zip(names, values, strict=True)
                        if isinstance(v, np.ndarray | list | tuple | float | int)
                        or (isinstance(v, str) and n == "direction")]
    return _SELF_TEST[part]


def same_score_as(part: AttackPart) -> str | None:
    """The name of a registered attack of ``part``'s family (other than ``part``) whose
    outputs on the family's self-test records equal ``part``'s (score arrays within
    ``np.allclose``, the same orientation), None where none does."""
    import numpy as np

    mine = self_test_scores(part)
    if mine is None:
        return None
    for other in attacks_for(part.family):
        if other.name == part.name:
            continue
        theirs = self_test_scores(other)
        if theirs is not None and len(theirs) == len(mine) and all(
                a == b if isinstance(a, str) or isinstance(b, str)
                else a.shape == b.shape and np.allclose(a, b, equal_nan=True)
                for a, b in zip(mine, theirs, strict=True)):
            return other.name
    return None


def _refuse_same_score(part: AttackPart) -> None:
    """The attack registry's check: a new attack must compute something no registered attack
    of its family computes (a one-line ValueError names the twin)."""
    twin = same_score_as(part)
    if twin is not None:
        raise ValueError(f"attack: {part.name!r} scores the {part.family} self-test records "
                         f"exactly as {twin!r} does; register a new attack only for a new score")

# -- queries: configs, the metric schema, pages and the CLI read these ------------------------


def attacks_for(family: str) -> list[AttackPart]:
    """The attacks of ``family`` in registration order (an unknown family: one-line error)."""
    FAMILIES.get(family)
    return [a for a in ATTACKS.values() if a.family == family]


def config_names(family: str) -> tuple[str, ...]:
    """The names ``cfg.attack.attackers`` of ``family`` may hold, in registration order."""
    return tuple(a.key for a in attacks_for(family) if a.selectable)


def attack_by_config_name(family: str, name: str) -> AttackPart:
    """The part a ``family`` config names ``name`` (membership's ``loss`` is ``mia_loss``)."""
    for a in attacks_for(family):
        if a.key == name:
            return a
    raise UnknownName(f"attack: got {name!r}; allowed for {family}: "
                      f"{', '.join(a.key for a in attacks_for(family))}")


def attack_titles(family: str) -> dict[str, str]:
    """Config name -> the one display title, for every attack of ``family``."""
    return {a.key: a.title for a in attacks_for(family)}


def defense_blocks(family: str) -> tuple[type, ...]:
    """The config blocks of ``family``'s registered defenses (its config union's members)."""
    return tuple(d.config for d in DEFENSES.values()
                 if family in d.families and d.config is not None)


def baseline_for(family: str) -> str | None:
    """The name of ``family``'s undefended baseline defense, None where it has none."""
    return next((n for n, d in DEFENSES.items() if family in d.families and d.baseline), None)


def is_baseline(name: str) -> bool:
    """Whether the registered defense ``name`` is an undefended baseline (False for a name
    that is not registered)."""
    return name in DEFENSES and DEFENSES.get(name).baseline


def budget_metrics(family: str) -> dict[str, str | None]:
    """Defense -> the metric its runs report its budget under (its knob's), for ``family``."""
    return {n: (d.knob.budget_metric if d.knob else None) for n, d in DEFENSES.items()
            if family in d.families}


def defenses_for(family: str) -> list[str]:
    """Registered defenses of ``family`` (``none`` included)."""
    return [n for n, d in DEFENSES.items() if family in d.families]


def applicable_attacks(release: str) -> list[str]:
    """Attack names that accept ``release``."""
    return [n for n, a in ATTACKS.items() if release in a.accepts]


def check_attackers(family: str, attackers: Iterable[str]) -> None:
    """Raise ValueError (one line, field ``attackers``) unless ``attackers`` is a non-empty
    list of distinct config names of ``family``."""
    allowed = config_names(family)
    attackers = list(attackers)
    if not attackers:
        raise ValueError(f"attackers: got an empty list; choose from {', '.join(allowed)}")
    for a in attackers:
        if a not in allowed:
            raise ValueError(f"attackers: got {a!r}; allowed: {', '.join(allowed)}")
    if len(set(attackers)) != len(attackers):
        raise ValueError(f"attackers: got {attackers}; each attacker at most once")


def check_combination(family: str, defense: str, attackers: Iterable[str]) -> None:
    """Raise ValueError (one line naming the field) if the defense does not belong to the
    family or an attacker (a config name of ``family``) accepts none of the releases the
    defense produces there."""
    part = DEFENSES.get(defense)
    if family not in part.families:
        raise ValueError(f"defense.kind: got {defense!r}; allowed for {family}: "
                         f"{', '.join(defenses_for(family))}")
    releases = part.releases_for(family)
    for name in attackers:
        att = attack_by_config_name(family, name)
        if not set(att.accepts) & set(releases):
            ok = [a.key for a in attacks_for(family)
                  if a.selectable and set(a.accepts) & set(releases)]
            raise ValueError(
                f"attack.attackers: {name!r} attacks {' or '.join(att.accepts)} releases; "
                f"defense {defense!r} releases {' and '.join(r + 's' for r in releases)} "
                f"(allowed here: {', '.join(ok)})")


def _object_path(obj: str | Callable[..., Any]) -> str:
    """A registry entry's ``"module:attr"`` (a callable registered directly reads the same; a
    callable object may say where it lives in its ``object_path``)."""
    if isinstance(obj, str):
        return obj
    return getattr(obj, "object_path", None) or f"{obj.__module__}:{obj.__qualname__}"


def describe() -> dict[str, list[dict[str, Any]]]:
    """Every registered defense, attack and architecture as plain data (``privlab parts``;
    the architectures without their costs, which :func:`describe_models` computes)."""
    defenses = []
    for name, d in DEFENSES.items():
        k = d.knob
        defenses.append({
            "name": name, "title": d.title, "families": list(d.families),
            "release": {f: list(d.releases_for(f)) for f in d.families},
            "knob": None if k is None else {
                "field": k.field, "symbol": k.symbol, "label": k.label, "low": k.low,
                "high": k.high, "scale": k.scale, "direction": k.direction},
            "accounting": d.accounting, "baseline": d.baseline,
            "controls": {f: [c.field for c in d.controls_for(f)] for f in d.families},
            "builder": {f: _object_path(d.builder_for(f)) for f in d.families}})
    attacks = [{"name": name, "config_name": a.key, "family": a.family, "title": a.title,
                "accepts": list(a.accepts), "needs": list(a.needs), "role": a.role,
                "selectable": a.selectable, "pools_targets": a.pools_targets,
                "signals": list(a.signals),
                "threat": a.threat.as_dict(), "metrics": list(a.metric_names()),
                "function": _object_path(a.function)}
               for name, a in ATTACKS.items()]
    return {"defenses": defenses, "attacks": attacks, "models": describe_models()}


# -- architectures ----------------------------------------------------------------------------

#: the kinds of input an architecture may accept
INPUT_KINDS = ("image", "tabular")


def input_kind(in_shape: Iterable[int]) -> tuple[str, tuple[int, int, int]]:
    """(``"tabular"`` or ``"image"``, (C, H, W)) of a data set's input shape: (d,) and the
    runners' (1, 1, d) are tabular rows, any other (C, H, W) an image; else a one-line
    ValueError."""
    try:
        shape = tuple(int(s) for s in in_shape)
    except (TypeError, ValueError):
        shape = ()
    if len(shape) == 1 and shape[0] >= 1:
        return "tabular", (1, 1, shape[0])
    if len(shape) == 3 and min(shape) >= 1:
        return ("tabular" if shape[:2] == (1, 1) else "image"), shape  # type: ignore[return-value]
    raise ValueError(f"in_shape: got {tuple(in_shape) if isinstance(in_shape, Iterable) else in_shape!r}; "
                     "allowed: (d,) for tabular rows or (C, H, W) for images, every side >= 1")


@dataclass(frozen=True)
class ArchitecturePart:
    """A registered model architecture (DESIGN: nn.py, models/): how to build it, what input it
    takes and what it costs.

    ``builder(shape, n_classes, *, width, role) -> nn.Module`` (``"module:attr"``, imported on
    use) builds one of its :attr:`roles` for images of ``shape`` = (C, H, W) *as the network
    sees them* (after the declared resize); :func:`core.models.build_model` puts the
    :class:`core.models.common.ImageInput` (flat rows → images, the resize) in front of the
    roles that read images (:attr:`image_roles`) when :attr:`adapt`. ``"classifier"`` is the
    model a runner trains (encoder and utility head for the papers' split networks).

    ``side`` / ``resize``: the image side the network is made for and when a data set's images
    are bilinearly resized to it ("never", "smaller": only a smaller side grows, "always").
    ``widths`` the [low, high] of the width multiplier, ``cpu_width`` the narrower copy of the
    same family a CPU run uses (stated on screen, :meth:`width_label`). ``reference``: the
    (input shape, classes) its parameter count and cost are quoted at; ``paper_params``:
    (role, count) the source states for that reference (checked by the tests and the
    ``models`` benchmark)."""

    name: str
    title: str
    builder: str | Callable[..., Any]
    inputs: tuple[str, ...] = ("image",)
    #: the image channel counts it takes (None: any)
    channels: tuple[int, ...] | None = (1, 3)
    side: int | None = None
    resize: Literal["never", "smaller", "always"] = "never"
    adapt: bool = True
    roles: tuple[str, ...] = ("classifier",)
    image_roles: tuple[str, ...] = ("classifier", "encoder")
    widths: tuple[float, float] = (0.0625, 4.0)
    cpu_width: float = 1.0
    reference: tuple[tuple[int, ...], int] = ((3, 32, 32), 10)
    paper_params: tuple[tuple[str, int], ...] = ()
    source: str = ""
    description: str = ""
    order: int = 1000

    def __post_init__(self) -> None:
        bad = [k for k in self.inputs if k not in INPUT_KINDS]
        if bad or not self.inputs:
            raise ValueError(f"inputs of architecture {self.name!r}: got {list(self.inputs)}; "
                             f"allowed: a non-empty subset of {', '.join(INPUT_KINDS)}")
        if not self.roles or self.roles[0] != "classifier":
            raise ValueError(f"roles of architecture {self.name!r}: got {list(self.roles)}; "
                             "the first role must be 'classifier'")
        lo, hi = self.widths
        if not 0 < lo <= self.cpu_width <= hi:
            raise ValueError(f"cpu_width of architecture {self.name!r}: got {self.cpu_width}; "
                             f"allowed: [{lo:g}, {hi:g}]")

    # -- checks (light: a config validator calls them) -----------------------------------------

    def needs(self) -> str:
        """What input it needs, in words."""
        if "image" not in self.inputs:
            return "tabular rows"
        c = self.reference[0][0] if len(self.reference[0]) == 3 else 3
        if self.side is None:
            return "an image input (C×H×W)"
        return (f"an image input ({c}×{self.side}×{self.side}"
                + (" or resized)" if self.resize != "never" else ")"))

    def check_input(self, in_shape: Iterable[int], data: str | None = None) -> tuple[int, int, int]:
        """(C, H, W) of ``in_shape`` if this architecture takes it, else the one-line
        ValueError naming the architecture and the data."""
        kind, shape = input_kind(in_shape)
        what = f"data {data!r}" if data else "the data"
        if kind not in self.inputs:
            desc = "tabular" if kind == "tabular" else f"an image input ({'×'.join(map(str, shape))})"
            raise ValueError(f"model.arch: got {self.name!r}; it needs {self.needs()}, "
                             f"{what} is {desc}")
        if kind == "image" and self.channels is not None and shape[0] not in self.channels:
            raise ValueError(f"model.arch: got {self.name!r}; it takes "
                             f"{' or '.join(map(str, self.channels))} channels, {what} has "
                             f"{shape[0]}")
        return shape

    def check_width(self, width: float) -> float:
        lo, hi = self.widths
        try:
            w = float(width)
        except (TypeError, ValueError):
            w = float("nan")
        if not lo <= w <= hi:
            raise ValueError(f"model.width: got {width!r}; allowed: [{lo:g}, {hi:g}] for "
                             f"{self.name!r}")
        return w

    def check_role(self, role: str) -> str:
        if role not in self.roles:
            raise ValueError(f"model.role: got {role!r}; allowed for {self.name!r}: "
                             f"{', '.join(self.roles)}")
        return role

    def check_data(self, data: str) -> None:
        """One line where this architecture may not run on the data set named ``data`` at all
        (a registered model fits only the data sets it was checked for); a declared
        architecture takes any data of its inputs (:meth:`check_input`)."""

    def net_shape(self, shape: tuple[int, int, int]) -> tuple[int, int, int]:
        """(C, H, W) the network sees for data of ``shape`` (after the declared resize)."""
        c, h, w = shape
        if self.side is None or self.resize == "never" or (c, h) == (1, 1):
            return shape
        if self.resize == "always":
            return c, self.side, self.side
        return c, max(h, self.side), max(w, self.side)

    def transform(self, in_shape: Iterable[int]) -> str:
        """The transform applied to data of ``in_shape`` before the network, in words."""
        shape = self.check_input(in_shape)
        net = self.net_shape(shape)
        if net == shape:
            return "none"
        return (f"bilinear resize {shape[1]}×{shape[2]} → {net[1]}×{net[2]}")

    def width_label(self, width: float) -> str:
        """How a page states the width it runs (a CPU run uses a narrower copy)."""
        w = self.check_width(width)
        if w == 1.0:
            return f"{self.title} (full width)"
        return f"{self.title} at width {w:g} (a narrower copy of the same family)"


#: the architectures: those declared in :mod:`core.catalog`, then a user's registered models
#: (``privlab model add``, :func:`core.models.user.parts`, read on every access)
ARCHITECTURES: Registry[ArchitecturePart] = Registry("architecture", loader=_CATALOG,
                                                     order=lambda a: a.order,
                                                     extra="core.models.user:parts")


def architecture(name: str) -> ArchitecturePart:
    """The registered architecture ``name``; unknown: one line naming the field ``model.arch``."""
    if name not in ARCHITECTURES:
        raise ValueError(f"model.arch: got {name!r}; allowed: {', '.join(ARCHITECTURES)}")
    return ARCHITECTURES.get(name)


def architectures_for(in_shape: Iterable[int]) -> list[str]:
    """The registered architectures that take data of ``in_shape``."""
    out = []
    for name, a in ARCHITECTURES.items():
        try:
            a.check_input(in_shape)
        except ValueError:
            continue
        out.append(name)
    return out


def describe_models() -> list[dict[str, Any]]:
    """Every registered architecture as plain data (``privlab parts``); its parameter counts
    and FLOPs need torch (:func:`core.models.describe_costs` adds them)."""
    rows = []
    for name, a in ARCHITECTURES.items():
        shape, classes = a.reference
        row: dict[str, Any] = {
            "name": name, "title": a.title, "inputs": list(a.inputs),
            "channels": None if a.channels is None else list(a.channels), "side": a.side,
            "resize": a.resize,
            "roles": list(a.roles), "widths": list(a.widths), "cpu_width": a.cpu_width,
            "reference": {"in_shape": list(shape), "n_classes": classes},
            "paper_params": dict(a.paper_params), "source": a.source,
            "builder": _object_path(a.builder)}
        rows.append(row)
    return rows
