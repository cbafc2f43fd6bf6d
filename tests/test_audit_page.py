"""The Membership page's claimed-vs-audited ε section (dashboard/components/audit_plot.py):
the figure from stored audited runs over DP-SGD's grid and its ε = ∞ point, and the figure's
parts (diagonal, largest provable ε, Bonferroni stated) from plain points."""

from __future__ import annotations

import math

from dashboard.components.audit_plot import (
    AuditPoint,
    audit_caption,
    audit_configs,
    audit_figure,
    audit_points,
)
from tests.test_pages import has_chart, open_page, store  # noqa: F401  (fixture)


def test_audit_configs_cover_the_grid_and_the_infinite_point():
    cfgs = audit_configs({"kind": "membership", "data": {"name": "digits"}}, 100)
    assert list(cfgs) == [1.0, 2.0, 4.0, 8.0, math.inf]
    assert cfgs[math.inf]["defense"] == {"kind": "dp_sgd", "noise_multiplier": 0.0,
                                         "target_epsilon": None}
    assert all(c["audit"]["tests"] == 5 and c["audit"]["canaries"] == 100 for c in cfgs.values())
    from core.config.schema import parse_config

    assert all(parse_config(c).audit.enabled for c in cfgs.values())


def test_audit_figure_draws_the_diagonal_the_provable_line_and_infinity():
    pts = [AuditPoint(1.0, 0.99, 0.0, 3.9, 50, 100, 0.99, False),
           AuditPoint(8.0, 7.9, 2.0, 3.9, 400, 500, 0.99, False),
           AuditPoint(math.inf, math.inf, 3.8, 3.9, 100, 100, 0.99, False)]
    fig = audit_figure(pts, confidence=0.95, tests=5, canaries=1000)
    names = [t.name for t in fig.data]
    assert any("audited = claimed" in n for n in names)
    assert any("largest provable with 1000 canaries (3.90)" in n for n in names)
    assert "0.99 each" in fig.layout.title.text and "over 5 run(s)" in fig.layout.title.text
    assert fig.layout.xaxis.ticktext[-1].startswith("∞")
    cap = audit_caption(pts, confidence=0.95, tests=5)
    assert "No claim is exceeded" in cap and "ε = ∞): audited ≥ 3.80" in cap
    broken = [AuditPoint(2.0, 1.99, 3.5, 3.9, 98, 100, 0.99, True)]
    assert "1 claim(s) exceeded" in audit_caption(broken, confidence=0.95, tests=1)


def test_membership_page_plots_the_audited_grid_from_the_store(store):  # noqa: F811
    page = {"kind": "membership", "seed": 0, "device": "auto", "data": {"name": "digits"},
            "defense": {"kind": "none"},
            "attack": {"attackers": ["loss"], "shadows": 2, "rmia_references": 1, "targets": 1},
            "train": {"members": 60, "epochs": 5}}
    cfgs = audit_configs(page, 100)
    got = {t: store.get_or_run(c) for t, c in cfgs.items()}
    pts = audit_points(got)
    assert len(pts) == 5 and math.isinf(pts[-1].claimed)
    assert all(p.audited <= p.claimed for p in pts)
    at = open_page("views/membership.py")
    at.selectbox(key="mi_dataset").set_value("digits").run()
    at.multiselect(key="mi_attackers").set_value(["loss"]).run()
    for key, v in (("mi_members", 60), ("mi_epochs", 5), ("mi_shadows", 2), ("mi_refs", 1),
                   ("mi_targets", 1)):
        at.text_input(key=f"{key}__text").set_value(str(v)).run()
    at.button(key="mi_run").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.select_slider(key="mi_audit_canaries").set_value(100).run()
    assert has_chart(at, "mi_audit_fig")
    assert at.button(key="mi_audit").disabled  # nothing missing
    assert any("5 audited run(s)" in c.value for c in at.caption)


def test_compare_page_offers_the_audit_preset_with_the_infinite_point(store):  # noqa: F811
    from tests.test_compare_page import open_page as open_compare

    # opened on the audit preset (the teaching preset would start running by itself)
    at = open_compare("views/compare.py", cmp_preset="claimed vs audited ε: membership on digits")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="cmp_privacy").value == "audit_epsilon_lower"
    assert at.checkbox(key="cmp_dpsgd_inf").value is True
    assert at.text_input(key="cmp_grid_dp_sgd").value == "1, 2, 4, 8"
