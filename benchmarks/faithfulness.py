"""Issue #22's benchmark: ``benchmarks/results/faithfulness.json`` with a top-level ``headline``.

It measures what runs through the wired runners now and assembles the rest from the component
results other benchmarks leave::

    PYTHONPATH=. python -m benchmarks.faithfulness repr-mia   # membership runner, registered parts
    PYTHONPATH=. python -m benchmarks.faithfulness fil-lira   # FIL runner's FIL-LiRA stage
    PYTHONPATH=. python -m benchmarks.faithfulness assemble   # -> faithfulness.json

- ``repr-mia``: the Membership default (mnist5k, 500 members, 60 epochs, 16 shadows) under
  Inf2Guard at each λ (λ = 0: undefended encoder) and seed, attacked by the registered parts
  (``representation_head``, ``representation_lira``, the paper's ``representation`` MLP, the
  in-training adversary, loss and LiRA on the model); ->
  ``faithfulness_raw/repr_mia_runner.json``.
- ``fil-lira``: the FIL runner's default (digits 0/1, PCA 20, logistic) with its FIL-LiRA stage
  at each seed; -> ``faithfulness_raw/fil_lira_runner.json``.
- ``assemble``: the headline from ``faithfulness_raw/*.json`` (the research measurements of
  :mod:`benchmarks.faithfulness_research` and the two above; the two runner figures are read
  only from the runners' files, :data:`FIGURE_SOURCES`), ``audit.json`` and
  ``equal_privacy.json`` (the audit / equal-privacy benchmark) and ``papers.json`` (the paper
  check); a component not yet written gives ``null`` and its key in ``pending``.

Every subcommand takes ``--quick`` (tiny settings: checks the plumbing in seconds).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
RAW = RESULTS / "faithfulness_raw"

HEADLINE_KEYS = (
    "repr_mia_undefended", "repr_ssim_undefended", "dpsgd_utility_ratio_eps_le_8",
    "inf2guard_utility_at_equal_lira_auc", "dpsgd_utility_at_equal_lira_auc",
    "learned_minus_best_fixed_ssim_at_matched_utility", "audit_eps_max_over_accountant_eps",
    "audit_broken_run_caught", "audit_correct_runs_flagged", "audited_defenses",
    "thm3_points_below_estimated_bound", "kappa_thm1_seed_means_below_bound", "fil_lira_spearman",
    "paper_claims_checked", "paper_claims_holds")

#: the file each figure is read from; the paper check (core.paper_check.claims) reads the same
#: figures from the same files, so faithfulness.json and papers.json never publish two
#: values for one figure (a missing file gives null, never another file's number)
FIGURE_SOURCES = {"repr_mia_undefended": "faithfulness_raw/repr_mia_runner.json",
                  "fil_lira_spearman": "faithfulness_raw/fil_lira_runner.json"}


def _mean_interval(values: list[float], confidence: float = 0.95) -> dict[str, Any]:
    """Mean over seeds with a Student-t interval (None with one seed)."""
    from scipy import stats

    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], np.float64)
    if v.size == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    if v.size == 1:
        return {"mean": float(v[0]), "lo": None, "hi": None, "n": 1, "values": [float(v[0])]}
    half = stats.t.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return {"mean": float(v.mean()), "lo": float(v.mean() - half), "hi": float(v.mean() + half),
            "n": int(v.size), "values": [float(x) for x in v]}


# =============================================================================================
# measured through the runners

REPR_ATTACKERS = ("loss", "lira_online", "representation", "in_training", "representation_head",
                  "representation_lira")


def repr_mia(*, seeds: tuple[int, ...], lambdas: tuple[float, ...], quick: bool,
             out: Path | None = None) -> dict[str, Any]:
    """The membership runner on the Membership default under Inf2Guard(λ), scored by the
    registered parts (the shadow encoders come from the runner's shadow_representations stage).
    λ-major (the undefended point first); with ``out`` the rows so far are written after each
    run (a long run on a loaded CPU keeps what it measured)."""
    from core.runs.experiments import run

    rows: list[dict[str, Any]] = []
    for lam in lambdas:
        for seed in seeds:
            cfg: dict[str, Any] = {"kind": "membership", "seed": seed, "projection_points": 0,
                                   "defense": {"kind": "inf2guard", "tradeoff_lambda": lam},
                                   "attack": {"attackers": list(REPR_ATTACKERS)}}
            if quick:
                cfg.update(data={"name": "digits"},
                           train={"members": 60, "epochs": 6, "batch_size": 32})
                cfg["attack"].update(shadows=4, rmia_references=1)
            t0 = time.perf_counter()
            r = run(cfg)
            m = r.metrics
            row = {"seed": seed, "lambda": lam, "seconds": round(time.perf_counter() - t0, 1),
                   "utility": m["utility_acc"], "train_test_gap": m["train_test_gap"],
                   "stages": r.info["stages"]}
            for a in REPR_ATTACKERS:
                row[f"{a}_auc"] = m[f"mia_{a}_auc"]
                row[f"{a}_auc_interval"] = list(r.interval(f"mia_{a}_auc"))
                row[f"{a}_tpr_at_1pct_fpr"] = m[f"mia_{a}_tpr_at_1pct_fpr"]
            rows.append(row)
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()
                   if "interval" not in k and k != "stages"}, flush=True)
            if out is not None:
                out.write_text(json.dumps({"name": "repr_mia_runner", "partial": True,
                                           "quick": quick, "rows": rows}, indent=1) + "\n")
    lambdas = tuple(lam for lam in lambdas if any(r["lambda"] == lam for r in rows))
    summary = {f"{lam:g}": {"utility": _mean_interval([r["utility"] for r in rows
                                                        if r["lambda"] == lam]),
                            **{f"{a}_auc": _mean_interval([r[f"{a}_auc"] for r in rows
                                                           if r["lambda"] == lam])
                               for a in REPR_ATTACKERS}} for lam in lambdas}
    und = summary[f"{lambdas[0]:g}"]
    return {"name": "repr_mia_runner", "quick": quick, "seeds": list(seeds),
            "lambdas": list(lambdas), "rows": rows, "summary": summary,
            "headline": {"repr_mia_undefended": und["representation_lira_auc"]["mean"]},
            "notes": ("core.runs.membership with defense inf2guard (λ = lambdas[0] is the "
                      "undefended encoder) at MembershipConfig's defaults (mnist5k, 500 members, "
                      "60 epochs, 16 shadows); the registered parts mia_representation_head and "
                      "mia_representation_lira; AUC per seed with a stratified bootstrap "
                      "interval, over seeds a Student-t interval of the mean.")}


def fil_lira(*, seeds: tuple[int, ...], quick: bool, shadows: int | None = None,
             draws: int | None = None) -> dict[str, Any]:
    """The FIL runner's default with its FIL-LiRA stage, per seed (``shadows`` / ``draws``:
    the lira block's, else its defaults: 16 shadows, 20 draws)."""
    from core.runs.experiments import run

    rows = []
    keys = ("fil_lira_auc", "fil_lira_spearman", "fil_lira_spearman_lo", "fil_lira_spearman_hi",
            "fil_lira_top_tpr_plain", "fil_lira_top_tpr_irfil", "fil_lira_top_score_plain",
            "fil_lira_top_score_irfil", "fil_lira_top_overlap_eta")
    for seed in seeds:
        cfg: dict[str, Any] = {"kind": "fisher_information", "seed": seed,
                               "lira": {"enabled": True}}
        if quick:
            cfg["lira"].update(shadows=4)
        if shadows is not None:
            cfg["lira"]["shadows"] = shadows
        if draws is not None:
            cfg["lira"]["draws"] = draws
        t0 = time.perf_counter()
        r = run(cfg)
        row = {"seed": seed, "seconds": round(time.perf_counter() - t0, 1),
               **{k: r.metrics.get(k) for k in keys}, "sentence": r.info.get("fil_lira_sentence")}
        rows.append(row)
        print(row, flush=True)
    return {"name": "fil_lira_runner", "quick": quick, "seeds": list(seeds), "rows": rows,
            "shadows": shadows or 16, "draws": draws or 20,
            "summary": {k: _mean_interval([r[k] for r in rows]) for k in keys},
            "headline": {"fil_lira_spearman": _mean_interval(
                [r["fil_lira_spearman"] for r in rows])["mean"]}}


# =============================================================================================
# assembled


def _load(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _pick(doc: dict[str, Any] | None, key: str) -> Any:
    """``doc["headline"][key]`` (or ``doc[key]``), None when absent."""
    if doc is None:
        return None
    head = doc.get("headline") if isinstance(doc.get("headline"), dict) else {}
    return head.get(key, doc.get(key))


def assemble() -> dict[str, Any]:
    """The headline from every component result on disk (see the module docstring)."""
    raw = {p.stem: _load(p) for p in sorted(RAW.glob("*.json"))}
    audit, equal = _load(RESULTS / "audit.json"), _load(RESULTS / "equal_privacy.json")
    papers = _load(RESULTS / "papers.json")
    head: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def put(key: str, value: Any, source: str) -> None:
        head[key] = value
        sources[key] = source

    # measured through the wired runners (the files the paper check reads too)
    rm = raw.get("repr_mia_runner") if not (raw.get("repr_mia_runner") or {}).get("quick") else None
    und_rows = [r["representation_lira_auc"] for r in (rm or {}).get("rows", [])
                if r["lambda"] == 0.0]
    put("repr_mia_undefended", float(np.mean(und_rows)) if und_rows else None,
        f"{FIGURE_SOURCES['repr_mia_undefended']} (membership runner, registered part "
        f"mia_representation_lira, Inf2Guard λ = 0, mean over {len(und_rows)} seed(s))")
    ssim = raw.get("repr_ssim_mnist5k")
    put("repr_ssim_undefended", _pick(ssim, "repr_ssim_undefended"),
        "faithfulness_raw/repr_ssim_mnist5k.json")
    put("learned_minus_best_fixed_ssim_at_matched_utility",
        _pick(ssim, "learned_minus_best_fixed_ssim_at_matched_utility"),
        "faithfulness_raw/repr_ssim_mnist5k.json")
    put("thm3_points_below_estimated_bound", _pick(ssim, "thm3_points_below_estimated_bound"),
        "faithfulness_raw/repr_ssim_mnist5k.json")
    put("kappa_thm1_seed_means_below_bound",
        _pick(raw.get("kappa_thm1"), "kappa_thm1_seed_means_below_bound"),
        "faithfulness_raw/kappa_thm1.json")
    fl = raw.get("fil_lira_runner") if not (raw.get("fil_lira_runner") or {}).get("quick") else None
    put("fil_lira_spearman", _pick(fl, "fil_lira_spearman"),
        f"{FIGURE_SOURCES['fil_lira_spearman']} (FIL runner's FIL-LiRA stage, mean over seeds; "
        "the paper check reads it with its t-interval and decides at the larger Adult view)")
    for key in ("inf2guard_utility_at_equal_lira_auc", "dpsgd_utility_at_equal_lira_auc"):
        put(key, _pick(equal, key), "equal_privacy.json")
    # the best ratio above majority on the grid's ε ≤ 8 points: the ratio grows with ε, so it
    # is the ε = 8 point that equal_privacy.json measures
    ratio = _pick(equal, "dpsgd_utility_ratio_eps_le_8")
    put("dpsgd_utility_ratio_eps_le_8",
        ratio if ratio is not None else _pick(equal, "dpsgd_utility_ratio_eps_8"),
        "equal_privacy.json (DP-SGD at ε = 8, above majority)")
    for key in ("audit_eps_max_over_accountant_eps", "audit_broken_run_caught",
                "audit_correct_runs_flagged", "audited_defenses"):
        put(key, _pick(audit, key) if _pick(audit, key) is not None else _pick(equal, key),
            "audit.json")
    for key in ("paper_claims_checked", "paper_claims_holds"):
        put(key, _pick(papers, key), "papers.json (verdicts decided by intervals)")
    headline = {k: head.get(k) for k in HEADLINE_KEYS}
    details: dict[str, Any] = {}
    if rm is not None:
        by_lam: dict[str, dict[str, Any]] = {}
        for lam in sorted({r["lambda"] for r in rm.get("rows", [])}):
            pts = [r for r in rm["rows"] if r["lambda"] == lam]
            by_lam[f"{lam:g}"] = {"utility": _mean_interval([r["utility"] for r in pts]),
                                  **{f"{a}_auc": _mean_interval([r[f"{a}_auc"] for r in pts])
                                     for a in REPR_ATTACKERS}}
        details["repr_mia_by_lambda"] = by_lam
    big = raw.get("fil_lira_runner_k64")
    if big is not None:
        details["fil_lira_k64"] = {"shadows": big.get("shadows"), "draws": big.get("draws"),
                                   "summary": big.get("summary"),
                                   "sentences": [r.get("sentence") for r in big.get("rows", [])]}
    if fl is not None:
        details["fil_lira"] = fl.get("summary")
        details["fil_lira_sentences"] = [r.get("sentence") for r in fl.get("rows", [])]
    pending = [k for k in HEADLINE_KEYS if headline[k] is None]
    return {"name": "faithfulness", "headline": headline, "pending": pending,
            "sources": sources, "details": details,
            "components": {"raw": sorted(raw), "audit.json": audit is not None,
                           "equal_privacy.json": equal is not None,
                           "papers.json": papers is not None},
            "targets": {"repr_mia_undefended": ">= 0.60", "repr_ssim_undefended": ">= 0.6",
                        "dpsgd_utility_ratio_eps_le_8": ">= 0.90",
                        "audit_eps_max_over_accountant_eps": "<= 1",
                        "audit_broken_run_caught": "1", "audit_correct_runs_flagged": "0",
                        "thm3_points_below_estimated_bound": "0",
                        "kappa_thm1_seed_means_below_bound": "0"}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("repr-mia", "fil-lira", "assemble"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--lambdas", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shadows", type=int, default=None, help="fil-lira: shadow GLMs")
    ap.add_argument("--draws", type=int, default=None, help="fil-lira: release draws")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    if a.what == "repr-mia":
        out = a.out or RAW / "repr_mia_runner.json"
        res = repr_mia(seeds=tuple(a.seeds), lambdas=tuple(a.lambdas), quick=a.quick, out=out)
    elif a.what == "fil-lira":
        res = fil_lira(seeds=tuple(a.seeds), quick=a.quick, shadows=a.shadows, draws=a.draws)
        out = a.out or RAW / "fil_lira_runner.json"
    else:
        res = assemble()
        out = a.out or RESULTS / "faithfulness.json"
    res["seconds"] = round(time.perf_counter() - t0, 1)
    res["command"] = "python -m benchmarks.faithfulness " + " ".join(sys.argv[1:] if argv is None
                                                                      else argv)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=float) + "\n")
    print(json.dumps(res.get("headline"), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
