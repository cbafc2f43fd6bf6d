"""benchmarks/faithfulness.py's assembly: exactly the issue's headline keys, every missing
component null and listed as pending, nothing invented."""

from __future__ import annotations

import json

from benchmarks import faithfulness as F


def test_headline_has_exactly_the_issue_keys_and_missing_parts_are_pending(tmp_path, monkeypatch):
    raw = tmp_path / "faithfulness_raw"
    raw.mkdir()
    (raw / "kappa_thm1.json").write_text(json.dumps(
        {"headline": {"kappa_thm1_seed_means_below_bound": 0}}))
    (raw / "repr_mia_runner.json").write_text(json.dumps({"rows": [
        {"lambda": 0.0, "utility": 0.8, "representation_lira_auc": 0.7},
        {"lambda": 0.0, "utility": 0.9, "representation_lira_auc": 0.8},
        {"lambda": 0.5, "utility": 0.8, "representation_lira_auc": 0.1},
        ]}))
    (tmp_path / "audit.json").write_text(json.dumps({"headline": {"audit_broken_run_caught": 1}}))
    monkeypatch.setattr(F, "RESULTS", tmp_path)
    monkeypatch.setattr(F, "RAW", raw)
    monkeypatch.setattr(F, "REPR_ATTACKERS", ("representation_lira",))
    out = F.assemble()
    head = out["headline"]
    assert tuple(head) == F.HEADLINE_KEYS and len(head) == 15
    assert head["repr_mia_undefended"] == 0.75  # λ = 0 rows only, mean over seeds
    assert head["kappa_thm1_seed_means_below_bound"] == 0
    assert head["audit_broken_run_caught"] == 1
    assert head["paper_claims_checked"] is None and "paper_claims_checked" in out["pending"]
    assert set(out["pending"]) == {k for k, v in head.items() if v is None}
