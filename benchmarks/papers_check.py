"""Paper check (issue #22 item 6): the claims table of :mod:`core.paper_check.papers`, and the CPU cost of
the paper-scale presets.

Rows: one per declared claim (:data:`core.paper_check.papers.CLAIMS`), our numbers read from the stored
benchmark files each claim names. ``preset_costs``: for each CUDA preset
(:data:`core.paper_check.papers.PRESETS`), the paper's model (ResNet-18, LeNet-5, TAPPFL's CIFAR-10
extractor + privacy net, Inf2Guard's DRA encoder + utility net) built here and timed for a few
SGD steps (forward, cross-entropy, backward, update) on a synthetic batch of the paper's shape,
after one warm-up step; seconds per step × the paper's step count = the CPU estimate the table
shows. Nothing is downloaded and no real CIFAR-10 / CelebA image is read: only the time per
step is measured, the rest is arithmetic. Timed with ``THREADS`` torch thread(s) on a shared
machine (its load average is in the file), so the estimates are rough upper-side figures for
a quiet machine with more cores.

``headline``: ``paper_claims_checked`` and the three verdict counts (holds / does not hold /
not resolved, from the 95 % interval of each claim's compared difference at the largest scale
measured, :mod:`core.paper_check.verdicts`), and ``claims_with_interval_verdict``; the counts also go into
``results/trust.json``'s headline. ``verdict_changes``: every verdict change, logged when the
file is rewritten (``tests/test_paper_verdicts.py`` fails when a row's verdict differs from
the recorded one).
``python -m benchmarks papers`` or ``python -m benchmarks.papers_check`` → ``results/papers.json``
(re-times the presets); ``python -m benchmarks.papers_check --verdicts`` rewrites only the rows,
headline and log from the stored results (seconds).
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.paper_check import arch as paper_arch
from core.paper_check.claims import PAPER

THREADS = 1
STEPS = 3
TRUST_JSON = "benchmarks/results/trust.json"
#: papers.json's headline (the counts also go to trust.json's headline)
HEADLINE_KEYS = ("paper_claims_checked", "paper_claims_holds", "paper_claims_does_not_hold",
                 "paper_claims_not_resolved", "claims_with_interval_verdict",
                 "paper_claims_without_interval")


#: what each timed model is, and what of the paper's training it leaves out (so the estimate
#: is a lower bound where a network of the paper's step is not timed)
TIMED = {
    "resnet18": "ResNet-18 with a CIFAR stem, one network (Inf2Guard's encoder, membership and "
                "utility nets are each about this size: the estimate is a lower bound)",
    "lenet5": "LeNet-5, the whole model",
    "tappfl_cifar": "TAPPFL's CIFAR-10 extractor + privacy network (the utility critic not "
                    "timed: a lower bound)",
    "inf2guard_dra": "Inf2Guard's DRA encoder + utility network (decoder and perturbation net "
                     "not timed: a lower bound)",
}


def _conv(cin: int, cout: int, k: int = 3):
    from torch import nn

    return [nn.Conv2d(cin, cout, k, padding=k // 2), nn.BatchNorm2d(cout), nn.ReLU()]


def build_timed_model(name: str, n_classes: int = 10):
    """The paper's architecture for ``name`` (the specs' §5.3 / B7 layer lists)."""
    from torch import nn

    if name == "resnet18":  # CIFAR stem (spec 004 §5.3: conv3-64, BN, ReLU, MaxPool)
        import torchvision

        m = torchvision.models.resnet18(num_classes=n_classes)
        m.conv1 = nn.Conv2d(3, 64, 3, stride=1, padding=1, bias=False)
        return m
    if name == "lenet5":
        from core.models.nn import LeNet5

        return LeNet5((3, 32, 32), n_classes)
    if name == "tappfl_cifar":  # extractor (B7) then the privacy network on its output
        pool = nn.MaxPool2d(2)
        layers = [*_conv(3, 64), *_conv(64, 64), pool, *_conv(64, 128), *_conv(128, 128), pool,
                  *_conv(128, 256), *_conv(256, 256), *_conv(256, 256), nn.MaxPool2d(2),
                  *_conv(256, 512), *_conv(512, 512), *_conv(512, 512), nn.MaxPool2d(2),
                  *_conv(512, 512), *_conv(512, 512), *_conv(512, 512), nn.MaxPool2d(2),
                  nn.Flatten(), nn.Linear(512, 4096), nn.ReLU(), nn.Dropout(),
                  nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(), nn.Linear(4096, 2)]
        return nn.Sequential(*layers)
    if name == "inf2guard_dra":  # 2-conv encoder (no ReLU) then the utility network (§5.3)
        enc = [nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32),
               nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32)]
        util = [nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64),
                nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
                *_conv(128, 128), *_conv(128, 128), *_conv(128, 128), *_conv(128, 64),
                nn.Flatten(), nn.Linear(64 * 32 * 32, 1024), nn.BatchNorm1d(1024), nn.ReLU(),
                nn.Linear(1024, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, n_classes)]
        return nn.Sequential(*enc, *util)
    raise ValueError(f"timed model: got {name!r}")


def our_mlp(widths: tuple[int, int, int], n_classes: int = 10):
    """The preset's own model: our runners' encoder (core.models.nn.Encoder) and a linear task head."""
    from torch import nn

    from core.models.nn import Encoder

    d, hidden, rep = widths
    return nn.Sequential(nn.Flatten(), Encoder(d, hidden=hidden, rep_dim=rep), nn.ReLU(),
                         nn.Linear(rep, n_classes))


def time_steps(name: str | tuple[int, int, int], batch_shape: tuple[int, int, int, int],
               steps: int = STEPS, device: str = "cpu") -> dict[str, Any]:
    """Seconds per SGD step of ``name`` (a paper model, or our MLP's widths) on a synthetic
    batch (one warm-up step first)."""
    import torch

    gen = torch.Generator().manual_seed(0)
    model = (our_mlp(name) if isinstance(name, tuple) else build_timed_model(name)).to(device)
    n_classes = model(torch.zeros(2, *batch_shape[1:], device=device)).shape[-1]
    x = torch.rand(batch_shape, generator=gen).to(device)
    y = torch.randint(0, n_classes, (batch_shape[0],), generator=gen).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    sps = (time.perf_counter() - t0) / steps
    params = sum(p.numel() for p in model.parameters())
    return {"seconds_per_step": sps, "steps_timed": steps, "parameters": params,
            "device": device, "threads": torch.get_num_threads()}


def measure_costs(quick: bool = False) -> dict[str, dict[str, Any]]:
    """Every preset's measured step cost and its extrapolation (seconds)."""
    import torch

    from core.paper_check.papers import PRESETS

    before = torch.get_num_threads()
    out: dict[str, dict[str, Any]] = {}
    cache: dict[tuple, dict[str, Any]] = {}
    try:
        torch.set_num_threads(THREADS)
        for pid, p in PRESETS.items():
            key = (p.timed_model, p.batch_shape)
            if key not in cache:
                cache[key] = time_steps(p.timed_model, p.batch_shape, 1 if quick else STEPS)
            c = dict(cache[key])
            if p.our_widths:  # the preset's own MLP, same batch shape
                own = time_steps(p.our_widths, p.batch_shape, 1 if quick else STEPS)
                c.update(preset_seconds_per_step=own["seconds_per_step"],
                         preset_parameters=own["parameters"],
                         preset_estimate_seconds=own["seconds_per_step"] * p.steps)
            c.update(timed_model=p.timed_model, timed_description=TIMED[p.timed_model],
                     batch_shape=list(p.batch_shape),
                     paper_steps=p.steps, steps_note=p.steps_note,
                     estimate_seconds=c["seconds_per_step"] * p.steps,
                     estimate="extrapolated from timed steps on a synthetic batch")
            out[pid] = c
    finally:
        torch.set_num_threads(before)
    return out


def flat_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The table as stored: one row per claim with its verdict, the cell that decided it, every
    scale's reading (values, interval, sources) and the largest-preset text."""
    out = []
    for r in rows:
        cells = [{k: c.get(k) for k in ("setting", "measured", "value", "interval", "verdict",
                                        "why", "text", "sources")} for c in r["cells"]]
        out.append({"paper": r["paper"], "claim_id": r["claim_id"], "origin": r["origin"],
                    "verdict": r["verdict"], "decided_by": r["decided_by"], "why": r["why"],
                    "statement": r["statement"], "citation": r["citation"], "quote": r["quote"],
                    "paper_number": r["paper_number"], "metric": r["metric"],
                    "relation": r["relation"], "cells": cells,
                    "ours_largest": r["ours_largest"]["text"],
                    "ours_largest_is_estimate": r["ours_largest"].get("estimate", False),
                    "note": r["note"], "paper_arch": _arch_flat(r),
                    "paper_arch_differs": paper_arch.differs(r)})
    return out


ARCH_KEYS = ("family", "arch", "width", "data", "measured", "same_as_first", "verdict",
             "interval", "seeds", "seconds", "cpu_seconds", "why", "text", "reductions",
             "protocol", "sources")


def _arch_flat(row: dict[str, Any]) -> dict[str, Any] | None:
    """The paper-architecture cell as stored (per claim: arch, width, data, verdict, interval,
    seeds, seconds and the rest of :data:`ARCH_KEYS`)."""
    a = row.get("paper_arch")
    return None if a is None else {k: a.get(k) for k in ARCH_KEYS}


def _legacy(row: dict[str, Any]) -> str | None:
    """A row written before verdicts were decided by intervals: its point-estimate direction."""
    d = row.get("direction_holds")
    return None if d is None else ("holds" if d else "does not hold") + " (point estimate)"


def _changes(old: dict[str, Any] | None, rows: list[dict[str, Any]], when: str) -> list[dict]:
    """The file's verdict-change log, extended by every row whose verdict differs from the
    one the previous file recorded (a new row counts as a change from None)."""
    log = list((old or {}).get("verdict_changes") or [])
    before = {r.get("claim_id"): r.get("verdict") or _legacy(r)
              for r in (old or {}).get("rows", []) if isinstance(r, dict)}
    before_arch = {r.get("claim_id"): (r.get("paper_arch") or {}).get("verdict")
                   for r in (old or {}).get("rows", []) if isinstance(r, dict)}
    for r in rows:
        if before.get(r["claim_id"]) != r["verdict"]:
            log.append({"claim_id": r["claim_id"], "from": before.get(r["claim_id"]),
                        "to": r["verdict"], "decided_by": r["decided_by"], "date": when})
        now = (r.get("paper_arch") or {}).get("verdict")
        if before_arch.get(r["claim_id"]) != now:
            log.append({"claim_id": r["claim_id"], "column": "paper architecture",
                        "from": before_arch.get(r["claim_id"]), "to": now,
                        "decided_by": (r.get("paper_arch") or {}).get("arch"), "date": when})
    return log


def _notes(h: dict[str, int], rows: list[dict[str, Any]]) -> str:
    from core.paper_check.papers import HOLDS, UNRESOLVED, counts_sentence

    paper = [r for r in rows if r["origin"] == "paper"]
    fails = [r["claim_id"] for r in paper if r["verdict"] not in (HOLDS, UNRESOLVED)]
    return (counts_sentence(h) + f". Does not hold: {', '.join(fails) or 'none'}. "
            "Verdict rule: the 95 % interval of test − base (Student-t over seeds where the file "
            "holds per-seed values; else each end's stored interval in quadrature; else a stored "
            "interval of the quantity itself) entirely on the claimed side: holds; entirely on the "
            "other side: does not hold; otherwise, or with no interval, not resolved. The largest "
            "scale measured decides. Our numbers are read from the stored benchmark files each "
            "cell names (never typed); the papers' are quoted from shared/papers.")


def record(root: Path | None = None) -> dict[str, Any]:
    """Rewrite ``papers.json``'s rows, headline and verdict log from the stored benchmark files
    without re-timing the presets (their costs are kept), and the paper-claim counts in
    ``trust.json``'s headline."""
    from core.paper_check.papers import PAPERS_JSON, ROOT, build_table, headline, open_claims

    root = root or ROOT
    path = root / PAPERS_JSON
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        old = {}
    rows = build_table(root, costs=old.get("preset_costs") or {}, cuda=False)
    h = headline(rows)
    when = datetime.now(UTC).isoformat(timespec="seconds")
    notes = str(old.get("notes") or "")
    cost_notes = old.get("cost_notes") or (notes[notes.index("CUDA presets"):]
                                           if "CUDA presets" in notes else "")
    ah = paper_arch.headline(rows, PAPER)
    out = {**old, "name": "papers", "headline": {k: h[k] for k in HEADLINE_KEYS},
           "counts": h, "open_claims": open_claims(rows), "paper_arch": {**ah, "notes": _arch_notes(ah, rows)},
           "rows": flat_rows(rows), "verdict_changes": _changes(old, rows, when),
           "cost_notes": cost_notes, "notes": _notes(h, rows) + (" " + cost_notes
                                                                   if cost_notes else "")}
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    write_trust(h, root)
    write_models(ah, root)
    return out


MODELS_JSON = "benchmarks/results/models.json"
#: the two keys of models.json's headline this benchmark owns (other keys are kept)
MODELS_KEYS = ("paper_arch_claims_measured", "paper_arch_verdict_changes")


def write_models(ah: dict[str, Any], root: Path | None = None) -> None:
    """Merge the paper-architecture counts into ``models.json``'s headline, touching only
    :data:`MODELS_KEYS`."""
    from core.paper_check.papers import ROOT

    path = (root or ROOT) / MODELS_JSON
    try:
        text = path.read_text()
        doc = json.loads(text)
    except (OSError, ValueError):
        text, doc = "\n", {"name": "models"}
    doc.setdefault("headline", {}).update({k: ah[k] for k in MODELS_KEYS})
    # the file's own encoding (ASCII escapes or UTF-8, final newline or not), so that only the
    # two keys change in a diff whichever benchmark wrote it last
    out = json.dumps(doc, indent=1, ensure_ascii=text.isascii())
    path.write_text(out + ("\n" if text.endswith("\n") else ""))


def _arch_notes(ah: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The paper-architecture column in words: what the count is out of, what differs."""
    ch = paper_arch.changes_sentence(rows) or ("Where both columns are measured, no verdict differs.")
    return (f"{ah['paper_arch_claims_measured']} of {ah['paper_arch_claims_total']} paper claims "
            f"measured with the paper's architecture family ({ah['paper_arch_newly_run']} from "
            "runs of the paper's conv nets made for this column, python -m benchmarks.paper_arch; "
            "the rest are claims whose first column already trains the paper's model: TAPPFL's "
            "Adult MLP extractor, FIL's linear / logistic regression). " + ch)


def write_trust(h: dict[str, int], root: Path | None = None) -> None:
    """Merge the paper-claim counts into ``trust.json``'s headline (other keys kept)."""
    from core.paper_check.papers import ROOT, TRUST_KEYS

    path = (root or ROOT) / TRUST_JSON
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        doc = {"name": "trust"}
    doc.setdefault("headline", {}).update({k: h[k] for k in TRUST_KEYS})
    doc.setdefault("sources", {}).update({k: "papers.json (core.paper_check.papers.headline)"
                                          for k in TRUST_KEYS})
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    write_provenance_trust(root)


#: trust.json's provenance figures (:func:`core.paper_check.provenance_scan.scan`, the test's own scan)
PROVENANCE_KEYS = ("shown_figures_without_provenance", "stale_figures_unmarked")


def write_provenance_trust(root: Path | None = None) -> dict[str, int]:
    """Merge the provenance scan of every figure the paper check and the cost captions show
    into ``trust.json``'s headline (other keys kept)."""
    from core.paper_check.papers import ROOT
    from core.paper_check.provenance_scan import scan

    root = root or ROOT
    s = scan(root)
    path = root / TRUST_JSON
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        doc = {"name": "trust"}
    doc.setdefault("headline", {}).update({k: s[k] for k in PROVENANCE_KEYS})
    doc.setdefault("sources", {}).update({k: f"core.paper_check.provenance_scan.scan over {s['shown_figures']} "
                                             "figures shown from result files" for k in PROVENANCE_KEYS})
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return s


def main(quick: bool = False) -> dict[str, Any]:
    from core.paper_check.papers import (
        PAPERS_JSON,
        ROOT,
        build_table,
        format_hours,
        headline,
        open_claims,
    )

    t0 = time.perf_counter()
    costs = measure_costs(quick)
    load_after = [round(x, 2) for x in os.getloadavg()]
    rows = build_table(costs=costs, cuda=False)
    h = headline(rows)
    est = "; ".join(f"{pid} ≈ {format_hours(c['estimate_seconds'])} "
                    f"({c['seconds_per_step']:.3g} s/step × {c['paper_steps']:,})"
                    for pid, c in costs.items())
    cost_notes = ("CUDA presets not run here (no CIFAR-10 / CelebA on this machine, nothing "
                  f"downloaded); CPU estimates, {THREADS} torch thread, loaded shared machine "
                  f"(load average after timing {load_after} on {os.cpu_count()} cores; step "
                  f"times scale with it): {est}.")
    try:
        old = json.loads((ROOT / PAPERS_JSON).read_text())
    except (OSError, ValueError):
        old = {}
    ah = paper_arch.headline(rows, PAPER)
    if not quick:
        write_trust(h)
        write_models(ah)
    return {"name": "papers", "headline": {k: h[k] for k in HEADLINE_KEYS}, "counts": h,
            "open_claims": open_claims(rows),
            "paper_arch": {**ah, "notes": _arch_notes(ah, rows)},
            "rows": flat_rows(rows), "preset_costs": costs,
            "verdict_changes": _changes(old, rows, datetime.now(UTC).isoformat(timespec="seconds")),
            "notes": _notes(h, rows) + " " + cost_notes, "cost_notes": cost_notes,
            "quick": quick, "seconds": round(time.perf_counter() - t0, 1)}


if __name__ == "__main__":
    import sys

    if "--verdicts" in sys.argv[1:]:
        res = record()
        print(json.dumps(res["headline"], indent=1))
        for c in res["verdict_changes"][-len(res["rows"]):]:
            print(f"changed: {c['claim_id']} {c['from']} -> {c['to']}")
        sys.exit(0)
    from benchmarks.__main__ import main as harness

    sys.exit(harness(["papers", *sys.argv[1:]]))
