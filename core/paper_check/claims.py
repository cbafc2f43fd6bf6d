"""The claims checked against our stored benchmark results, one declaration each.

A paper claim cites the paper's own table, figure or section and quotes the paper verbatim
(``shared/papers/*.txt``; ``tests/test_paper_claims.py`` checks the quote against the text);
results the papers do not state are listed apart as our own findings (``origin="own"``).
Each claim is a sign of a difference, test − base ("<" or ">"), read at one or more scales,
smallest first (:class:`Scale`); the largest scale measured decides (:mod:`core.paper_check.verdicts`).
Where and how each number is read: :mod:`core.paper_check.measures`. Nothing measured is typed here.

Torch-free and streamlit-free (the CLI and the Home page import it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.paper_check.measures import (
    Filter,
    FirstMeasured,
    NotMeasured,
    Points,
    SeedLists,
    SeedRows,
    Stored,
    bound_margin,
    channel_ratio,
    equal_level_utility,
    row_lists,
    seed_values,
    trials_mean,
)

PAPER = "paper"
OWN = "own"


@dataclass(frozen=True)
class PresetRead:
    """How a claim reads the preset's stored runs (the result store's index rows): ``metric``
    of the newest run of the preset's kind, data set and defense at ``knob`` (a dotted config
    path) = ``base`` and at ``knob`` = ``test``."""

    metric: str
    knob: str
    base: float
    test: float


@dataclass(frozen=True)
class Scale:
    """One setting a claim is measured at: what it is, and where its reading comes from."""

    setting: str
    measure: Any  # a core.paper_check.measures reader: .read(root) -> Reading


@dataclass(frozen=True)
class PaperArch:
    """The claim measured with the paper's own architecture family (the paper-architecture
    column): ``arch`` (a registered architecture, or the paper's model where our runner
    already trains it) at ``width`` on ``data``; ``measure`` a :mod:`core.paper_check.measures` reader
    with the same ends and seeds as the claim's own scales (None: the claim's largest scale
    already uses the paper's family, so its reading is this column's too;
    :class:`~core.paper_check.measures.NotMeasured` with the exact reason where it is not measured);
    ``runs``: filters of the rows of ``file`` behind the reading (their seeds and seconds);
    ``reductions``: every departure from the paper's model and from the first column's
    protocol."""

    family: str  # the paper's model, in words, with its source
    arch: str
    width: float | None
    data: str
    measure: Any = None
    file: str = ""
    runs: tuple[Filter, ...] = ()
    reductions: str = ""
    unrun: str = ""  # where ``file`` holds no rows yet: why the runs were not made here


@dataclass(frozen=True)
class Claim:
    paper: str
    claim_id: str
    statement: str
    citation: str  # the paper's own table / figure / section ("" for our own findings)
    quote: str  # verbatim from the paper ("" for our own findings)
    paper_number: str  # the paper's values, from the cited table or figure
    metric: str
    base_label: str
    test_label: str
    relation: str  # "<": test − base < 0 is claimed; ">": > 0
    scales: tuple[Scale, ...]  # smallest scale first
    command: str  # how the default-scale numbers are (re)measured
    origin: str = PAPER
    preset: str | None = None  # id in core.paper_check.papers.PRESETS: the paper-scale CUDA preset
    preset_read: PresetRead | None = None
    note: str = ""
    arch: PaperArch | None = None  # the paper-architecture column (None: not declared)


def _f(**eq: Any) -> tuple[tuple[str, Any], ...]:
    return tuple(eq.items())


_TAPPFL = "tappfl_adult.json"
_TS = "tappfl_seeds.json"
_TS_CMD = "python -m benchmarks tappfl_seeds"
_MIA = "faithfulness_raw/repr_mia_runner.json"
_SSIM = "faithfulness_raw/repr_ssim_mnist5k.json"
_GL = "kappa_channels.json"
_EQ = "equal_privacy.json"
_PROP = "property.json"
_FAITH = "python -m benchmarks.faithfulness_research"
_GL_CMD = "python -m benchmarks kappa_channels"
_EQ_CMD = "PYTHONPATH=. python benchmarks/equal_privacy.py --seeds 3"

# -- the paper-architecture column: each paper's own model family (specs 001-004, §5.3 / B),
# read from benchmarks/paper_arch.py's rows (same ends, same seeds, only ``model`` changes)
_RAW = "paper_arch_raw"
_GLA, _KMA, _DRA_EPS, _DRA_LAM, _MIA_A = (
    f"{_RAW}/{g}.json" for g in ("kappa_gl", "kappa_mia", "dra_eps", "dra_lambda", "mia"))
_ARCH_CMD = "python -m benchmarks.paper_arch"
_LENET = "LeNet-5 (κ channel Table 2; the paper's ResNet-10 is not run here)"
_MIA_FAMILY = "Inf2Guard's ResNet-18 pieces: encoder to layer4[0], membership and utility nets (Tables 12, 15)"
_DRA_FAMILY = "Inf2Guard's 2-conv DRA encoder, conv decoder and Table 14's utility net"
_RESIZE = "mnist5k 28×28 resized to 32×32 by the architecture"


def _lenet_gl(key: str, channel: str, base_k: float, test_k: float) -> PaperArch:
    b, t = (_f(part="defended", defense=channel, kappa_per_dim=k) for k in (base_k, test_k))
    return PaperArch(_LENET, "lenet5", 1.0, "mnist5k", SeedRows(_GLA, ("rows",), b, t, key),
                     _GLA, (b, t), _RESIZE)


def _lenet_ratio(channel: str) -> PaperArch:
    return PaperArch(_LENET, "lenet5", 1.0, "mnist5k", channel_ratio(_GLA, channel), _GLA,
                     (_f(defense=channel), _f(defense="natural")), _RESIZE)


#: shown while ``python -m benchmarks.paper_arch mia`` has written no rows
_MIA_UNRUN = ("not run here yet: 6 runs of the target and 2 shadow encoders under Inf2Guard "
              f"(60-70 CPU s each on this machine; to measure: {_ARCH_CMD} mia)")


def _mia_arch(key: str, base: float, test: float) -> PaperArch:
    b, t = _f(**{"lambda": base}), _f(**{"lambda": test})
    return PaperArch(_MIA_FAMILY, "inf2guard_mia", 0.25, "mnist5k",
                     SeedRows(_MIA_A, ("rows",), b, t, key), _MIA_A, (b, t),
                     "width 0.25 (2 CPU cores); " + _RESIZE, unrun=_MIA_UNRUN)


def _dra_arch(key: str, file: str, base: Filter, test: Filter) -> PaperArch:
    return PaperArch(_DRA_FAMILY, "inf2guard_dra", 0.25, "mnist5k",
                     SeedRows(file, ("rows",), base, test, key), file, (base, test),
                     "width 0.25 (8 channels where the paper has 32; 2 CPU cores); mnist5k at "
                     "its own 28×28 (the decoder rebuilds the data's pixels)")


def _not_run(family: str, arch: str, why: str) -> PaperArch:
    return PaperArch(family, arch, None, "—", NotMeasured(why))


_TAPPFL_ADULT = PaperArch(
    "TAPPFL's Adult feature extractor (Appendix B: linear-64, linear-128)",
    "TAPPFL encoder 64→128 (the runner's default)", None, "adult",
    reductions="none: the first column's runs already train the paper's Adult extractor")
_TFA = f"{_RAW}/tappfl_fig4.json"
#: shown while ``python -m benchmarks.paper_arch tappfl_fig4`` has written no rows
_TAPPFL_UNRUN = ("not run here yet: per seed TAPPFL λ=0.5 and three bisections of 4 runs with "
                 "the conv extractor on digits (60-85 CPU s a run on this machine; to measure: "
                 f"{_ARCH_CMD} tappfl_fig4)")


def _tappfl_conv(name: str) -> PaperArch:
    """Fig. 4 with TAPPFL's conv extractor: the baseline's best utility at or below TAPPFL's
    fresh-attacker AUC (base) and TAPPFL's (test), paired by seed."""
    b, t = (_f(part="at_level", baseline=name, end=e) for e in ("baseline", "tappfl"))
    return PaperArch(
        "TAPPFL's CIFAR-10 conv extractor and VGG-style privacy network (Appendix B, Table 3)",
        "tappfl_cifar", 0.25, "digits (bold)", SeedRows(_TFA, ("rows",), b, t, "utility"), _TFA,
        (_f(part="run", defense="tappfl"), _f(part="run", defense=name)),
        "width 0.25 (2 CPU cores); digits 8×8 with private attribute bold for CIFAR-10 animal "
        "(mnist5k's 28×28 costs 190 CPU s a run); FedAvg scale, Ψ's lr, attackers and "
        "bisection steps reduced (the row's protocol)", unrun=_TAPPFL_UNRUN)


_PIA_ARCH = _not_run(
    "Inf2Guard's PIA encoders: conv1d-256, conv1d-128, max-pool, linear-128 on Census; "
    "ResNet-18-like on CelebA (spec 004 §5.3)", "inf2guard_mia",
    "the Census conv1d encoder is not a registered architecture, and the CelebA ResNet encoder "
    "on image subsets (mnist5k's 'bold' share) trains every subset image each epoch: hours on "
    "2 shared cores at the first column's 2,000 subsets of 32-256 rows")
_DPSGD_RESNET = ("not run here: DP-SGD's recipe (150 full-batch epochs of 500 members, Opacus "
                 "per-sample gradients, GroupNorm for BatchNorm) through Inf2Guard's ResNet "
                 "pieces is ≈ 225,000 per-sample gradients per run (target + 2 LiRA shadows), "
                 "ten times an Inf2Guard run's image steps (60-70 CPU s here): hours for the "
                 "claim's 6 runs on this shared 2-core machine, beyond this column's budget")
_FIL_LINEAR = PaperArch("FIL's linear / logistic regression (§6)", "linear / logistic", None,
                        "as the first column",
                        reductions="none: the FIL runner trains the paper's own models")


_T2_PAPER = "Adult gender: Infer 0.700 (λ=0) → 0.525 (λ=1); CIFAR-10 animal: 0.74 → 0.52"
_T2_CITE = "TAPPFL Table 2 and its discussion (Experiments, 'Utility-privacy tradeoff')"
_T2_QUOTE = ("The attribute inference accuracy is the closest to random guessing when λ=1, "
             "meaning the attribute privacy is protected the most.")
_T2_SETTING = "Adult, the paper preset (100 devices, 20 rounds), 3 seeds"
_FIG4_QUOTE = "We can observe that TAPPFL is significantly better than them."
#: why the Fig. 4 claims keep one tuned run (the scale, not the data, leaves them open)
_FIG4_UNRUN = ("one tuned run per defense: no interval. Three seeds need, per seed, TAPPFL "
               "λ=0.5 and this baseline's bisection of up to 8 runs: 27 runs of about a CPU "
               "minute each on this machine (the three baselines share the TAPPFL runs: 75), "
               "not yet made; to measure: python -m benchmarks tappfl_fig4_seeds")
_TF4 = "tappfl_fig4_seeds.json"


def _tappfl_baseline(name: str, label: str) -> Claim:
    return Claim(
        "TAPPFL", f"tappfl_beats_{name}",
        f"TAPPFL keeps more utility than {label} at equal attribute inference",
        "TAPPFL Fig. 4 and its discussion (Experiments, 'Comparison with task-agnostic "
        "defenses')", _FIG4_QUOTE,
        "CIFAR-10, inference fixed at 0.55-0.75 (values in the figure only)",
        "utility at TAPPFL's fresh-attacker AUC", label, "TAPPFL", ">",
        (Scale(f"Adult sex, {label} tuned to TAPPFL λ=0.5 fresh-MLP AUC, per seed (3 seeds; "
               "one run where the seeds' file is absent)",
               FirstMeasured((
                   SeedRows(_TF4, ("rows",), _f(baseline=name, end="baseline"),
                            _f(baseline=name, end="tappfl"), "utility"),
                   Points(_TAPPFL, ("tuned_baselines", name,
                                    "baseline_best_utility_at_or_below_target"),
                          ("tuned_baselines", name, "tappfl_utility"), _FIG4_UNRUN)))),),
        "python -m benchmarks.tappfl_adult", preset="tappfl_cifar10", arch=_tappfl_conv(name))


def _kappa_trend(channel: str, fig_acc: str, fig_dra: str) -> tuple[Claim, Claim]:
    quote = ("these results are similar to the Natural Channel, when we increase the channel "
             "capacity, the model accuracy increases, while the defense ability decreases.")
    setting = f"digits, MLP, {channel} channel, κ/d 0.01 vs 1, 3 seeds"
    rows = ("rows",)
    at = {k: _f(part="defended", defense=channel, kappa_per_dim=k) for k in (0.01, 1.0)}
    return (
        Claim("κ channel", f"kappa_{channel}_utility",
              f"κ↑ raises accuracy ({channel.capitalize()} Channel)",
              f"κ channel Fig. {fig_acc} and Appendix F ('The results for White Channel and "
              "Personalized Channel')", quote, "values in the figure only",
              "test accuracy", "κ/d=0.01", "κ/d=1", ">",
              (Scale(setting, SeedRows(_GL, rows, at[0.01], at[1.0], "utility")),), _GL_CMD,
              arch=_lenet_gl("utility", channel, 0.01, 1.0)),
        Claim("κ channel", f"kappa_{channel}_mse",
              f"κ↓ raises gradient-inversion MSE ({channel.capitalize()} Channel)",
              f"κ channel Fig. {fig_dra} and Appendix F ('The results for White Channel and "
              "Personalized Channel')", quote, "values in the figure only",
              "MSE of the strongest inverter", "κ/d=1", "κ/d=0.01", ">",
              (Scale(setting, SeedRows(_GL, rows, at[1.0], at[0.01], "mse")),), _GL_CMD,
              arch=_lenet_gl("mse", channel, 1.0, 0.01)),
    )


CLAIMS: tuple[Claim, ...] = (
    # -- TAPPFL (AAAI 2024)
    Claim(
        "TAPPFL", "tappfl_lambda_in_training",
        "TAPPFL λ↑ lowers attribute inference accuracy (the in-training privacy head)",
        _T2_CITE, _T2_QUOTE, _T2_PAPER, "in-training attacker accuracy (sex)", "λ=0", "λ=1", "<",
        (Scale(_T2_SETTING + ", strong adversary",
               SeedRows(_TS, ("rows",), _f(attribute="sex", **{"lambda": 0.0}),
                        _f(attribute="sex", **{"lambda": 1.0}), "in_acc")),),
        _TS_CMD, preset="tappfl_cifar10",
        preset_read=PresetRead("attack_in_training_acc", "defense.tradeoff_lambda", 0.0, 1.0),
        arch=_TAPPFL_ADULT),
    Claim(
        "TAPPFL", "tappfl_lambda_fresh",
        "TAPPFL λ↑ lowers attribute inference by a fresh attacker trained after the release",
        _T2_CITE, _T2_QUOTE,
        "Adult marital status: Infer 0.375 (λ=0) → 0.175 (λ=1), by the paper's own privacy "
        "network (it reports no fresh attacker)",
        "fresh attacker AUC (marital status)", "λ=0", "λ=1", "<",
        (Scale(_T2_SETTING + ", strongest of a fresh logistic and MLP attacker",
               SeedRows(_TS, ("rows",), _f(attribute="marital_status", **{"lambda": 0.0}),
                        _f(attribute="marital_status", **{"lambda": 1.0}), "best_auc")),),
        _TS_CMD, preset="tappfl_cifar10",
        preset_read=PresetRead("attack_auc_best", "defense.tradeoff_lambda", 0.0, 1.0),
        arch=_TAPPFL_ADULT),
    Claim(
        "TAPPFL", "tappfl_lambda_utility",
        "TAPPFL λ↑ lowers test accuracy (λ=0 keeps the most utility)",
        _T2_CITE, "The testing accuracy is the largest when λ=0, hence the utility is "
                  "maintained the most.",
        "Adult: Test 0.825 (λ=0) → 0.700 (λ=1); CIFAR-10: 0.89 → 0.58",
        "utility (logistic probe on r, sex rows)", "λ=0", "λ=1", "<",
        (Scale(_T2_SETTING + ", strong adversary",
               SeedRows(_TS, ("rows",), _f(attribute="sex", **{"lambda": 0.0}),
                        _f(attribute="sex", **{"lambda": 1.0}), "utility")),),
        _TS_CMD, preset="tappfl_cifar10", arch=_TAPPFL_ADULT),
    _tappfl_baseline("dp_gaussian", "DP-Gaussian"),
    _tappfl_baseline("dp_laplace", "DP-Laplace"),
    _tappfl_baseline("pruning", "model compression (pruning)"),
    # -- Inf2Guard (USENIX Security 2024)
    Claim(
        "Inf2Guard", "inf2guard_mia_lambda",
        "Inf2Guard λ↑ lowers representation membership inference",
        "Inf2Guard Table 1, §5.1.2 ('Utility-privacy results')",
        "Increasing λ’s value enhances Inf²Guard’s resilience against MIAs.",
        "CIFAR-10 MIA accuracy 70.1 % (λ=0) → 51.1 % (λ=0.75), utility 78.9 % → 77.2 %",
        "representation LiRA AUC", "λ=0", "λ=0.5", "<",
        (Scale("mnist5k, 500 members, 60 epochs, 16 shadows, 2 seeds (membership runner)",
               SeedLists(_MIA, ("summary", "0", "representation_lira_auc", "values"),
                         ("summary", "0.5", "representation_lira_auc", "values"))),),
        "python -m benchmarks.faithfulness repr-mia", preset="inf2guard_mia_cifar10",
        preset_read=PresetRead("mia_representation_auc", "defense.tradeoff_lambda", 0.0, 0.75),
        arch=_mia_arch("representation_lira_auc", 0.0, 0.5)),
    Claim(
        "Inf2Guard", "inf2guard_lira_tpr_lambda",
        "Inf2Guard λ↑ lowers LiRA's TPR at low FPR on the representations",
        "Inf2Guard Fig. 4, §5.1.2 ('Utility-privacy results')",
        "we observe that the TPR at low FPRs is relatively large (strong membership inference) "
        "in case of no privacy protection, but it can be largely reduced by increasing λ.",
        "TPR-FPR curves (values in the figure only)", "representation LiRA TPR at 1 % FPR",
        "λ=0", "λ=0.5", "<",
        (Scale("mnist5k, 500 members, 60 epochs, 16 shadows, 2 seeds (membership runner)",
               SeedRows(_MIA, ("rows",), _f(**{"lambda": 0.0}), _f(**{"lambda": 0.5}),
                        "representation_lira_tpr_at_1pct_fpr")),),
        "python -m benchmarks.faithfulness repr-mia", preset="inf2guard_mia_cifar10",
        arch=_mia_arch("representation_lira_tpr_at_1pct_fpr", 0.0, 0.5)),
    Claim(
        "Inf2Guard", "inf2guard_mia_lambda1_utility",
        "Inf2Guard at λ=1 (privacy only) loses the utility",
        "Inf2Guard Table 1, §5.1.2 ('Utility-privacy results')",
        "When only protecting privacy (λ=1), the MIA accuracy reaches to the optimal random "
        "guessing, but the utility is the lowest.",
        "CIFAR-10 utility 78.9 % (λ=0) → 20 % (λ=1)", "utility", "λ=0", "λ=1", "<",
        (Scale("mnist5k, 500 members, 60 epochs, 2 seeds (membership runner)",
               SeedLists(_MIA, ("summary", "0", "utility", "values"),
                         ("summary", "1", "utility", "values"))),),
        "python -m benchmarks.faithfulness repr-mia", preset="inf2guard_mia_cifar10",
        arch=_mia_arch("utility", 0.0, 1.0)),
    Claim(
        "Inf2Guard", "inf2guard_mia_vs_dpsgd",
        "Inf2Guard keeps more utility than DP-SGD at equal membership privacy",
        "Inf2Guard Table 2, §5.1.2 ('Comparing with the existing defenses against MIAs')",
        "From Table 2, we observe DP methods have bad utility when ensuring the same level "
        "defense performance (w.r.t. MIA accuracy) as Inf²Guard.",
        "CIFAR-10: 77 % (Inf2Guard) vs 48 % (DP-SGD) at MIA 51 %",
        "utility at equal LiRA AUC", "DP-SGD", "Inf2Guard", ">",
        (Scale("mnist5k, 500 members, LiRA offline (2 shadows), 3 seeds; each defense's point at "
               "the lowest LiRA AUC both reach (seed means)",
               equal_level_utility(_EQ, "dpsgd", "inf2guard")),),
        _EQ_CMD, preset="inf2guard_mia_cifar10",
        arch=_not_run(_MIA_FAMILY, "inf2guard_mia", "needs Inf2Guard's λ curve and DP-SGD's "
                      "ε curve with the ResNet pieces; " + _DPSGD_RESNET)),
    Claim(
        "Inf2Guard", "dpsgd_eps_mia",
        "DP-SGD ε↑ raises membership inference",
        "Inf2Guard Table 16 (Appendix C.4)", "Table 16: More DP results against MIAs.",
        "CIFAR-10 DP-SGD MIA 51 % (ε=1) → 59 % (ε=8)", "LiRA AUC", "ε=1", "ε=8", ">",
        (Scale("mnist5k, 500 members, LiRA offline (2 shadows), 3 seeds",
               row_lists(_EQ, ("points",), _f(defense="DP-SGD (Opacus)", knob=1.0),
                         _f(defense="DP-SGD (Opacus)", knob=8.0), "lira_auc_per_seed")),),
        _EQ_CMD, arch=_not_run(_MIA_FAMILY, "inf2guard_mia", _DPSGD_RESNET)),
    Claim(
        "Inf2Guard", "dpsgd_eps_utility",
        "DP-SGD ε↑ raises utility",
        "Inf2Guard Table 16 (Appendix C.4)", "Table 16: More DP results against MIAs.",
        "CIFAR-10 DP-SGD utility 48 % (ε=1) → 65 % (ε=8)", "utility", "ε=1", "ε=8", ">",
        (Scale("mnist5k, 500 members, 3 seeds",
               row_lists(_EQ, ("points",), _f(defense="DP-SGD (Opacus)", knob=1.0),
                         _f(defense="DP-SGD (Opacus)", knob=8.0), "utility_per_seed")),),
        _EQ_CMD, arch=_not_run(_MIA_FAMILY, "inf2guard_mia", _DPSGD_RESNET)),
    Claim(
        "Inf2Guard", "inf2guard_pia_in_training",
        "Inf2Guard λ↑ lowers property inference by its in-training adversary",
        "Inf2Guard Table 3, §5.2.2 ('Utility-privacy results')",
        "When focusing on protecting privacy (λ=1), the PIA performance can be largely "
        "reduced. … In most of the cases, the best tradeoff is obtained when λ=0.75.",
        "Census PIA 68 % (λ=0) → 34 % (λ=0.75); chance 25 %",
        "in-training adversary accuracy", "λ=0", "λ=0.75", "<",
        (Scale("Adult, K = 4, mean aggregation, subsets of 32-256 rows, 3 seeds",
               row_lists(_PROP, ("rows",), _f(aggregation="mean", **{"lambda": 0.0}),
                         _f(aggregation="mean", **{"lambda": 0.75}), "in_training_acc_per_seed")),),
        "python -m benchmarks.property_bench", preset="inf2guard_pia_celeba",
        preset_read=PresetRead("property_in_training_acc", "defense.tradeoff_lambda", 0.0, 0.75),
        arch=_PIA_ARCH),
    Claim(
        "Inf2Guard", "inf2guard_pia_lambda",
        "Inf2Guard λ↑ lowers property inference by a fresh attacker trained after the release",
        "Inf2Guard Table 3, §5.2.2 ('Utility-privacy results')",
        "When focusing on protecting privacy (λ=1), the PIA performance can be largely "
        "reduced. … In most of the cases, the best tradeoff is obtained when λ=0.75.",
        "Census PIA 68 % (λ=0) → 34 % (λ=0.75); chance 25 % (the paper's attacker is its "
        "privacy network)",
        "fresh MLP attacker accuracy", "λ=0", "λ=0.75", "<",
        (Scale("Adult, K = 4, mean aggregation, subsets of 32-256 rows, 3 seeds",
               row_lists(_PROP, ("rows",), _f(aggregation="mean", **{"lambda": 0.0}),
                         _f(aggregation="mean", **{"lambda": 0.75}), "fresh_mlp_acc_per_seed")),),
        "python -m benchmarks.property_bench", preset="inf2guard_pia_celeba",
        preset_read=PresetRead("property_acc_best", "defense.tradeoff_lambda", 0.0, 0.75),
        arch=_PIA_ARCH),
    Claim(
        "Inf2Guard", "inf2guard_pia_max_aggregator",
        "Inf2Guard λ↑ lowers property inference with a max aggregator too",
        "Inf2Guard Table 4, §5.2.2 ('Impact of the aggregator used by the encoder')",
        "Table 4 shows the results. We have similar conclusions as those with the "
        "mean-aggregator.",
        "Census PIA 65 % (λ=0) → 37 % (λ=0.75), max aggregator",
        "in-training adversary accuracy", "λ=0", "λ=0.75", "<",
        (Scale("Adult, K = 4, max aggregation, subsets of 32-256 rows, 3 seeds",
               row_lists(_PROP, ("rows",), _f(aggregation="max", **{"lambda": 0.0}),
                         _f(aggregation="max", **{"lambda": 0.75}),
                         "in_training_acc_per_seed")),),
        "python -m benchmarks.property_bench", arch=_PIA_ARCH),
    Claim(
        "Inf2Guard", "inf2guard_pia_utility",
        "Inf2Guard at λ=1 (privacy only) loses utility against PIA",
        "Inf2Guard Table 3, §5.2.2 ('Utility-privacy results')",
        "However, the utility is also significantly decreased, e.g., from 85% to 45%.",
        "Census utility 85 % (λ=0) → 45 % (λ=1)", "utility", "λ=0", "λ=1", "<",
        (Scale("Adult, K = 4, mean aggregation, 3 seeds",
               row_lists(_PROP, ("rows",), _f(aggregation="mean", **{"lambda": 0.0}),
                         _f(aggregation="mean", **{"lambda": 1.0}), "utility_per_seed")),),
        "python -m benchmarks.property_bench", preset="inf2guard_pia_celeba", arch=_PIA_ARCH),
    Claim(
        "Inf2Guard", "inf2guard_dra_eps",
        "Inf2Guard's learned perturbation (ε↑) lowers reconstruction SSIM",
        "Inf2Guard Table 6, §5.3.2 ('Utility-privacy results')",
        "A larger ε implies adding more perturbation to the representation during defense "
        "training. This makes the DRA more challenging, but also sacrifice the utility more.",
        "CIFAR-10 SSIM 0.78 (ε=0) → 0.17 (ε=1.75), utility 89.5 % → 68.9 %",
        "SSIM of the strongest attacker", "ε=0", "ε=4", "<",
        (Scale("mnist5k, λ = 0.4, r of 256 dims, 3 seeds",
               SeedRows(_SSIM, ("rows",), _f(channel="learned", epsilon=0.0, **{"lambda": 0.4}),
                        _f(channel="learned", epsilon=4.0, **{"lambda": 0.4}), "ssim")),),
        f"{_FAITH} repr-ssim --data mnist5k --seeds 0 1 2", preset="inf2guard_dra_cifar10",
        preset_read=PresetRead("recon_ssim", "defense.epsilon", 0.0, 1.75),
        arch=_dra_arch("ssim", _DRA_EPS, _f(channel="learned", epsilon=0.0, **{"lambda": 0.4}),
                       _f(channel="learned", epsilon=4.0, **{"lambda": 0.4}))),
    Claim(
        "Inf2Guard", "inf2guard_dra_eps_utility",
        "Inf2Guard's learned perturbation (ε↑) costs utility",
        "Inf2Guard Table 6, §5.3.2 ('Utility-privacy results')",
        "A larger ε implies adding more perturbation to the representation during defense "
        "training. This makes the DRA more challenging, but also sacrifice the utility more.",
        "CIFAR-10 utility 89.5 % (ε=0) → 68.9 % (ε=1.75)", "utility", "ε=0", "ε=4", "<",
        (Scale("mnist5k, λ = 0.4, r of 256 dims, 3 seeds",
               SeedRows(_SSIM, ("rows",), _f(channel="learned", epsilon=0.0, **{"lambda": 0.4}),
                        _f(channel="learned", epsilon=4.0, **{"lambda": 0.4}), "utility")),),
        f"{_FAITH} repr-ssim --data mnist5k --seeds 0 1 2", preset="inf2guard_dra_cifar10",
        arch=_dra_arch("utility", _DRA_EPS, _f(channel="learned", epsilon=0.0, **{"lambda": 0.4}),
                       _f(channel="learned", epsilon=4.0, **{"lambda": 0.4}))),
    Claim(
        "Inf2Guard", "inf2guard_dra_lambda",
        "Inf2Guard λ↑ lowers reconstruction SSIM at fixed ε",
        "Inf2Guard Table 7, §5.3.2 ('Utility-privacy results')",
        "We can see λ also acts as a tradeoff—a larger λ can protect data privacy more, while "
        "having larger utility loss.",
        "CIFAR-10 SSIM 0.52 (λ=0.1) → 0.15 (λ=0.7) at ε=1.25", "SSIM", "λ=0.1", "λ=0.7", "<",
        (Scale("mnist5k, learned perturbation at ε = 1.25, 3 seeds",
               SeedRows("dra_lambda.json", ("rows",), _f(**{"lambda": 0.1}),
                        _f(**{"lambda": 0.7}), "ssim")),),
        "python -m benchmarks dra_lambda",
        arch=_dra_arch("ssim", _DRA_LAM, _f(channel="learned", epsilon=1.25, **{"lambda": 0.1}),
                       _f(channel="learned", epsilon=1.25, **{"lambda": 0.7}))),
    Claim(
        "Inf2Guard", "inf2guard_dra_vs_dpsgd",
        "Inf2Guard defends reconstruction better than DP-SGD at similar utility",
        "Inf2Guard Tables 6 and 8, §5.3.2 ('Comparing with the DP-based defense')",
        "Viewing with results in Table 6, we see Inf²Guard obtains better utility-privacy "
        "tradeoffs than DP-SGD.",
        "CIFAR-10 SSIM 0.21 at 78.0 % (Inf2Guard, ε=1.25) vs 0.37 at 77.4 % (DP-SGD)",
        "SSIM at matched utility", "DP-SGD", "Inf2Guard", "<",
        (Scale("mnist5k",
               NotMeasured("the stored DRA runs compare the learned perturbation with fixed "
                           "noise and a Gaussian mechanism on r, not with DP-SGD training (see "
                           "our finding inf2guard_dra_learned_vs_fixed)")),),
        f"{_FAITH} repr-ssim",
        arch=_not_run(_DRA_FAMILY, "inf2guard_dra", "the representation-reconstruction runner "
                      "perturbs r and has no DP-SGD training to compare with")),
    # -- channel capacity κ (USENIX Security 2024)
    Claim(
        "κ channel", "kappa_psnr",
        "κ↓ lowers gradient-inversion PSNR (κ↑ lets more through)",
        "κ channel Figs. 27 and 31 and Appendix F ('More metrics for evaluating the ability "
        "to defend against DRA')",
        "All of these results demonstrate that reducing channel capacity can effectively reduce "
        "the quality of reconstruction.", "values in the figures only",
        "PSNR of the strongest inverter (median over targets)", "κ/d=1", "κ/d=0.01", "<",
        (Scale("digits, MLP, Natural channel, 3 seeds",
               SeedRows(_GL, ("rows",), _f(part="defended", defense="natural", kappa_per_dim=1.0),
                        _f(part="defended", defense="natural", kappa_per_dim=0.01),
                        "psnr_median")),),
        _GL_CMD, preset="kappa_lenet_cifar10",
        preset_read=PresetRead("recon_best_psnr_median", "defense.kappa", 300.0, 50.0),
        arch=_lenet_gl("psnr_median", "natural", 1.0, 0.01)),
    Claim(
        "κ channel", "kappa_mse",
        "κ↓ raises gradient-inversion MSE (Natural Channel)",
        "κ channel Fig. 14, §6.2 ('Defense ability against gradient inversion attack')",
        "the MSE of data reconstruction consistently increases as we decrease the threshold κ, "
        "which means a smaller κ leads to a stronger ability to defend against DRA.",
        "CIFAR-10 heatmaps (values in the figure only)", "MSE of the strongest inverter",
        "κ/d=1", "κ/d=0.01", ">",
        (Scale("digits, MLP, Natural channel, 3 seeds",
               SeedRows(_GL, ("rows",), _f(part="defended", defense="natural", kappa_per_dim=1.0),
                        _f(part="defended", defense="natural", kappa_per_dim=0.01), "mse")),),
        _GL_CMD, preset="kappa_lenet_cifar10", arch=_lenet_gl("mse", "natural", 1.0, 0.01)),
    Claim(
        "κ channel", "kappa_white_over_natural_mse",
        "White Channel gives the attacker more MSE than Natural at the same κ",
        "κ channel Fig. 14, §6.2 ('Defense ability against gradient inversion attack')",
        "The MSE of the White Channel and the Personalized Channel are larger than the Natural "
        "Channel, indicating that the other two methods provide stronger defense capability "
        "compared to the Natural Channel.",
        "CIFAR-10 heatmaps (values in the figure only)",
        "MSE ratio White / Natural at equal κ (geometric mean over κ/d)", "1", "White/Natural",
        ">",
        (Scale("digits, MLP, κ/d 0.01-1, 3 seeds", channel_ratio(_GL, "white")),), _GL_CMD,
        preset="kappa_lenet_cifar10", arch=_lenet_ratio("white")),
    Claim(
        "κ channel", "kappa_personalized_over_natural_mse",
        "Personalized Channel gives the attacker more MSE than Natural at the same κ",
        "κ channel Fig. 14, §6.2 ('Defense ability against gradient inversion attack')",
        "The MSE of the White Channel and the Personalized Channel are larger than the Natural "
        "Channel, indicating that the other two methods provide stronger defense capability "
        "compared to the Natural Channel.",
        "CIFAR-10 heatmaps (values in the figure only)",
        "MSE ratio Personalized / Natural at equal κ (geometric mean over κ/d)", "1",
        "Personalized/Natural", ">",
        (Scale("digits, MLP, κ/d 0.01-1, 3 seeds", channel_ratio(_GL, "personalized")),),
        _GL_CMD, preset="kappa_lenet_cifar10", arch=_lenet_ratio("personalized")),
    Claim(
        "κ channel", "kappa_utility",
        "κ↑ raises accuracy (Natural Channel)",
        "κ channel Fig. 9, §6.2 ('Impact of channel capacity')",
        "when we enhance the channel, i.e., increase κ, the accuracy increases accordingly "
        "regardless of the datasets and the model architectures",
        "values in the figure only", "test accuracy", "κ/d=0.01", "κ/d=1", ">",
        (Scale("digits, MLP, Natural channel, 3 seeds",
               SeedRows(_GL, ("rows",), _f(part="defended", defense="natural",
                                           kappa_per_dim=0.01),
                        _f(part="defended", defense="natural", kappa_per_dim=1.0), "utility")),),
        _GL_CMD, preset="kappa_lenet_cifar10",
        preset_read=PresetRead("utility_acc", "defense.kappa", 50.0, 300.0),
        arch=_lenet_gl("utility", "natural", 0.01, 1.0)),
    *_kappa_trend("white", "18", "20"),
    *_kappa_trend("personalized", "21", "23"),
    Claim(
        "κ channel", "kappa_mia",
        "κ↓ lowers membership inference (Natural Channel)",
        "κ channel Fig. 25 and Appendix F ('The defense ability for defending against MIA')",
        "When we constrain the transmitted information, the AUC for conducting MIA "
        "significantly decreases.",
        "values in the figure only", "LiRA AUC", "κ=320", "κ=5", "<",
        (Scale("mnist5k, 500 members, LiRA offline (2 shadows), 3 seeds",
               row_lists(_EQ, ("points",),
                         _f(defense="κ channel (data-space noise) · natural", knob=320.0),
                         _f(defense="κ channel (data-space noise) · natural", knob=5.0),
                         "lira_auc_per_seed")),),
        _EQ_CMD,
        arch=PaperArch(_LENET, "lenet5", 1.0, "mnist5k",
                       SeedRows(_KMA, ("rows",), _f(defense="natural", knob=320.0),
                                _f(defense="natural", knob=5.0), "lira_auc"), _KMA,
                       (_f(knob=320.0), _f(knob=5.0)), _RESIZE)),
    Claim(
        "κ channel", "kappa_vs_dpsgd",
        "the Natural channel keeps more utility than DP-SGD at equal reconstruction privacy",
        "κ channel Fig. 15 (utility-privacy plane; the text of §6.3 calls it Fig. 16)",
        "As in Fig. 16, the Natural Channel achieves the best utility-privacy trade-off.",
        "values in the figure only", "Natural / DP-SGD utility at equal PSNR", "1", "ratio", ">",
        (Scale("digits, MLP, 3 seeds (one equal-PSNR ratio per seed)",
               seed_values(_GL, ("natural_over_dpsgd_utility_equal_psnr_per_seed",), 1.0,
                           "the equal-PSNR utility ratio")),),
        _GL_CMD, preset="kappa_lenet_cifar10",
        note=("each seed's ratio is read at the PSNRs both of its curves reach (the "
              "benchmark's matching, core.runs.compare.utility_at_level)"),
        arch=_not_run(_LENET, "lenet5", "needs the full κ grid and DP-SGD's target-ε grid "
                      "with LeNet-5 (about 27 more runs of ≈ 28 CPU s, several minutes of wall "
                      "time each on this shared machine); the first column's reading has no "
                      "interval either")),
    Claim(
        "κ channel", "kappa_thm1",
        "Theorem 1: no attacker's expected MSE falls below the bound",
        "κ channel Theorem 1 (§3.1)",
        "Theorem 1 (Lower bound for reconstruction error).",
        "a lower bound on E‖D − D̂‖²/d", "mean MSE − bound (channel nearest the bound)",
        "bound", "mean MSE", ">",
        (Scale("digits, κ/d = 1, Natural / White / Personalized, 3 seeds",
               bound_margin("faithfulness_raw/kappa_thm1.json")),),
        f"{_FAITH} kappa-thm1",
        arch=PaperArch(_LENET, "lenet5", 1.0, "mnist5k", bound_margin(_GLA), _GLA,
                       (_f(kappa_per_dim=1.0),), _RESIZE)),
    # -- FIL (UAI 2021)
    Claim(
        "FIL", "irfil_equalises",
        "IRFIL equalises per-example η (std shrinks)",
        "FIL Table 1, §6.3",
        "However, without IRFIL the standard deviation in η is significantly higher, implying "
        "that the initial information leakage varies substantially across training examples.",
        "MNIST linear η̄ 0.040 ± 0.014 → 0.047 ± 0.000", "std of per-example η (linear)",
        "before IRFIL", "after IRFIL", "<",
        (Scale("mnist5k 0 vs 1, linear, 5 seeds (each a seeded 80 % subsample of the 800 "
               "training rows)",
               SeedRows("fil.json", ("rows",),
                        _f(part="table1_seeds", model="linear", irfil="before"),
                        _f(part="table1_seeds", model="linear", irfil="after"), "eta_std")),),
        "python -m benchmarks.fil_bench", arch=_FIL_LINEAR),
    Claim(
        "FIL", "fil_whitebox_eta",
        "the white-box attribute attack degrades as η falls",
        "FIL Fig. 6(c), §6.4 ('Result')",
        "The white-box (6(c)) and black-box (6(d)) accuracies degrade as η decreases.",
        "IWPC (values in the figure only)", "white-box attack accuracy", "η̄=10", "η̄=0.03",
        "<",
        (Scale("UCI Adult, 20 trials per η̄",
               trials_mean("fil.json", _f(part="adult_attack", eta_bar=10.0),
                           _f(part="adult_attack", eta_bar=0.03), "white_box_acc",
                           "white_box_acc_std", "trials")),),
        "python -m benchmarks.fil_bench", arch=_FIL_LINEAR),
    Claim(
        "FIL", "fil_blackbox_eta",
        "the black-box attribute attack degrades as η falls",
        "FIL Fig. 6(d), §6.4 ('Result')",
        "The white-box (6(c)) and black-box (6(d)) accuracies degrade as η decreases.",
        "IWPC (values in the figure only)", "black-box attack accuracy", "η̄=10", "η̄=0.03",
        "<",
        (Scale("UCI Adult, 20 trials per η̄",
               trials_mean("fil.json", _f(part="adult_attack", eta_bar=10.0),
                           _f(part="adult_attack", eta_bar=0.03), "black_box_acc",
                           "black_box_acc_std", "trials")),),
        "python -m benchmarks.fil_bench", arch=_FIL_LINEAR,
        note=("π is the training confusion matrix (the authors' code for classifiers; the rows' "
              "black_box_pi). With it Eq. 31 returns the prior's mode at every η̄ ≥ 0.3, so "
              "the accuracy there is the prior's: the model's recall on the positive class "
              "falls below the prior ratio, the correct outcome of Eq. 31, not a fault. The same "
              "attacker with the engine's default π for least squares, the Gaussian "
              "N(w'ᵀx; y, s²), is measured beside it in the same rows "
              "(black_box_gaussian_acc) and stays well above the prior at every η̄.")),
    Claim(
        "FIL", "fil_decile_vulnerability",
        "the highest-η decile is more exposed to attribute inversion than the lowest",
        "FIL Fig. 7(b, d), §6.4",
        "For both datasets, the highest η decile is initially much more susceptible to "
        "attribute inversion than the lowest η decile.",
        "IWPC / UCI Adult (values in the figure only)", "white-box accuracy per η decile",
        "lowest decile", "highest decile", ">",
        (Scale("UCI Adult",
               NotMeasured("no stored benchmark scores the white-box attack per η decile")),),
        "python -m benchmarks.fil_bench",
        arch=_not_run(_FIL_LINEAR.family, "linear", "no stored benchmark scores the white-box "
                      "attack per η decile (the FIL runner trains the paper's model)")),
    # -- our own findings (the papers make no such claim)
    Claim(
        "FIL", "fil_identifies_leakers",
        "FIL η ranks training rows like per-example membership LiRA scores",
        "", "", "not a paper claim: FIL's Fig. 7 is about attribute inversion, not membership",
        "Spearman ρ(η, LiRA score)", "0", "ρ", ">",
        (Scale("digits 0 vs 1 (PCA 20, 288 rows), logistic, 16 shadows, 3 seeds (FIL runner)",
               Stored("faithfulness_raw/fil_lira_runner.json",
                      ("summary", "fil_lira_spearman", "mean"),
                      ("summary", "fil_lira_spearman", "lo"),
                      ("summary", "fil_lira_spearman", "hi"), 0.0,
                      "Student-t over 3 seeds of ρ")),
         Scale("UCI Adult paper view (30,162 rows, d = 86), η_max = 3.2, 64 shadows",
               Stored("faithfulness_raw/fil_lira_adult.json",
                      ("spearman_eta_lira_score", "rho"), ("spearman_eta_lira_score", "lo"),
                      ("spearman_eta_lira_score", "hi"), 0.0,
                      "paired percentile bootstrap over training rows",
                      rows=_f(eta_target=3.2)))),
        "python -m benchmarks.faithfulness fil-lira", origin=OWN, arch=_FIL_LINEAR),
    Claim(
        "Inf2Guard", "inf2guard_dra_learned_vs_fixed",
        "the learned perturbation beats every fixed noise channel at matched utility",
        "", "", "not a paper claim: the paper's Table 18 is Inf2Guard with a uniform "
                "perturbation distribution, not a fixed-noise baseline",
        "learned − best fixed SSIM at matched utility", "0", "learned − fixed", "<",
        (Scale("mnist5k, λ = 0.4, learned at ε_ref = 2 against every fixed channel, 3 seeds",
               Stored(_SSIM, ("summary", "2", "learned_minus_best_fixed", "mean"),
                      ("summary", "2", "learned_minus_best_fixed", "lo"),
                      ("summary", "2", "learned_minus_best_fixed", "hi"), 0.0,
                      "Student-t over 3 seeds")),),
        f"{_FAITH} repr-ssim --data mnist5k --seeds 0 1 2", origin=OWN,
        preset="inf2guard_dra_cifar10",
        arch=_not_run(_DRA_FAMILY, "inf2guard_dra", "needs every fixed channel's ε grid with "
                      "the 2-conv encoder (4 channels × 4 ε × 3 seeds) to match utilities: "
                      "beyond this column's CPU budget")),
)
