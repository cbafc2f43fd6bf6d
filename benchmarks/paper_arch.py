"""The paper check's paper-architecture column: each claim's two ends measured through the same
runner with ``model`` set to the paper's own architecture family (the per-claim declaration
is :attr:`core.paper_check.claims.Claim.arch`), on the largest image data set here; nothing else
about the claim changes (same knob ends, same seeds, same verdict rule).

Groups (``python -m benchmarks.paper_arch GROUP [GROUP ...]``), cheapest conv net first:

- ``kappa_gl``: the κ paper's LeNet-5 in the gradient-leakage runner on mnist5k (resized to
  32×32 by the architecture), Natural / White / Personalized at κ/d 0.01 and 1, seeds 0-2:
  the κ trend claims, the White / Personalized ordering and Theorem 1 (the κ/d = 1 runs).
- ``kappa_mia``: LeNet-5 in the membership runner (mnist5k, 500 members, offline LiRA with 2
  shadows, as ``benchmarks/equal_privacy.py``), Natural κ 320 and 5, seeds 0-2.
- ``dra_eps`` and ``dra_lambda``: Inf2Guard's 2-conv DRA encoder (``inf2guard_dra``, width
  0.25) in the representation-reconstruction runner on mnist5k: ε 0 / 4 at λ 0.4, and λ 0.1 /
  0.7 at ε 1.25, seeds 0-2.
- ``mia``: Inf2Guard's ResNet-18-based MIA encoder (``inf2guard_mia``, width 0.25, images
  resized to 32×32) in the membership runner on mnist5k: λ 0 / 0.5 / 1, seeds 0-1.
- ``tappfl_fig4``: TAPPFL's CIFAR-10 extractor and privacy network (``tappfl_cifar``, width
  0.25) in the attribute runner on digits (bold): TAPPFL at λ 0.5, then DP-Gaussian,
  DP-Laplace and pruning bisected to its fresh-attacker AUC (Fig. 4's equal-privacy protocol,
  :mod:`benchmarks.paper_arch_tappfl`), seeds 0-2.

Every reduction from the MLP column's protocol is in :data:`REDUCTIONS` and in the output.
Rows are written after every run (``results/paper_arch_raw/<group>.json``; a run cut short
keeps what it measured), each with its wall and process CPU seconds and the load average.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import paper_arch_tappfl as T

OUT = Path(__file__).resolve().parent / "results" / "paper_arch_raw"

#: the κ grid ends of the MLP column's claims, and their seeds
KAPPA_ENDS = (0.01, 1.0)
SEEDS3 = (0, 1, 2)
SEEDS2 = (0, 1)
#: gradient leakage: targets and Inverting Gradients iterations here (the MLP column's 32 and
#: 1000 cost 80 s a run with LeNet-5 on this CPU)
GL_TARGETS = 16
GL_IG_ITERATIONS = 500
#: membership with Inf2Guard's ResNet pieces: shadows and epochs here (the MLP column's 16 and
#: 60 would take hours on 2 shared cores)
MIA_SHADOWS = 2
MIA_EPOCHS = 15
DRA_WIDTH = 0.25
#: representation reconstruction here (the MLP column: 10 epochs on 3,000 rows, a fresh decoder
#: of 60 epochs, 300 inversion iterations; one such run with the conv encoder passed 6 min)
DRA_EPOCHS = 5
DRA_TRAIN = 1500
DRA_FRESH_EPOCHS = 30
DRA_INVERSION = 100
MIA_WIDTH = 0.25

REDUCTIONS = {
    "kappa_gl": f"{GL_TARGETS} targets (MLP column: 32), Inverting Gradients "
                f"{GL_IG_ITERATIONS} iterations (1000), κ/d at the two claimed ends only "
                "(0.01 and 1; the MLP column ran 0.01-1)",
    "kappa_mia": "none (the MLP column's protocol: 500 members, 60 epochs, offline LiRA with 2 "
                 "shadows)",
    "dra_eps": f"width {DRA_WIDTH} (8 channels where the paper has 32); {DRA_EPOCHS} epochs on "
           f"{DRA_TRAIN:,} rows (MLP column: 10 on 3,000), fresh decoder {DRA_FRESH_EPOCHS} "
           f"epochs (60), inversion {DRA_INVERSION} iterations (300); the claims' ε and λ "
           "points only",
    "dra_lambda": "",  # set below: the same protocol as dra_eps
    "mia": f"width {MIA_WIDTH} (ResNet-18 channels 16-128 where the paper has 64-512), "
           f"{MIA_SHADOWS} shadow encoders (MLP column: 16), {MIA_EPOCHS} epochs (60)",
}
REDUCTIONS["dra_lambda"] = REDUCTIONS["dra_eps"]
REDUCTIONS[T.GROUP] = T.REDUCTIONS
ARCH = {T.GROUP: T.ARCH, "kappa_gl": ("lenet5", 1.0), "kappa_mia": ("lenet5", 1.0),
        "dra_eps": ("inf2guard_dra", DRA_WIDTH), "dra_lambda": ("inf2guard_dra", DRA_WIDTH),
        "mia": ("inf2guard_mia", MIA_WIDTH)}
DATA = "mnist5k"
GROUP_DATA = {T.GROUP: f"{T.DATA['name']} ({T.DATA['private_attribute']})"}
D_MNIST = 784


def _run(cfg: dict[str, Any], stages: Any = None) -> tuple[Any, float, float, list[float]]:
    """``cfg`` run once (``stages``: a stage store the group's runs share, e.g. the raw-x
    attackers), with its wall and process CPU seconds and the load average after it."""
    from core.runs.experiments import run

    t0, c0 = time.perf_counter(), time.process_time()
    last = [""]

    def progress(fraction: float, message: str) -> None:
        # stage names with their start time on stderr: where a long run spends its time
        stage = message.split(":")[0]
        if stage != last[0]:
            last[0] = stage
            print(f"  {time.perf_counter() - t0:7.1f} s  {message}", file=sys.stderr, flush=True)

    r = run({**cfg, "device": os.environ.get("PRIVLAB_BENCH_DEVICE", "auto")}, progress,
            stages=stages)
    return (r, round(time.perf_counter() - t0, 1), round(time.process_time() - c0, 1),
            [round(x, 2) for x in os.getloadavg()])


def _model(group: str) -> dict[str, Any]:
    arch, width = ARCH[group]
    return {"arch": arch, "width": width}


def _points(group: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(row labels, config) of every run of ``group``, seed-major so that a cut run keeps
    whole seeds."""
    m = _model(group)
    out = []
    if group == "kappa_gl":
        for seed in SEEDS3:
            for ch in ("natural", "white", "personalized"):
                for k in KAPPA_ENDS:
                    out.append(({"part": "defended", "seed": seed, "defense": ch,
                                 "kappa_per_dim": k},
                                {"kind": "gradient_leakage", "seed": seed, "data": {"name": DATA},
                                 "model": m,
                                 "train": {"epochs": 10, "batch_size": 32, "lr": 0.003,
                                           "optimizer": "adam"},
                                 "attack": {"attackers": ["idlg", "ig"], "targets": GL_TARGETS,
                                            "batch_size": 1, "iterations": GL_IG_ITERATIONS,
                                            "model_state": "fresh", "model_inversion": False},
                                 "defense": {"kind": "channel", "channel": ch,
                                             "kappa": k * D_MNIST}}))
    elif group == "kappa_mia":
        for seed in SEEDS3:
            for kappa in (320.0, 5.0):
                out.append(({"seed": seed, "defense": "natural", "knob": kappa},
                            {"kind": "membership", "seed": seed, "data": {"name": DATA},
                             "model": m, "projection_points": 0,
                             "defense": {"kind": "channel", "channel": "natural",
                                         "kappa": kappa},
                             "attack": {"attackers": ["loss", "lira_offline"], "shadows": 2,
                                        "rmia_references": 1, "targets": 1}}))
    elif group in ("dra_eps", "dra_lambda"):
        ends = ((0.0, 0.4), (4.0, 0.4)) if group == "dra_eps" else ((1.25, 0.1), (1.25, 0.7))
        for seed in SEEDS3:
            for eps, lam in ends:
                out.append(({"seed": seed, "channel": "learned", "epsilon": eps, "lambda": lam},
                            {"kind": "repr_reconstruction", "seed": seed,
                             "data": {"name": DATA}, "model": m,
                             "defense": {"kind": "inf2guard_dra", "channel": "learned",
                                         "epsilon": eps, "tradeoff_lambda": lam},
                             "train": {"epochs": DRA_EPOCHS, "max_train": DRA_TRAIN},
                             "attack": {"fresh_epochs": DRA_FRESH_EPOCHS,
                                        "inversion_iterations": DRA_INVERSION}}))
    elif group == "mia":
        # λ 0 and 0.5 (two claims) for both seeds first, then λ 1 (the utility claim)
        order = [(s, la) for s in SEEDS2 for la in (0.0, 0.5)] + [(s, 1.0) for s in SEEDS2]
        for seed, lam in order:
            out.append(({"seed": seed, "lambda": lam},
                        {"kind": "membership", "seed": seed, "data": {"name": DATA},
                         "model": m, "projection_points": 0,
                         "defense": {"kind": "inf2guard", "tradeoff_lambda": lam},
                         "train": {"epochs": MIA_EPOCHS},
                         "attack": {"attackers": ["loss", "representation_lira"],
                                    "shadows": MIA_SHADOWS, "rmia_references": 1}}))
    else:
        raise ValueError(f"group: got {group!r}; allowed: {', '.join(ARCH)}")
    return out


def _values(group: str, r: Any) -> dict[str, Any]:
    m = r.metrics
    if group == "kappa_gl":
        from core.bounds.expectation import mse_from_psnr

        best = r.info["best_inverter"]
        return {"utility": m["utility_acc"], "mse": m["recon_best_mse"],
                "psnr_median": m["recon_best_psnr_median"], "best_inverter": best,
                "bound_thm1_round": m.get("bound_thm1_round"),
                "per_image_mse": [float(x) for x in mse_from_psnr(r.artifacts[f"recon_{best}_psnr"])]}
    if group == "kappa_mia":
        return {"lira_auc": m["mia_lira_offline_auc"], "utility": m["utility_acc"],
                "loss_auc": m["mia_loss_auc"]}
    if group.startswith("dra"):
        return {"ssim": m["recon_ssim"], "utility": m["utility_acc"],
                "strongest": r.info.get("strongest_attack")}
    return {"representation_lira_auc": m["mia_representation_lira_auc"],
            "representation_lira_tpr_at_1pct_fpr": m["mia_representation_lira_tpr_at_1pct_fpr"],
            "loss_auc": m["mia_loss_auc"], "utility": m["utility_acc"],
            "train_test_gap": m.get("train_test_gap")}


def _thm1(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Theorem 1 at κ/d = 1 per channel, as ``faithfulness_research.kappa_thm1`` stores it
    (the per-image MSE of the strongest inverter per seed against the per-round bound)."""
    from core.bounds.expectation import expected_error_check

    out = {}
    for ch in ("natural", "white", "personalized"):
        rs = [r for r in rows if r["defense"] == ch and r["kappa_per_dim"] == 1.0
              and r.get("bound_thm1_round") is not None]
        if len(rs) < 2:
            continue
        chk = expected_error_check([r["per_image_mse"] for r in rs],
                                   [r["bound_thm1_round"] for r in rs])
        out[ch] = {"seeds": chk.seeds, "points_below": chk.points_below, "points": chk.points,
                   "mean": chk.mean, "interval": list(chk.interval), "bound": chk.bound}
    return out


def _write(path: Path, group: str, rows: list[dict[str, Any]], partial: bool) -> dict[str, Any]:
    from core.foundation import device as D

    arch, width = ARCH[group]
    doc = {"name": f"paper_arch_{group}", "arch": arch, "width": width,
           "data": GROUP_DATA.get(group, DATA),
           "reductions": REDUCTIONS[group], "rows": rows,
           "seconds": round(sum(x.get("seconds", 0.0) for x in rows), 1),
           "cpu_seconds": round(sum(x.get("cpu_seconds", 0.0) for x in rows), 1),
           "device": str(D.get_device(os.environ.get("PRIVLAB_BENCH_DEVICE", "auto"))),
           "cores": os.cpu_count(), "partial": partial}
    if group == "kappa_gl":
        doc["channels"] = _thm1(rows)
    from core.foundation.provenance import stamp

    doc["provenance"] = stamp(f"python -m benchmarks.paper_arch {group}")
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def _kept(path: Path, group: str) -> list[dict[str, Any]]:
    """The rows an earlier invocation wrote under the same protocol (only missing points run
    again; a changed protocol starts afresh)."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    same = old.get("reductions") == REDUCTIONS[group] and (old.get("arch"), old.get("width")) \
        == ARCH[group]
    return list(old.get("rows") or []) if same else []


def run_group(group: str, seeds: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Run ``group``'s missing points, writing the file after every run; with ``seeds`` only
    those seeds' points, into a shard file of their own (:func:`merge` joins the shards), so
    that two processes can share a group."""
    OUT.mkdir(parents=True, exist_ok=True)
    name = group if seeds is None else f"{group}.seeds-{'-'.join(map(str, seeds))}"
    path = OUT / f"{name}.json"
    rows = _kept(path, group)
    if group == T.GROUP:  # adaptive: each bisection's next knob follows its last evaluation
        for seed in seeds or T.SEEDS:
            T.run_seed(seed, rows, _run, lambda: _write(path, group, rows, partial=True))
        return _write(path, group, rows, partial=seeds is not None)

    for labels, cfg in _points(group):
        if seeds is not None and labels["seed"] not in seeds:
            continue
        if any(all(x.get(k) == v for k, v in labels.items()) for x in rows):
            continue  # measured by an earlier invocation with the same protocol
        r, wall, cpu, load = _run(cfg)
        rows.append({**labels, **_values(group, r), "seconds": wall, "cpu_seconds": cpu,
                     "load": load})
        print(group, {k: v for k, v in rows[-1].items() if k != "per_image_mse"}, flush=True)
        _write(path, group, rows, partial=True)
    return _write(path, group, rows, partial=seeds is not None)


def merge(group: str) -> dict[str, Any]:
    """Join the shard files of ``group`` (same protocol) into its file and remove them: a
    point measured in both keeps the main file's row."""
    path = OUT / f"{group}.json"
    rows = _kept(path, group)
    shards = sorted(OUT.glob(f"{group}.seeds-*.json"))
    if group == T.GROUP:  # whole seeds: a shard's seeds the main file does not hold
        have = {r["seed"] for r in rows}
        rows += [r for sh in shards for r in _kept(sh, group) if r["seed"] not in have]
        done = {r["seed"] for r in rows if r.get("part") == "at_level"} >= set(T.SEEDS)
        out = _write(path, group, rows, partial=not done)
        for sh in shards:
            sh.unlink()
        return out
    for sh in shards:
        for r in _kept(sh, group):
            labels = {k: r[k] for k in _points(group)[0][0]}
            if not any(all(x.get(k) == v for k, v in labels.items()) for x in rows):
                rows.append(r)
    done = {tuple(sorted(lab.items())) for lab, _ in _points(group)} <= {
        tuple(sorted((k, r[k]) for k in _points(group)[0][0])) for r in rows}
    out = _write(path, group, rows, partial=not done)
    for sh in shards:
        sh.unlink()
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--merge"]:
        for g in args[1:]:
            merge(g)
    elif "--seeds" in args:
        i = args.index("--seeds")
        for g in args[:i]:
            run_group(g, tuple(int(x) for x in args[i + 1:]))
    else:
        for g in args or list(ARCH):
            run_group(g)
