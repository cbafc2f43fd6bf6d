"""No module outside the parts' own compares a defense, attack or attack config name with a
string (DESIGN: Architecture); the counter is ``benchmarks/registry_bench.py``'s."""

from __future__ import annotations

from pathlib import Path

from benchmarks import registry_bench as R


def test_no_part_name_comparison_outside_the_parts() -> None:
    found = R.defense_name_literals_outside_parts()
    assert found == [], "\n".join(found)


def test_the_counter_finds_a_planted_comparison(tmp_path: Path) -> None:
    page = tmp_path / "dashboard" / "views"
    page.mkdir(parents=True)
    (page / "planted.py").write_text(
        "def f(cfg, x):\n"
        "    if cfg.defense.kind == 'dp_sgd':\n"
        "        return 1\n"
        "    return x in ('rmia', 'other') or x != 'unrelated'\n", encoding="utf-8")
    catalog = tmp_path / "core" / "catalog"
    catalog.mkdir(parents=True)
    (catalog / "own.py").write_text("ok = 'channel' == 'channel'\n", encoding="utf-8")
    found = R.defense_name_literals_outside_parts(tmp_path)
    assert [f.split(": ")[0] for f in found] == ["dashboard/views/planted.py:2",
                                                "dashboard/views/planted.py:4"]


def test_a_generic_word_counts_outside_the_module_implementing_its_attack(
        tmp_path: Path) -> None:
    """``model == "mlp"`` is the fresh attacker's own option only where that attacker is
    implemented; a temporary tree has no implementing module, so it counts there."""
    core = tmp_path / "core" / "attacks"
    core.mkdir(parents=True)
    (core / "x.py").write_text("def f(model):\n    return model == 'mlp'\n", encoding="utf-8")
    assert len(R.defense_name_literals_outside_parts(tmp_path)) == 1
