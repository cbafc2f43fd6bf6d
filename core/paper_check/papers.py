"""Paper check: each paper's claims beside our measurements, with a verdict decided by the 95 %
interval of the compared difference (:mod:`core.paper_check.verdicts`).

The claims (:data:`CLAIMS`, declared in :mod:`core.paper_check.claims`) cite the paper's own table,
figure or section and quote it verbatim; results the papers do not state are listed apart as
our own findings. Each claim is read at every scale measured, smallest first: our default
setting, a stored run at a larger scale (Adult's full FIL view), and the paper-scale CUDA
preset (:data:`PRESETS`, CIFAR-10 / CelebA from ``$PRIVLAB_DATA_DIR``; each trains the paper's
own architecture family as a registered part, ``model: {arch}``: TAPPFL's conv extractor,
Inf2Guard's ResNet-18-block encoder (membership, CelebA property) and 2-conv DRA encoder,
LeNet-5 for the κ paper) whose stored runs answer the claim when someone has made them, and whose CPU cost is
otherwise extrapolated from timed steps. The largest scale measured decides: holds / does not
hold / not resolved; a smaller scale never overrides it.

Beside it, the paper-architecture column (:mod:`core.paper_check.arch`): the same claim with the
paper's own model family (declared per claim, :class:`core.paper_check.claims.PaperArch`), by the
same interval rule; a verdict that differs from the first column is named.

Each row's verdict is recorded in ``benchmarks/results/papers.json``
(``python -m benchmarks.papers_check --verdicts`` rewrites the rows without re-timing);
``tests/test_paper_verdicts.py`` recomputes them and fails on an unrecorded change.

Torch-free and streamlit-free: the CLI and the dashboard import it on page load.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.foundation.provenance import source_files, stale_mark
from core.paper_check import arch as paper_arch
from core.paper_check.claims import CLAIMS, OWN, PAPER, Claim, PaperArch, PresetRead, Scale
from core.paper_check.verdicts import (
    FAILS,
    HOLDS,
    UNRESOLVED,
    VERDICTS,
    decide,
    deciding_cell,
    fmt_value,
)

__all__ = [
    "CLAIMS",
    "FAILS",
    "HOLDS",
    "OWN",
    "PAPER",
    "PRESETS",
    "UNRESOLVED",
    "VERDICTS",
    "Claim",
    "PaperArch",
    "Preset",
    "PresetRead",
    "Scale",
    "build_table",
    "fmt_value",
    "headline",
]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = "benchmarks/results"
PAPERS_JSON = f"{RESULTS}/papers.json"
NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Preset:
    """A paper-scale config (our runner at the paper's data and epochs with the paper's own
    architecture, ``model: {arch}``; device auto = CUDA when present) and what the paper's own training costs, in optimiser
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
# paper-scale presets (CUDA; CIFAR-10 / CelebA from $PRIVLAB_DATA_DIR/<name>, never downloaded)

# ---------------------------------------------------------------------------------------------
# paper-scale presets (CUDA; CIFAR-10 / CelebA from $PRIVLAB_DATA_DIR/<name>, never downloaded)

PRESETS: dict[str, Preset] = {p.preset_id: p for p in (
    Preset(
        "tappfl_cifar10", "TAPPFL",
        {"kind": "attribute_privacy", "device": "auto", "data": {"name": "cifar10"},
         "model": {"arch": "tappfl_cifar"},
         "defense": {"kind": "tappfl", "tradeoff_lambda": 0.5}, "pretrain_epochs": 5,
         "representation_dim": 1024, "hidden_dim": 4096, "critic_hidden": 4096,
         "fl": {"num_devices": 100, "fraction_fit": 0.1, "rounds": 20, "local_epochs": 10,
                "batch_size": 10, "lr": 0.01, "partition": "iid"}},
        "feature extractor 2×conv64-pool-2×conv128-pool + VGG privacy net (TAPPFL Table 3)",
        "tappfl_cifar", (10, 3, 32, 32), 20 * 10 * 10 * 50 * 5,
        "20 rounds × 10 devices × 10 local epochs × 50 batches of 10, × 5 λ",
        grid="defense.tradeoff_lambda=0,0.25,0.5,0.75,1"),
    Preset(
        "inf2guard_mia_cifar10", "Inf2Guard",
        {"kind": "membership", "device": "auto", "data": {"name": "cifar10"},
         "model": {"arch": "inf2guard_mia"},
         "defense": {"kind": "inf2guard", "tradeoff_lambda": 0.75},
         "train": {"members": 25000, "epochs": 600, "batch_size": 100, "lr": 0.001},
         "attack": {"shadows": 16}},
        "ResNet-block encoder + membership and utility nets (Inf2Guard Table 12; timed as a "
        "ResNet-18 with a CIFAR stem)",
        "resnet18", (100, 3, 32, 32), 600 * 250 * 17,
        "(300 + 300) epochs (the authors' code; the paper states no epoch count) × 250 "
        "batches of 100, × (target + 16 LiRA shadows)",
        grid="defense.tradeoff_lambda=0,0.25,0.5,0.75,1 (and defense.kind=dp_sgd for the DP-SGD row)"),
    Preset(
        "inf2guard_dra_cifar10", "Inf2Guard",
        {"kind": "repr_reconstruction", "device": "auto", "data": {"name": "cifar10"},
         "model": {"arch": "inf2guard_dra"},
         "defense": {"kind": "inf2guard_dra", "tradeoff_lambda": 0.4, "epsilon": 1.25},
         "train": {"epochs": 10, "batch_size": 128, "max_train": 50000,
                   "representation_dim": 1024, "hidden_dim": 4096}},
        "2-layer conv32 encoder + conv utility net (Inf2Guard Table 14)",
        "inf2guard_dra", (128, 3, 32, 32), 10 * 391 * 4,
        "10 epochs × 391 batches of 128, × 4 ε",
        grid="defense.epsilon=0,0.75,1.25,1.75 (and defense.channel=gaussian/laplace/uniform/dp)"),
    Preset(
        "kappa_lenet_cifar10", "κ channel",
        {"kind": "gradient_leakage", "device": "auto", "data": {"name": "cifar10"},
         "defense": {"kind": "channel", "channel": "natural", "kappa": 300.0},
         "train": {"model": "lenet5", "epochs": 13, "batch_size": 64, "lr": 0.01,
                   "optimizer": "sgd"},
         "attack": {"attackers": ["ig"], "targets": 30, "iterations": 4000}},
        "LeNet-5 (6.20×10⁴ parameters, κ channel Table 2)",
        "lenet5", (64, 3, 32, 32), 10_000 * 4,
        "n = 10⁴ steps of batch 64 (13 epochs of 50,000), × 4 κ",
        our_model="LeNet-5, the paper's model",
        grid="defense.kappa=50,100,200,300"),
    Preset(
        "inf2guard_pia_celeba", "Inf2Guard",
        {"kind": "property", "device": "auto", "data": {"name": "celeba", "max_samples": 100000},
         "model": {"arch": "inf2guard_mia"},
         "defense": {"kind": "inf2guard_property", "tradeoff_lambda": 0.75},
         "train": {"epochs": 100, "representation_dim": 512, "hidden_dim": 4096}},
        "ResNet-block encoder on CelebA 32×32 (Inf2Guard Table 13; timed as a ResNet-18)",
        "resnet18", (128, 3, 32, 32), 100 * 1270 * 5,
        "100 epochs × 1,270 batches of 128 (162,770 faces), × 5 λ", data="celeba",
        grid="defense.tradeoff_lambda=0,0.25,0.5,0.75,1"),
)}




# ---------------------------------------------------------------------------------------------
# presets: configs, costs, stored runs


def preset_config(preset_id: str) -> Any:
    """The validated config of a preset (``core.config.schema.parse_config``)."""
    from core.config.schema import parse_config

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


def preset_cell(preset_id: str, costs: dict[str, Any], cuda: bool, mark: str = "") -> dict[str, Any]:
    """The largest-preset cell of a claim measured by a CUDA preset not run here: the command
    and, from the measured CPU step cost, how long the paper's training would take on CPU.
    ``mark``: the cost file's provenance mark (:func:`core.foundation.provenance.stale_mark`)."""
    p = PRESETS[preset_id]
    from core.data.torchvision_sets import is_present

    data_ok = is_present(p.data)
    cost = costs.get(preset_id) or {}
    sps = cost.get("seconds_per_step")
    if isinstance(sps, (int, float)) and sps > 0:
        what = cost.get("timed_description") or p.timed_model
        est = (f"an estimate from another machine: ≈ {format_hours(sps * p.steps)} on the "
               f"CPU that timed it ({sps:.3g} s per SGD step timed on a synthetic batch {tuple(p.batch_shape)}; "
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
                  "same steps on that CPU")
    if mark and isinstance(sps, (int, float)):
        model += f" ({mark})"
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




def runs_from_records(records: Any) -> list[dict[str, Any]]:
    """The result store's index records (``store.list()``, newest first) as plain dicts for
    :func:`build_table`, only those of the presets' kinds."""
    kinds = {p.config["kind"] for p in PRESETS.values()}
    return [{"key": r.key, "kind": r.kind, "config": r.config, "metrics": r.metrics}
            for r in records if getattr(r, "kind", None) in kinds]



def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    return bool(torch.cuda.is_available())

# ---------------------------------------------------------------------------------------------
# reading the claims and deciding their verdicts


def _constant_base(claim: Claim) -> bool:
    try:
        float(claim.base_label)
    except ValueError:
        return claim.base_label == "bound"
    return True


def _cell(claim: Claim, scale: Scale, root: Path) -> dict[str, Any]:
    """One scale of a claim: the reading, the interval of test − base, and its verdict."""
    r = scale.measure.read(root)
    mark = stale_mark(source_files(r.sources), root)
    cell: dict[str, Any] = {"setting": scale.setting, "measured": r.measured, "estimate": False,
                            "value": [r.base, r.test] if r.measured else None,
                            "interval": r.interval.as_dict() if r.interval else None,
                            "verdict": decide(r.interval, claim.relation) if r.measured else None,
                            "why": "" if r.interval else r.why, "sources": r.sources}
    if not r.measured:
        cell["text"] = f"{NOT_MEASURED}: {r.why}; to measure: {claim.command}"
        return cell
    if _constant_base(claim):
        text = f"{claim.test_label} {fmt_value(r.test)} (claim: {claim.relation} {fmt_value(r.base)})"
    else:
        text = f"{claim.base_label} {fmt_value(r.base)} → {claim.test_label} {fmt_value(r.test)}"
    if r.interval is not None:
        iv = r.interval
        text += f"; Δ {fmt_value(iv.estimate)} [{fmt_value(iv.lo)}, {fmt_value(iv.hi)}] ({iv.method})"
    else:
        text += f"; no interval: {r.why}"
    if mark:
        text += f" ({mark})"
    cell["text"], cell["stale"] = text, mark
    return cell


def _stored_preset_cell(claim: Claim, runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The preset cell from stored preset runs at both ends of the knob (one run per end: a
    point, so it reads "not resolved" and, being the largest scale, decides so), else None."""
    found = preset_runs(claim, runs)
    r = claim.preset_read
    if r is None:
        return None
    ends = [next((run for k, run in found.items() if math.isclose(k, v)), None)
            for v in (r.base, r.test)]
    vals = [(run.get("metrics") or {}).get(r.metric) if run else None for run in ends]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals):
        return None
    b, t = (float(v) for v in vals)
    lab = _KNOB_LABEL.get(r.knob, r.knob)
    keys = ", ".join(str(run.get("key", ""))[:8] for run in ends if run)
    why = "one stored preset run per end: no interval"
    return {"setting": f"paper-scale preset {claim.preset}", "measured": True, "estimate": False,
            "value": [b, t], "interval": None, "verdict": UNRESOLVED, "why": why,
            "text": f"{lab}={r.base:g} {fmt_value(b)} → {lab}={r.test:g} {fmt_value(t)} "
                    f"({r.metric}; stored preset runs {keys}); no interval: {why}",
            "sources": [f"result store: {keys}"]}


def build_table(root: Path = ROOT, *, costs: dict[str, Any] | None = None,
                cuda: bool | None = None,
                runs: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per claim: the paper's citation, quote and number; ours at every scale
    (``cells``, smallest first); the verdict of the largest scale measured. ``runs``: the
    result store's index rows, newest first (the CLI and the page pass them; core reads no
    store), where a preset run someone made on CUDA is the largest scale."""
    if costs is None:
        costs = load_costs(root)
    if cuda is None:
        cuda = _cuda_available()
    rows = []
    for c in CLAIMS:
        cells = [_cell(c, s, root) for s in c.scales]
        stored = _stored_preset_cell(c, runs or []) if c.preset_read else None
        if stored is not None:
            cells.append(stored)
        if len(cells) > 1:
            largest = cells[-1]
        elif c.preset is not None:
            largest = preset_cell(c.preset, costs, cuda,
                                  stale_mark([Path(PAPERS_JSON).name], root))
        else:
            largest = {"value": None, "text": "no larger preset (the default is the largest)",
                       "verdict": None, "estimate": False, "measured": False}
        top = deciding_cell(cells)
        verdict = top["verdict"] if top else UNRESOLVED
        why = (top or {}).get("why") or ("" if top else f"{NOT_MEASURED} at any scale: "
                                         + "; ".join(c["why"] for c in cells if c.get("why")))
        rows.append({
            "paper": c.paper, "claim_id": c.claim_id, "origin": c.origin,
            "statement": c.statement, "citation": c.citation, "quote": c.quote,
            "paper_number": c.paper_number, "metric": c.metric, "relation": c.relation,
            "our_setting": c.scales[0].setting, "cells": cells,
            "ours_default": cells[0], "ours_largest": largest,
            "verdict": verdict, "decided_by": (top or {}).get("setting"), "why": why,
            "command": c.command, "note": c.note,
            "paper_arch": paper_arch.cell(c, top, root) if c.arch is not None else None,
        })
    return rows


TRUST_KEYS = ("paper_claims_holds", "paper_claims_does_not_hold", "paper_claims_not_resolved",
              "claims_with_interval_verdict", "paper_claims_without_interval")


def headline(rows: list[dict[str, Any]]) -> dict[str, int]:
    """The three verdict counts over the paper claims (they sum to ``paper_claims_checked``);
    ``claims_with_interval_verdict``: paper claims whose verdict is the interval rule's (a
    computed 95 % interval, or "not resolved" with the reason none exists: never a point);
    ``paper_claims_with_interval``: those whose deciding cell has a computed interval; our own
    findings counted apart."""
    paper = [r for r in rows if r["origin"] == PAPER]
    own = [r for r in rows if r["origin"] == OWN]

    def by_rule(r: dict[str, Any]) -> bool:
        top = next((c for c in r["cells"] if c.get("setting") == r["decided_by"]), None)
        has_iv = bool(top and top.get("interval"))
        return r["verdict"] in VERDICTS and (has_iv or (r["verdict"] == UNRESOLVED
                                                        and bool(r["why"])))

    return {
        "paper_claims_checked": len(paper),
        "paper_claims_holds": sum(r["verdict"] == HOLDS for r in paper),
        "paper_claims_does_not_hold": sum(r["verdict"] == FAILS for r in paper),
        "paper_claims_not_resolved": sum(r["verdict"] == UNRESOLVED for r in paper),
        "claims_with_interval_verdict": sum(by_rule(r) for r in paper),
        "paper_claims_with_interval": sum(
            1 for r in paper for c in r["cells"]
            if c.get("setting") == r["decided_by"] and c.get("interval")),
        "paper_claims_without_interval": len(open_claims(paper)["without_interval"]),
        "own_findings": len(own),
        "own_findings_holds": sum(r["verdict"] == HOLDS for r in own),
        "own_findings_does_not_hold": sum(r["verdict"] == FAILS for r in own),
        "own_findings_not_resolved": sum(r["verdict"] == UNRESOLVED for r in own),
    }


def _deciding(row: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in row["cells"] if c.get("setting") == row["decided_by"]), None)


def open_claims(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, str]]]:
    """The paper claims left open, each with its reason: ``without_interval``, those whose
    deciding cell has no computed interval (not measured, or points only: the reason is the
    reading's); ``not_resolved``, every "not resolved" verdict, with either that reason or,
    where an interval exists, that it contains 0 (the data at this scale cannot decide)."""
    paper = [r for r in rows if r["origin"] == PAPER]
    without, unresolved = [], []
    for r in paper:
        iv = (_deciding(r) or {}).get("interval")
        if not iv:
            without.append({"claim_id": r["claim_id"], "reason": r["why"] or "no interval"})
        if r["verdict"] != UNRESOLVED:
            continue
        reason = (r["why"] or "no interval") if not iv else (
            f"the 95 % interval of test − base, {fmt_value(iv['estimate'])} "
            f"[{fmt_value(iv['lo'])}, {fmt_value(iv['hi'])}] ({iv['method']}), contains 0: "
            "the data at this scale cannot decide")
        unresolved.append({"claim_id": r["claim_id"], "reason": reason})
    return {"without_interval": without, "not_resolved": unresolved}


def counts_sentence(head: dict[str, int]) -> str:
    """The three counts in one line (the Home page and ``privlab papers`` print it)."""
    return (f"{head['paper_claims_holds']} hold, {head['paper_claims_does_not_hold']} do not hold, "
            f"{head['paper_claims_not_resolved']} not resolved of "
            f"{head['paper_claims_checked']} paper claims (95 % interval of the compared "
            f"difference at the largest scale measured; {head['paper_claims_with_interval']} "
            f"with a computed interval); our own findings apart: {head['own_findings']}")


def recorded_verdicts(root: Path = ROOT) -> dict[str, str]:
    """claim_id → verdict as recorded in ``papers.json`` ({} when absent)."""
    try:
        data = json.loads((root / PAPERS_JSON).read_text())
    except (OSError, ValueError):
        return {}
    return {r["claim_id"]: r.get("verdict") for r in data.get("rows", [])
            if isinstance(r, dict) and "claim_id" in r}


def unrecorded_changes(rows: list[dict[str, Any]], recorded: dict[str, str]) -> list[str]:
    """Rows whose verdict differs from the recorded one (or that the record lacks)."""
    return [f"{r['claim_id']}: recorded {recorded.get(r['claim_id'])!r}, now {r['verdict']!r}"
            for r in rows if recorded.get(r["claim_id"]) != r["verdict"]]


def recorded_arch_verdicts(root: Path = ROOT) -> dict[str, str | None]:
    """claim_id → the paper-architecture column's verdict as recorded in ``papers.json``."""
    try:
        data = json.loads((root / PAPERS_JSON).read_text())
    except (OSError, ValueError):
        return {}
    return {r["claim_id"]: (r.get("paper_arch") or {}).get("verdict")
            for r in data.get("rows", []) if isinstance(r, dict) and "claim_id" in r}


def unrecorded_arch_changes(rows: list[dict[str, Any]], recorded: dict[str, str | None]
                            ) -> list[str]:
    """Rows whose paper-architecture verdict differs from the recorded one."""
    out = []
    for r in rows:
        now = (r.get("paper_arch") or {}).get("verdict")
        if r["claim_id"] not in recorded or recorded[r["claim_id"]] != now:
            out.append(f"{r['claim_id']} (paper architecture): recorded "
                       f"{recorded.get(r['claim_id'])!r}, now {now!r}")
    return out
