"""The audit's cache key covers what changes training: a correct DP-SGD run and the same config
trained by the self-test's broken DP-SGD (noise removed, the accountant still charging ε = 2) in
one persistent store. The broken run must not be served the correct run's cached result or
audit stage (it is caught: audited ε above the accountant's), and the correct run read back
afterwards must be the correct one.

Headline (merged into ``results/trust.json``): ``audit_cached_broken_run_caught`` (1 when both
hold). The membership config is the one of ``tests/test_audit_runs.py`` (digits, 100 members,
20 epochs, white-box audit with 500 canaries).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

BASE = {"kind": "membership", "data": {"name": "digits"}, "seed": 0, "device": "cpu",
        "train": {"members": 100, "epochs": 20, "lr": 0.1, "optimizer": "sgd"},
        "attack": {"attackers": ["loss"], "shadows": 2, "rmia_references": 1},
        "projection_points": 0,
        "defense": {"kind": "dp_sgd", "epochs": 20, "target_epsilon": 2.0},
        "audit": {"kind": "auto", "canaries": 500, "confidence": 0.95}}


def main(quick: bool = False) -> dict[str, Any]:
    from benchmarks.userfiles_bench import merge_trust
    from cache.store import ResultStore
    from core.attacks.audit import noise_removed
    from core.config.schema import parse_config

    cfg = parse_config(BASE)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="privlab_audit_cache_") as tmp:
        store = ResultStore(Path(tmp) / "store")
        correct = store.get_or_run(cfg)
        with noise_removed():
            broken = store.get_or_run(cfg)
        again = store.get_or_run(cfg)
    m_c, m_b, m_a = correct.metrics, broken.metrics, again.metrics
    caught = (m_b["audit_exceeds_claim"] == 1.0 and m_c["audit_exceeds_claim"] == 0.0
              and m_a["audit_epsilon_lower"] == m_c["audit_epsilon_lower"])
    headline = {"audit_cached_broken_run_caught": int(caught)}
    merge_trust(headline)
    rows = [{"run": name, "epsilon_accountant": m["epsilon_accountant"],
             "audit_epsilon_lower": m["audit_epsilon_lower"],
             "audit_exceeds_claim": m["audit_exceeds_claim"]}
            for name, m in (("correct", m_c), ("broken (noise removed), same store", m_b),
                            ("correct, read back", m_a))]
    return {"name": "audit_cache", "headline": headline, "rows": rows,
            "notes": f"one persistent store, {time.perf_counter() - t0:.1f} s in all",
            "targets": {"audit_cached_broken_run_caught": 1}}
