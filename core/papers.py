"""Paper check (issue #22 item 6): each paper's headline claims beside our measurements.

A :class:`Claim` declares the paper's number and setting (quoted from the notes in
``shared/spec/``) and *where* our number is read: a :class:`Ref` names a stored benchmark file
(``benchmarks/results/*.json``) and a JSON path in it. Nothing measured is typed here; a file
or value that is missing makes the cell read "not measured" with the command that measures it.

A claim is a direction: our value at ``test`` stands in ``relation`` ("<" or ">") to our value
at ``base`` (or to a constant), e.g. "representation LiRA AUC at λ = 0.5 < at λ = 0". Each
claim is checked in our default setting and, where one is declared, at the largest preset we
have: a stored run at paper scale (Adult's full FIL view) or a CUDA preset at the papers' data
sizes and epochs (:data:`PRESETS`, CIFAR-10 / CelebA from ``$PRIVLAB_DATA_DIR``; our runners'
encoders, widened, since ResNet-18 and the papers' conv encoders are not in them; LeNet-5 for
the κ paper), whose stored runs answer the claim when someone has made them, and whose CPU cost
is otherwise extrapolated from timed steps of the paper's model and of the preset's own
(``benchmarks/papers_check.py`` stores them in ``benchmarks/results/papers.json``).

Torch-free and streamlit-free: the CLI and the dashboard import it on page load.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = "benchmarks/results"
PAPERS_JSON = f"{RESULTS}/papers.json"
NOT_MEASURED = "not measured"

PathPart = str | int | tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Ref:
    """One number in a stored result file: ``path`` walks dict keys (str), list indices (int)
    and row filters (a tuple of (key, value) pairs: the rows of a list whose keys equal those
    values; the rest of the path is read in each and the values averaged, e.g. over seeds)."""

    file: str
    path: tuple[PathPart, ...]

    def text(self) -> str:
        out = []
        for p in self.path:
            if isinstance(p, tuple):
                out.append("[" + ", ".join(f"{k}={v}" for k, v in p) + "]")
            elif isinstance(p, int):
                out.append(f"[{p}]")
            else:
                out.append(f".{p}" if p.isidentifier() else f"[{p!r}]")
        return f"{self.file}:{''.join(out).lstrip('.')}"


@dataclass(frozen=True)
class Side:
    """One end of a comparison: a label and the refs to try in order (first measured wins,
    e.g. the CPU file, then the CUDA run of the same setting); or a constant."""

    label: str
    refs: tuple[Ref, ...] = ()
    constant: float | None = None
    interval: tuple[Ref, Ref] | None = None  # (lo, hi) of a 95 % interval stored beside it


@dataclass(frozen=True)
class Claim:
    paper: str
    claim_id: str
    statement: str
    paper_number: str
    paper_setting: str
    metric: str
    base: Side
    test: Side
    relation: str  # "<": test below base holds the claim; ">": above; "=": equal
    our_setting: str
    command: str  # how our default-setting numbers are (re)measured
    largest: tuple[Side, Side] | None = None  # a stored run at the largest scale we have
    largest_setting: str = ""
    preset: str | None = None  # id in PRESETS: the paper-scale CUDA preset
    note: str = ""
    preset_read: PresetRead | None = None  # how the preset's stored runs answer the claim


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
class Preset:
    """A paper-scale config (our runner at the paper's data and epochs, widened encoders;
    device auto = CUDA when present) and what the paper's own training costs, in optimiser
    steps of ``timed_model`` on batches of ``batch_shape``, for the CPU estimate."""

    preset_id: str
    paper: str
    config: dict[str, Any]
    paper_model: str
    timed_model: str  # a builder name in benchmarks/papers_check.py
    batch_shape: tuple[int, int, int, int]
    steps: int
    steps_note: str
    data: str = field(default="cifar10")
    grid: str = ""  # the knob the claim's direction needs, as `--set` overrides
    our_model: str = ""  # what our runner trains at this preset (where it differs from the paper's)
    our_widths: tuple[int, int, int] | None = None  # (input, hidden, r) of that MLP encoder, timed too


# ---------------------------------------------------------------------------------------------
# the declared claims


def _r(file: str, *path: PathPart) -> Ref:
    return Ref(f"{RESULTS}/{file}", tuple(path))


def _rows(**eq: Any) -> tuple[tuple[str, Any], ...]:
    return tuple(eq.items())


_MEM_CMD = "python -m benchmarks.membership_bench"
_FAITH = "python -m benchmarks.faithfulness_research"

CLAIMS: tuple[Claim, ...] = (
    # -- TAPPFL (AAAI 2024; spec B11 Table 2)
    Claim(
        "TAPPFL", "tappfl_lambda_in_training",
        "TAPPFL λ↑ lowers attribute inference accuracy (the in-training privacy head)",
        "Adult gender: 0.700 (λ=0) → 0.525 (λ=1); CIFAR-10 animal: 0.74 → 0.52",
        "Table 2; 100 devices, 10 %/round, 20 rounds, 10 local epochs, batch 10, lr 0.01",
        "in-training attacker accuracy (sex)",
        Side("λ=0", (_r("tappfl_adult.json", "rows", _rows(attribute="sex", defense="tappfl",
                                                           adversary="5 step(s), lr x10",
                                                           **{"lambda": 0.0}), "in_acc"),)),
        Side("λ=1", (_r("tappfl_adult.json", "rows", _rows(attribute="sex", defense="tappfl",
                                                           adversary="5 step(s), lr x10",
                                                           **{"lambda": 1.0}), "in_acc"),)),
        "<", "Adult, the paper preset (100 devices, 20 rounds), strong adversary",
        "python -m benchmarks.tappfl_adult", preset="tappfl_cifar10",
        preset_read=PresetRead("attack_in_training_acc", "defense.tradeoff_lambda", 0.0, 1.0)),
    Claim(
        "TAPPFL", "tappfl_lambda_fresh",
        "TAPPFL λ↑ lowers attribute inference by a fresh attacker trained after the release",
        "not reported (the paper scores its in-training head only)",
        "Table 2 setting",
        "fresh attacker AUC (marital status)",
        Side("λ=0", (_r("tappfl_adult.json", "rows", _rows(attribute="marital_status",
                                                           **{"lambda": 0.0}), "best_auc"),),
             interval=tuple(_r("tappfl_adult.json", "rows", _rows(attribute="marital_status",
                                                                  **{"lambda": 0.0}),
                               "best_auc_95ci", i) for i in (0, 1))),
        Side("λ=1", (_r("tappfl_adult.json", "rows", _rows(attribute="marital_status",
                                                           **{"lambda": 1.0}), "best_auc"),),
             interval=tuple(_r("tappfl_adult.json", "rows", _rows(attribute="marital_status",
                                                                  **{"lambda": 1.0}),
                               "best_auc_95ci", i) for i in (0, 1))),
        "<", "Adult, the paper preset, strongest of a fresh logistic and MLP attacker",
        "python -m benchmarks.tappfl_adult", preset="tappfl_cifar10",
        preset_read=PresetRead("attack_auc_best", "defense.tradeoff_lambda", 0.0, 1.0)),
    Claim(
        "TAPPFL", "tappfl_beats_dp_gaussian",
        "TAPPFL keeps more utility than DP-Gaussian at equal attribute inference",
        "CIFAR-10 (Fig. 4): 'significantly better' at inference 0.55-0.75 (values in figure only)",
        "Fig. 4; noise tuned so inference matches TAPPFL's",
        "utility at TAPPFL's fresh-attacker AUC",
        Side("DP-Gaussian", (_r("tappfl_adult.json", "tuned_baselines", "dp_gaussian",
                                "baseline_best_utility_at_or_below_target"),)),
        Side("TAPPFL", (_r("tappfl_adult.json", "tuned_baselines", "dp_gaussian",
                           "tappfl_utility"),)),
        ">", "Adult sex, DP-Gaussian noise tuned to TAPPFL λ=0.5 fresh-MLP AUC",
        "python -m benchmarks.tappfl_adult", preset="tappfl_cifar10"),
    Claim(
        "TAPPFL", "tappfl_beats_pruning",
        "TAPPFL keeps more utility than model compression (pruning) at equal attribute inference",
        "CIFAR-10 (Fig. 4): 'significantly better' than MC (values in figure only)",
        "Fig. 4; pruning rate tuned so inference matches TAPPFL's",
        "utility at TAPPFL's fresh-attacker AUC",
        Side("pruning", (_r("tappfl_adult.json", "tuned_baselines", "pruning",
                            "baseline_best_utility_at_or_below_target"),)),
        Side("TAPPFL", (_r("tappfl_adult.json", "tuned_baselines", "pruning",
                           "tappfl_utility"),)),
        ">", "Adult sex, pruning rate tuned to TAPPFL λ=0.5 fresh-MLP AUC",
        "python -m benchmarks.tappfl_adult", preset="tappfl_cifar10"),
    # -- Inf2Guard (USENIX Security 2024; spec 004 §6)
    Claim(
        "Inf2Guard", "inf2guard_mia_lambda",
        "Inf2Guard λ↑ lowers representation membership inference",
        "CIFAR-10 MIA accuracy 70.1 % (λ=0) → 51.1 % (λ=0.75), utility 78.9 % → 77.2 %",
        "Table 1; ResNet-18 encoder, 300 + 300 epochs, attacker on r",
        "representation LiRA AUC (mean over seeds)",
        Side("λ=0", (_r("faithfulness_raw/repr_mia.json", "summary", "0",
                        "representation_lira_auc", "mean"),),
             interval=(_r("faithfulness_raw/repr_mia.json", "summary", "0",
                          "representation_lira_auc", "lo"),
                       _r("faithfulness_raw/repr_mia.json", "summary", "0",
                          "representation_lira_auc", "hi"))),
        Side("λ=0.5", (_r("faithfulness_raw/repr_mia.json", "summary", "0.5",
                          "representation_lira_auc", "mean"),),
             interval=(_r("faithfulness_raw/repr_mia.json", "summary", "0.5",
                          "representation_lira_auc", "lo"),
                       _r("faithfulness_raw/repr_mia.json", "summary", "0.5",
                          "representation_lira_auc", "hi"))),
        "<", "mnist5k, 500 members, 60 epochs, 16 shadows, 2 seeds",
        f"{_FAITH} repr-mia", preset="inf2guard_mia_cifar10",
        preset_read=PresetRead("mia_representation_auc", "defense.tradeoff_lambda", 0.0, 0.75)),
    Claim(
        "Inf2Guard", "inf2guard_mia_vs_dpsgd",
        "Inf2Guard keeps more utility than DP-SGD at equal membership privacy",
        "CIFAR-10: 77 % (Inf2Guard) vs 48 % (DP-SGD) at MIA 51 %",
        "Table 2; DP-SGD via Opacus, ε 0.5-16",
        "utility at equal LiRA AUC",
        # the equal-privacy benchmark (#22): DP-SGD over target ε with the recipe that trains,
        # 3 seeds; membership.json's own equal-LiRA key is null since its DP-SGD curve stops
        # just above Inf2Guard's collapsed λ = 1
        Side("DP-SGD", (_r("equal_privacy.json", "headline", "dpsgd_utility_at_equal_lira_auc"),)),
        Side("Inf2Guard", (_r("equal_privacy.json", "headline",
                              "inf2guard_utility_at_equal_lira_auc"),)),
        ">", "mnist5k, 500 members, LiRA offline (2 shadows), 3 seeds, each curve's utility at "
             "the lowest LiRA AUC both reach",
        "PYTHONPATH=. python benchmarks/equal_privacy.py --seeds 3", preset="inf2guard_mia_cifar10"),
    Claim(
        "Inf2Guard", "inf2guard_pia_lambda",
        "Inf2Guard λ↑ lowers property inference (strongest attacker, fresh after release)",
        "Census PIA 68 % (λ=0) → 34 % (λ=0.75); chance 25 %",
        "Table 3; mean aggregator, K = 4 ratio classes",
        "strongest attacker accuracy",
        Side("λ=0", (_r("property.json", "rows", _rows(**{"lambda": 0.0}), "best_acc"),)),
        Side("λ=0.75", (_r("property.json", "rows", _rows(**{"lambda": 0.75}), "best_acc"),)),
        "<", "Adult, K = 4, mean aggregation, subsets of 32-256 rows, 2 seeds",
        "python -m benchmarks.property_bench", preset="inf2guard_pia_celeba",
        note="the in-training adversary does fall (next row); fresh attackers read more at λ>0",
        preset_read=PresetRead("property_acc_best", "defense.tradeoff_lambda", 0.0, 0.75)),
    Claim(
        "Inf2Guard", "inf2guard_pia_in_training",
        "Inf2Guard λ↑ lowers property inference by its in-training adversary",
        "Census PIA 68 % (λ=0) → 34 % (λ=0.75)",
        "Table 3 (the paper's attacker is its privacy network)",
        "in-training adversary accuracy",
        Side("λ=0", (_r("property.json", "rows", _rows(**{"lambda": 0.0}), "in_training_acc"),)),
        Side("λ=0.75", (_r("property.json", "rows", _rows(**{"lambda": 0.75}),
                           "in_training_acc"),)),
        "<", "Adult, K = 4, mean aggregation, 2 seeds", "python -m benchmarks.property_bench",
        preset="inf2guard_pia_celeba",
        preset_read=PresetRead("property_in_training_acc", "defense.tradeoff_lambda", 0.0, 0.75)),
    Claim(
        "Inf2Guard", "inf2guard_dra_eps",
        "Inf2Guard's learned perturbation (ε↑) lowers reconstruction SSIM",
        "CIFAR-10 SSIM 0.78 (ε=0) → 0.17 (ε=1.75), utility 89.5 % → 68.9 %",
        "Table 6; λ = 0.4, 2-conv encoder, learned decoder",
        "SSIM of the strongest attacker (mean over seeds)",
        Side("ε=0", (_r("faithfulness_raw/repr_ssim_mnist5k.json", "rows",
                        _rows(channel="learned", epsilon=0.0, **{"lambda": 0.4}), "ssim"),)),
        Side("ε=4", (_r("faithfulness_raw/repr_ssim_mnist5k.json", "rows",
                        _rows(channel="learned", epsilon=4.0, **{"lambda": 0.4}), "ssim"),)),
        "<", "mnist5k, λ = 0.4, r of 256 dims, 3 seeds",
        f"{_FAITH} repr-ssim --data mnist5k --seeds 0 1 2", preset="inf2guard_dra_cifar10",
        preset_read=PresetRead("recon_ssim", "defense.epsilon", 0.0, 1.75)),
    Claim(
        "Inf2Guard", "inf2guard_dra_learned_vs_fixed",
        "learned Inf2Guard beats fixed noise at matched utility",
        "CIFAR-10 SSIM 0.21 at 78.0 % (learned, ε=1.25) vs 0.24 at 77.7 % (uniform) "
        "and 0.37 at 77.4 % (DP-SGD)",
        "Tables 6, 8, 18; λ = 0.4",
        "learned − best fixed SSIM at matched utility",
        Side("0", constant=0.0),
        Side("learned − fixed", (_r("faithfulness_raw/repr_ssim_mnist5k.json", "headline",
                                    "learned_minus_best_fixed_ssim_at_matched_utility"),),
             interval=(_r("faithfulness_raw/repr_ssim_mnist5k.json", "summary", "2",
                          "learned_minus_best_fixed", "lo"),
                       _r("faithfulness_raw/repr_ssim_mnist5k.json", "summary", "2",
                          "learned_minus_best_fixed", "hi"))),
        "<", "mnist5k, λ = 0.4, learned at ε_ref against every fixed channel, 3 seeds",
        f"{_FAITH} repr-ssim --data mnist5k --seeds 0 1 2", preset="inf2guard_dra_cifar10"),
    # -- channel capacity κ (USENIX Security 2024; spec 001 §5.9)
    Claim(
        "κ channel", "kappa_psnr",
        "κ↓ lowers gradient-inversion PSNR (κ↑ lets more through)",
        "CIFAR-10 heatmaps (Fig. 14): MSE rises as κ falls (values in figure only)",
        "Figs 10, 14; LeNet, n = 10⁴ steps, κ ∈ {50..300}, Natural channel",
        "PSNR of the strongest inverter (mean over seeds)",
        Side("κ/d=1", (_r("gradient_leakage.json", "rows",
                          _rows(part="defended", defense="natural", kappa_per_dim=1.0),
                          "psnr_median"),)),
        Side("κ/d=0.01", (_r("gradient_leakage.json", "rows",
                             _rows(part="defended", defense="natural", kappa_per_dim=0.01),
                             "psnr_median"),)),
        "<", "digits, MLP, Natural channel, κ/d 0.01-1, 3 seeds",
        "python -m benchmarks.gradient_leakage", preset="kappa_lenet_cifar10",
        preset_read=PresetRead("recon_best_psnr_median", "defense.kappa", 300.0, 50.0)),
    Claim(
        "κ channel", "kappa_utility",
        "κ↑ raises accuracy",
        "Fig. 9: accuracy rises with κ for every data set and model (values in figure only)",
        "Fig. 9; Natural channel, n = 10⁴",
        "test accuracy (mean over seeds)",
        Side("κ/d=0.01", (_r("gradient_leakage.json", "rows",
                             _rows(part="defended", defense="natural", kappa_per_dim=0.01),
                             "utility"),)),
        Side("κ/d=1", (_r("gradient_leakage.json", "rows",
                          _rows(part="defended", defense="natural", kappa_per_dim=1.0),
                          "utility"),)),
        ">", "digits, MLP, Natural channel, 3 seeds", "python -m benchmarks.gradient_leakage",
        preset="kappa_lenet_cifar10",
        preset_read=PresetRead("utility_acc", "defense.kappa", 50.0, 300.0)),
    Claim(
        "κ channel", "kappa_vs_dpsgd",
        "the Natural channel keeps more utility than DP-SGD at equal reconstruction privacy",
        "Fig. 15: 'Natural Channel has the best trade-off' (values in figure only)",
        "Fig. 15; LeNet, n = 10⁴, DP-SGD B = 64",
        "Natural / DP-SGD utility at equal PSNR",
        Side("1", constant=1.0),
        Side("ratio", (_r("gradient_leakage.json", "headline",
                          "natural_over_dpsgd_utility_equal_psnr"),
                       _r("gradient_leakage.cuda.json", "headline",
                          "natural_over_dpsgd_utility_equal_psnr"))),
        ">", "digits, MLP (CPU file; else the CUDA run of the same setting)",
        "python -m benchmarks.gradient_leakage", preset="kappa_lenet_cifar10",
        note=("CPU file: read at the one PSNR both curves reach (about 5.3 dB, where iDLG "
              "reads only DP-SGD's noise at every target ε)")),
    Claim(
        "κ channel", "kappa_thm1",
        "Theorem 1: no attacker's expected MSE falls below the bound",
        "Theorem 1 (Eq. 5), a lower bound on E‖D − D̂‖²/d",
        "any data, any estimator",
        "seed means below the bound (count)",
        Side("0", constant=0.0),
        Side("below", (_r("faithfulness_raw/kappa_thm1.json", "headline",
                          "kappa_thm1_seed_means_below_bound"),)),
        "=", "digits, κ/d = 1, means over targets and seeds",
        f"{_FAITH} kappa-thm1"),
    # -- FIL (UAI 2021; spec A11)
    Claim(
        "FIL", "fil_identifies_leakers",
        "FIL η identifies leaking examples (η ranks like per-example LiRA scores)",
        "Fig. 7 / §A11: high-η examples are the most vulnerable (white-box attribute attack)",
        "IWPC / UCI Adult, linear model, σ = 10⁻³",
        "Spearman ρ(η, LiRA score)",
        Side("0", constant=0.0),
        Side("ρ", (_r("faithfulness_raw/fil_lira_digits.json", "headline", "fil_lira_spearman"),)),
        ">", "digits (0 vs 1, PCA 20, 288 rows), linear, η_max = 3.2, 128 shadows",
        f"{_FAITH} fil-lira",
        largest=(Side("0", constant=0.0),
                 Side("ρ", (_r("faithfulness_raw/fil_lira_adult.json", "rows",
                               _rows(eta_target=3.2), "spearman_eta_lira_score", "rho"),))),
        largest_setting="UCI Adult paper view (30,162 rows, d = 86): the paper's own scale"),
    Claim(
        "FIL", "irfil_equalises",
        "IRFIL equalises per-example η (std shrinks) at little accuracy cost",
        "MNIST linear η̄ 0.040 ± 0.014 → 0.047 ± 0.000, accuracy 100 → 99.8 %",
        "Table 1; MNIST 0 vs 1, PCA 20",
        "std of η after / before IRFIL",
        Side("1", constant=1.0),
        Side("ratio", (_r("fil.json", "headline", "irfil_std_ratio_after_over_before"),)),
        "<", "synthetic/digits FIL benchmark, linear", "python -m benchmarks.fil_bench"),
)

# ---------------------------------------------------------------------------------------------
# paper-scale presets (CUDA; CIFAR-10 / CelebA from $PRIVLAB_DATA_DIR/<name>, never downloaded)

PRESETS: dict[str, Preset] = {p.preset_id: p for p in (
    Preset(
        "tappfl_cifar10", "TAPPFL",
        {"kind": "attribute_privacy", "device": "auto", "data": {"name": "cifar10"},
         "defense": {"kind": "tappfl", "tradeoff_lambda": 0.5}, "pretrain_epochs": 5,
         "representation_dim": 1024, "hidden_dim": 4096, "critic_hidden": 4096,
         "fl": {"num_devices": 100, "fraction_fit": 0.1, "rounds": 20, "local_epochs": 10,
                "batch_size": 10, "lr": 0.01, "partition": "iid"}},
        "feature extractor 2×conv64-pool-2×conv128-pool + VGG privacy net (spec B7)",
        "tappfl_cifar", (10, 3, 32, 32), 20 * 10 * 10 * 50 * 5,
        "20 rounds × 10 devices × 10 local epochs × 50 batches of 10, × 5 λ",
        our_model="our runner's MLP extractor 3072→4096→1024 (the paper's conv extractor is not in our runners)",
        our_widths=(3072, 4096, 1024),
        grid="defense.tradeoff_lambda=0,0.25,0.5,0.75,1"),
    Preset(
        "inf2guard_mia_cifar10", "Inf2Guard",
        {"kind": "membership", "device": "auto", "data": {"name": "cifar10"},
         "defense": {"kind": "inf2guard", "tradeoff_lambda": 0.75},
         "train": {"members": 25000, "epochs": 600, "batch_size": 100, "lr": 0.001},
         "attack": {"shadows": 16}},
        "ResNet-18 encoder + membership and utility nets (spec 004 §5.3)",
        "resnet18", (100, 3, 32, 32), 600 * 250 * 17,
        "(300 + 300) epochs × 250 batches of 100, × (target + 16 LiRA shadows)",
        our_model="our runner's MLP encoder 3072→128→64 (Inf2Guard's default widths; ResNet-18 is not in our runners)",
        our_widths=(3072, 128, 64),
        grid="defense.tradeoff_lambda=0,0.25,0.5,0.75,1 (and defense.kind=dp_sgd for the DP-SGD row)"),
    Preset(
        "inf2guard_dra_cifar10", "Inf2Guard",
        {"kind": "repr_reconstruction", "device": "auto", "data": {"name": "cifar10"},
         "defense": {"kind": "inf2guard_dra", "tradeoff_lambda": 0.4, "epsilon": 1.25},
         "train": {"epochs": 10, "batch_size": 128, "max_train": 50000,
                   "representation_dim": 1024, "hidden_dim": 4096}},
        "2-layer conv32 encoder + conv utility net (spec 004 §5.3)",
        "inf2guard_dra", (128, 3, 32, 32), 10 * 391 * 4,
        "10 epochs × 391 batches of 128, × 4 ε",
        our_model="our runner's MLP encoder 3072→4096→1024 (the paper's 2-conv encoder is not in our runners)",
        our_widths=(3072, 4096, 1024),
        grid="defense.epsilon=0,0.75,1.25,1.75 (and defense.channel=gaussian/laplace/uniform/dp)"),
    Preset(
        "kappa_lenet_cifar10", "κ channel",
        {"kind": "gradient_leakage", "device": "auto", "data": {"name": "cifar10"},
         "defense": {"kind": "channel", "channel": "natural", "kappa": 300.0},
         "train": {"model": "lenet5", "epochs": 13, "batch_size": 64, "lr": 0.01,
                   "optimizer": "sgd"},
         "attack": {"attackers": ["ig"], "targets": 30, "iterations": 4000}},
        "LeNet-5 (62,006 parameters; spec 001 §5.3)",
        "lenet5", (64, 3, 32, 32), 10_000 * 4,
        "n = 10⁴ steps of batch 64 (13 epochs of 50,000), × 4 κ",
        our_model="LeNet-5, the paper's model",
        grid="defense.kappa=50,100,200,300"),
    Preset(
        "inf2guard_pia_celeba", "Inf2Guard",
        {"kind": "property", "device": "auto", "data": {"name": "celeba", "max_samples": 100000},
         "defense": {"kind": "inf2guard_property", "tradeoff_lambda": 0.75},
         "train": {"epochs": 100, "representation_dim": 512, "hidden_dim": 4096}},
        "ResNet-18-like encoder on CelebA 32×32 (spec 004 §5.3, PIA)",
        "resnet18", (128, 3, 32, 32), 100 * 1270 * 5,
        "100 epochs × 1,270 batches of 128 (162,770 faces), × 5 λ", data="celeba", our_model="our runner's MLP encoder 3072→4096→512 (ResNet-18 is not in our runners)",
        our_widths=(3072, 4096, 512),
        grid="defense.tradeoff_lambda=0,0.25,0.5,0.75,1"),
)}


# ---------------------------------------------------------------------------------------------
# reading and building the table


def read_ref(ref: Ref, root: Path = ROOT) -> float | None:
    """The number at ``ref``; None when the file, a key or the value is missing or not finite."""
    try:
        obj: Any = json.loads((root / ref.file).read_text())
    except (OSError, ValueError):
        return None
    return _walk(obj, ref.path)


def _walk(obj: Any, path: tuple[PathPart, ...]) -> float | None:
    for i, part in enumerate(path):
        if isinstance(part, tuple):  # row filter: mean of the rest over matching rows
            if not isinstance(obj, list):
                return None
            rows = [r for r in obj if isinstance(r, dict)
                    and all(k in r and r[k] == v for k, v in part)]
            vals = [v for v in (_walk(r, path[i + 1:]) for r in rows) if v is not None]
            return sum(vals) / len(vals) if vals else None
        if isinstance(part, int):
            if not isinstance(obj, list) or not -len(obj) <= part < len(obj):
                return None
            obj = obj[part]
        elif isinstance(obj, dict) and part in obj:
            obj = obj[part]
        else:
            return None
    if isinstance(obj, bool):
        return float(obj)
    if isinstance(obj, (int, float)) and math.isfinite(obj):
        return float(obj)
    return None


def _side_value(side: Side, root: Path) -> tuple[float | None, str]:
    if side.constant is not None:
        return side.constant, "constant"
    for ref in side.refs:
        v = read_ref(ref, root)
        if v is not None:
            return v, ref.text()
    return None, " or ".join(r.text() for r in side.refs)


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    return f"{v:.3g}" if abs(v) < 1e-2 and v != 0 else f"{v:.3f}"


def _evaluate(claim: Claim, base: Side, test: Side, root: Path) -> dict[str, Any]:
    b, b_src = _side_value(base, root)
    t, t_src = _side_value(test, root)
    # a fallback ref (e.g. the CUDA run of the same setting) is named in the cell
    fallback = [s for side, s in ((base, b_src), (test, t_src))
                if side.refs and s != side.refs[0].text() and " or " not in s]
    sources = [s for s in (b_src, t_src) if s != "constant"]
    if b is None or t is None:
        return {"value": None, "text": NOT_MEASURED, "holds": None, "sources": sources}
    holds = {"<": t < b, ">": t > b, "=": t == b}[claim.relation]
    resolved = _resolved(base, test, b, root)
    if base.constant is not None:
        text = f"{test.label} {_fmt(t)} (claim: {claim.relation} {_fmt(b)})"
    else:
        text = f"{base.label} {_fmt(b)} → {test.label} {_fmt(t)}"
    if fallback:
        text += " [from " + ", ".join(f.split(":")[0] for f in fallback) + "]"
    if resolved is not None:
        text += (" (95 % intervals apart)" if resolved else " (within the 95 % intervals: "
                 "the direction is not resolved)")
    return {"value": [b, t], "text": text, "holds": bool(holds), "resolved": resolved,
            "sources": sources}


def _interval(side: Side, root: Path) -> tuple[float, float] | None:
    if side.interval is None:
        return None
    lo, hi = (read_ref(r, root) for r in side.interval)
    return None if lo is None or hi is None else (lo, hi)


def _resolved(base: Side, test: Side, b: float, root: Path) -> bool | None:
    """Whether the stored 95 % intervals separate the two ends (a constant end: whether the
    measured end's interval excludes it); None where no interval is stored."""
    ti = _interval(test, root)
    bi = (b, b) if base.constant is not None else _interval(base, root)
    if ti is None or bi is None:
        return None
    return ti[1] < bi[0] or bi[1] < ti[0]


def preset_config(preset_id: str) -> Any:
    """The validated config of a preset (``core.config.parse_config``)."""
    from core.config import parse_config

    return parse_config(dict(PRESETS[preset_id].config))


def load_costs(root: Path = ROOT) -> dict[str, Any]:
    """Measured CPU step costs per preset from ``papers.json`` ({} when not yet measured)."""
    try:
        data = json.loads((root / PAPERS_JSON).read_text())
    except (OSError, ValueError):
        return {}
    costs = data.get("preset_costs") if isinstance(data, dict) else None
    return costs if isinstance(costs, dict) else {}


def format_hours(seconds: float) -> str:
    h = seconds / 3600.0
    if h >= 24 * 365:
        return f"{h / (24 * 365):.1f} years"
    if h >= 48:
        return f"{h / 24:.0f} days"
    return f"{h:.1f} h" if h >= 1 else f"{seconds / 60:.0f} min"


def preset_cell(preset_id: str, costs: dict[str, Any], cuda: bool) -> dict[str, Any]:
    """The largest-preset cell of a claim measured by a CUDA preset not run here: the command
    and, from the measured CPU step cost, how long the paper's training would take on CPU."""
    p = PRESETS[preset_id]
    from core.data.torchvision_sets import is_present

    data_ok = is_present(p.data)
    cost = costs.get(preset_id) or {}
    sps = cost.get("seconds_per_step")
    if isinstance(sps, (int, float)) and sps > 0:
        what = cost.get("timed_description") or p.timed_model
        est = (f"estimate: ≈ {format_hours(sps * p.steps)} on this CPU "
               f"({sps:.3g} s per SGD step timed on a synthetic batch {tuple(p.batch_shape)}; "
               f"timed: {what}; × {p.steps:,} steps: {p.steps_note})")
    else:
        est = "estimate not measured: python -m benchmarks.papers_check"
    run = (f"PRIVLAB_DATA_DIR=DIR (holding {p.data}/ in the torchvision layout) "
           f"privlab papers --preset {preset_id} > {preset_id}.yaml && privlab run {preset_id}.yaml"
           + (f", once per point of --set {p.grid}" if p.grid else ""))
    where = "CUDA present" if cuda else "CPU only here"
    data_txt = f"{p.data} found" if data_ok else f"{p.data} not found under $PRIVLAB_DATA_DIR"
    model = f"; the preset trains {p.our_model}" if p.our_model else ""
    own = cost.get("preset_seconds_per_step")
    if isinstance(own, (int, float)) and own > 0 and p.our_widths:
        model += (f", timed too: {own:.3g} s/step → ≈ {format_hours(own * p.steps)} for the "
                  "same steps on this CPU")
    return {"value": None, "text": f"{NOT_MEASURED} ({where}; {data_txt}); {est}{model}",
            "holds": None, "estimate": True, "preset": preset_id, "command": run,
            "estimate_seconds": (sps * p.steps) if isinstance(sps, (int, float)) else None}


_KNOB_LABEL = {"defense.tradeoff_lambda": "λ", "defense.epsilon": "ε", "defense.kappa": "κ"}


def _leaves(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_leaves(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): obj}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def preset_runs(claim: Claim, runs: list[dict[str, Any]]) -> dict[float, dict[str, Any]]:
    """The newest stored run of ``claim``'s preset at each knob value: a run counts only when
    every setting the preset names equals the preset's, the knob aside (a smaller run of the
    same kind on the same data is not the preset). ``runs``: newest first, each with ``key``,
    ``kind``, ``config`` and ``metrics`` (the result store's index rows)."""
    if claim.preset is None or claim.preset_read is None:
        return {}
    p = PRESETS[claim.preset]
    want = {k: v for k, v in _leaves(p.config).items() if k != claim.preset_read.knob}
    found: dict[float, dict[str, Any]] = {}
    for run in runs:
        if run.get("kind") != p.config["kind"]:
            continue
        have = _leaves(run.get("config") or {})
        if not all(k in have and _same(have[k], v) for k, v in want.items()):
            continue
        knob = have.get(claim.preset_read.knob)
        if isinstance(knob, (int, float)) and float(knob) not in found:
            found[float(knob)] = run
    return found


def _stored_preset_cell(claim: Claim, runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The largest-preset cell from stored preset runs at both ends of the knob, else None."""
    found = preset_runs(claim, runs)
    r = claim.preset_read
    if r is None:
        return None
    ends = [next((run for k, run in found.items() if math.isclose(k, v)), None)
            for v in (r.base, r.test)]
    vals = [_walk(run.get("metrics") or {}, (r.metric,)) if run else None for run in ends]
    if None in vals:
        return None
    b, t = vals
    holds = {"<": t < b, ">": t > b, "=": t == b}[claim.relation]
    lab = _KNOB_LABEL.get(r.knob, r.knob)
    keys = ", ".join(str(run.get("key", ""))[:8] for run in ends if run)
    return {"value": [b, t], "holds": bool(holds), "estimate": False,
            "text": f"{lab}={r.base:g} {_fmt(b)} → {lab}={r.test:g} {_fmt(t)} "
                    f"({r.metric}; stored preset runs {keys})",
            "sources": [f"result store: {keys}"]}


def build_table(root: Path = ROOT, *, costs: dict[str, Any] | None = None,
                cuda: bool | None = None,
                runs: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per claim: the paper's number and setting, ours at default and at the largest
    preset, whether the direction holds (True / False / None = not measured). ``runs``: the
    result store's index rows, newest first (the CLI and the page pass them; core reads no
    store), where a preset run someone made on CUDA answers its claim's largest-preset cell."""
    if costs is None:
        costs = load_costs(root)
    if cuda is None:
        cuda = _cuda_available()
    rows = []
    for c in CLAIMS:
        ours = _evaluate(c, c.base, c.test, root)
        if c.largest is not None:
            big = _evaluate(c, c.largest[0], c.largest[1], root)
            big.update(estimate=False, setting=c.largest_setting)
            if big["holds"] is None:
                big["text"] = f"{NOT_MEASURED}; to measure: {c.command}"
        elif c.preset is not None:
            big = (_stored_preset_cell(c, runs or []) if c.preset_read else None) \
                or preset_cell(c.preset, costs, cuda)
        else:
            big = {"value": None, "text": "no larger preset (the default is the largest)",
                   "holds": None, "estimate": False}
        if ours["holds"] is None:
            ours["text"] = f"{NOT_MEASURED}; to measure: {c.command}"
        rows.append({
            "paper": c.paper, "claim_id": c.claim_id, "statement": c.statement,
            "paper_number": c.paper_number, "paper_setting": c.paper_setting,
            "metric": c.metric, "relation": c.relation, "our_setting": c.our_setting,
            "ours_default": ours, "ours_largest": big,
            "direction_holds": ours["holds"], "command": c.command, "note": c.note,
        })
    return rows


def runs_from_records(records: Any) -> list[dict[str, Any]]:
    """The result store's index records (``store.list()``, newest first) as plain dicts for
    :func:`build_table`, only those of the presets' kinds."""
    kinds = {p.config["kind"] for p in PRESETS.values()}
    return [{"key": r.key, "kind": r.kind, "config": r.config, "metrics": r.metrics}
            for r in records if getattr(r, "kind", None) in kinds]


def headline(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Claims with a measured direction in our default setting, and those whose direction holds."""
    checked = [r for r in rows if r["direction_holds"] is not None]
    return {"paper_claims_checked": len(checked),
            "paper_claims_direction_holds": sum(1 for r in checked if r["direction_holds"]),
            "paper_claims_declared": len(rows),
            "paper_claims_within_intervals": sum(
                1 for r in checked if r["ours_default"].get("resolved") is False)}


def holds_text(h: bool | None) -> str:
    return {True: "holds", False: "does not hold", None: NOT_MEASURED}[h]


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    return bool(torch.cuda.is_available())
