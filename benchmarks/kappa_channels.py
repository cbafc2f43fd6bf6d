"""The κ channel's defended part of ``benchmarks/gradient_leakage.py`` alone, per seed: what the
paper check's κ-channel claims read (Natural, White and Personalized channels over κ/d,
DP-SGD over target ε, the undefended model; digits, sigmoid MLP; iDLG and Inverting Gradients
on 32 single-image uploads), without the undefended LeNet attack table that makes the full
benchmark an hour of CPU. Same rows, same helpers (``gradient_leakage._defense_rows``).

Beside the seed-mean ratios of ``gradient_leakage``'s headline, the equal-PSNR utility ratio
Natural / DP-SGD per seed (``natural_over_dpsgd_utility_equal_psnr_per_seed``: each seed's two
curves matched at the PSNRs both reach, ``core.runs.compare.utility_at_level``), from which the
paper check reads a Student-t interval over seeds.

Headline: ``white_over_natural_mse_equal_kappa``, ``personalized_over_natural_mse_equal_kappa``,
``natural_over_white_utility_equal_kappa``, ``natural_over_dpsgd_utility_equal_psnr`` (seed
means, as ``gradient_leakage``) and ``natural_over_dpsgd_seeds_matched`` (seeds whose two
curves reach a common PSNR).
"""

from __future__ import annotations

import math
import time
from typing import Any

from benchmarks.gradient_leakage import SEEDS, _defense_rows, _geo_ratio, _utility_at_equal_psnr


def per_seed_equal_psnr(rows: list[dict[str, Any]]) -> list[float | None]:
    """Natural / DP-SGD utility at equal PSNR, one seed's rows at a time (None where that
    seed's curves reach no common PSNR)."""
    out: list[float | None] = []
    for seed in sorted({r["seed"] for r in rows}):
        ratio, _ = _utility_at_equal_psnr([r for r in rows if r["seed"] == seed])
        out.append(ratio if math.isfinite(ratio) else None)
    return out


def main(quick: bool = False) -> dict[str, Any]:
    from core.foundation.stages import MemoryStageStore
    from core.foundation.threads import compute_threads

    t0, c0 = time.perf_counter(), time.process_time()
    rows = _defense_rows(MemoryStageStore(), quick)
    per_seed = per_seed_equal_psnr(rows)
    eq, _ = _utility_at_equal_psnr(rows)
    headline = {
        "white_over_natural_mse_equal_kappa": _geo_ratio(rows, "white", "natural", "mse"),
        "personalized_over_natural_mse_equal_kappa": _geo_ratio(rows, "personalized", "natural",
                                                                "mse"),
        "natural_over_white_utility_equal_kappa": _geo_ratio(rows, "natural", "white", "utility"),
        "natural_over_dpsgd_utility_equal_psnr": eq,
        "natural_over_dpsgd_seeds_matched": sum(v is not None for v in per_seed),
    }
    seeds = SEEDS[:1] if quick else SEEDS
    return {"name": "kappa_channels", "headline": headline, "rows": rows,
            "natural_over_dpsgd_utility_equal_psnr_per_seed": per_seed,
            "notes": (f"gradient_leakage's defended part, seeds {', '.join(map(str, seeds))}; "
                      f"compute threads {compute_threads()}; {time.perf_counter() - t0:.0f} s "
                      f"wall, {time.process_time() - c0:.0f} CPU s. Per-seed equal-PSNR ratios "
                      "(Natural / DP-SGD): "
                      + ", ".join("none" if v is None else f"{v:.3f}" for v in per_seed) + ".")}
