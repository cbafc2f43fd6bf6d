"""The privacy report (core.report): the release recommendation computed both ways from the
stored numbers (the TPR-at-1 %-FPR rule and SACRO-ML's beside it), a family without TPR at
1 % FPR, a tiny comparison (one verdict per point, the best point meeting the rule), every
printed number equal to the store's, no request leaving the page, and the PDF."""

from __future__ import annotations

import math
import os

import pytest
from scipy.stats import beta, norm

from benchmarks.report_bench import (
    SPAN,
    TINY,
    mismatched,
    tiny_comparison,
    urls_outside_plotlyjs,
)
from cache.store import ResultStore
from core.report import build_report, recommend
from core.report.render import esc as esc_text
from core.report.rules import fmt, plain

ATTRIBUTE = {"kind": "attribute_privacy",
             "data": {"name": "synthetic", "n_samples": 600, "dependence": 0.6},
             "fl": {"num_devices": 3, "fraction_fit": 1.0, "rounds": 2, "batch_size": 32},
             "pretrain_epochs": 1, "projection_points": 0, "attack": {"mlp_epochs": 10}}

# as the browser test: skipped only when asked (PRIVLAB_SKIP_BROWSER=1); a missing chromium
# fails (`make test` installs it), so CI never passes without printing a PDF
needs_chromium = pytest.mark.skipif(os.environ.get("PRIVLAB_SKIP_BROWSER") == "1",
                                    reason="PRIVLAB_SKIP_BROWSER=1")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return ResultStore(tmp_path_factory.mktemp("report") / "cache")


@pytest.fixture(scope="module")
def run(store):
    return store.get_or_run(TINY)


@pytest.fixture(scope="module")
def comparison(store):
    from core.runs.compare import run_comparison

    spec = tiny_comparison()
    run_comparison(spec, store)
    return spec


def _bound(result, attack: str) -> float:
    """The exact upper 95 % bound on TPR at 1 % FPR, recomputed from the stored numbers."""
    tpr = result.metrics[f"mia_{attack}_tpr_at_1pct_fpr"]
    n = int(result.info["scored"][attack][0])
    k = round(tpr * n)
    return 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))


def test_membership_recommendation_both_ways_from_the_stored_numbers(run, store):
    attacks = run.config["attack"]["attackers"]
    worst = max(_bound(run, a) for a in attacks)
    below, above = worst * 0.9, min(worst * 1.1, 0.99)
    strict = recommend(run.key, store=store, level=below)
    lenient = recommend(run.key, store=store, level=above)
    assert strict.release is False and strict.sentence.startswith("Do not release")
    assert lenient.release is True and lenient.sentence.startswith("Release")
    assert math.isclose(strict.points[0].value.value, worst, rel_tol=1e-12)
    assert fmt(worst) in strict.sentence and fmt(below) in strict.sentence
    # SACRO-ML beside it: p from the null variance at AUC 0.5, mean AUC of the significant
    p = {}
    for a in attacks:
        n1, n2 = run.info["scored"][a]
        sd = math.sqrt((0.25 + (n1 + n2 - 2) / 12) / (n1 * n2))
        p[a] = norm.sf((run.metrics[f"mia_{a}_auc"] - 0.5) / sd)
    sig = [run.metrics[f"mia_{a}_auc"] for a in attacks if p[a] < 0.05]
    v = strict.points[0]
    assert {c.key: c.p for c in v.checks} == pytest.approx(p)
    # SACRO-ML's score: weight 2 for more than 10 % significant, 4 for their mean AUC > 0.65
    score = 2 * (len(sig) / len(attacks) > 0.1) + 4 * bool(sig and sum(sig) / len(sig) > 0.65)
    assert v.sacro_score == min(score, 5) and v.sacro is (score == 0)
    assert v.sacro_word == f"score {v.sacro_score} of 5 toward rejection"
    # the same rule on the Result a page holds, without the store
    assert recommend(run, store=None, level=below).sentence == strict.sentence


def test_a_strong_attack_is_not_released_by_either_rule(run, store):
    """A planted leak (the stored numbers of an attack made strong): both rules refuse."""
    import copy

    leaky = copy.deepcopy(run)
    leaky.metrics["mia_loss_tpr_at_1pct_fpr"] = 0.5
    leaky.metrics["mia_loss_auc"] = 0.9
    rec = recommend(leaky, store=None, level=0.05)
    assert rec.release is False and rec.points[0].sacro is False
    assert rec.points[0].sacro_score >= 4  # the mean-AUC criterion supports rejection
    assert "loss threshold" in rec.sentence


def test_sacro_ml_scores_both_criteria_on_its_0_to_5_scale():
    """SACRO-ML's two criteria on planted checks: significant share > 10 % (weight 2) and the
    significant AUCs' mean > 0.65 (weight 4), summed and capped at 5; neither is a refusal."""
    from core.report.rules import AttackCheck, Verdict, _sacro

    def score(aucs_p: list[tuple[float, float]]) -> Verdict:
        v = Verdict(key="k" * 12, label="x", kind="membership", rule="tpr", release=None,
                    reason=[], level=0.05)
        v.checks = [AttackCheck(who=f"a{i}", key=f"a{i}", title=f"a{i}", prefix="k", auc=a, p=p)
                    for i, (a, p) in enumerate(aucs_p)]
        _sacro(v)
        return v

    assert score([(0.9, 0.001)]).sacro_score == 5  # 2 + 4, capped at 5
    assert score([(0.6, 0.01)]).sacro_score == 2  # significant, mean at most 0.65
    # 1 of 11 significant (under 10 %), its AUC above 0.65: only the mean criterion's 4
    v = score([(0.7, 0.001)] + [(0.5, 0.5)] * 10)
    assert v.sacro_score == 4 and v.sacro is False and "supports release" in plain(v.sacro_reason)
    assert score([(0.5, 0.5)] * 3).sacro_score == 0
    assert score([(0.5, 0.5)] * 3).sacro is True


def test_the_report_states_how_the_two_rules_differ(run, store):
    from core.report.rules import RULES_DIFFER_TEXT

    rep = build_report(run.key, store=store)
    assert "a 0–5 score, not a refusal" in rep.html
    assert esc_text(RULES_DIFFER_TEXT) in rep.html and "weight 2" in rep.html


def test_level_outside_the_unit_interval_is_one_line(run, store):
    for bad in (0.0, 1.0, -0.1, float("nan"), "x"):
        with pytest.raises(ValueError, match=r"^level: got .*; allowed: \(0, 1\)"):
            build_report(run.key, store=store, level=bad)
    with pytest.raises(ValueError, match="no stored run"):
        build_report("ffffffffffff", store=store)


def test_every_printed_number_equals_the_stores(run, store):
    rep = build_report(run.key, store=store, level=0.05)
    assert mismatched(rep, store, 0.05) == []
    names = set(rep.numbers)
    for a in run.config["attack"]["attackers"]:  # every attack with its interval
        assert {f"{run.key[:12]}/mia_{a}_auc", f"{run.key[:12]}/mia_{a}_auc/lo",
                f"{run.key[:12]}/mia_{a}_auc/hi", f"{run.key[:12]}/mia_{a}_tpr_at_1pct_fpr",
                f"{run.key[:12]}/derived/tpr_hi/{a}"} <= names
    # the checker catches a number printed differently from the store
    name, text = SPAN.findall(rep.html)[1]
    planted = rep.html.replace(f'data-n="{name}">{text}<', f'data-n="{name}">9.99<', 1)
    assert len(mismatched(type(rep)(planted, rep.recommendation, rep.numbers, rep.title),
                          store, 0.05)) == 1


def test_threat_cards_caveats_and_sections_are_in_the_report(run, store):
    import plotly.graph_objects as go

    from core.foundation.parts import attack_by_config_name

    section = {"title": "Per-record exposure", "sentences": ["Five records carry the risk."],
               "rows": [{"record": "#3", "score": 0.75}], "figure": go.Figure(go.Bar(y=[1]))}
    rep = build_report(run.key, store=store, sections=[section], exposure=False)
    auto = build_report(run.key, store=store)  # the run's per-record exposure by default
    assert "Most exposed records" in auto.html and "Most exposed records" not in rep.html
    for a in run.config["attack"]["attackers"]:
        threat = attack_by_config_name("membership", a).threat
        assert threat.knows.replace("'", "&#x27;") in rep.html
    assert "few non-members" in rep.html  # the 0.1 % FPR caveat of the caveats registry
    assert "Per-record exposure" in rep.html and "Five records carry the risk." in rep.html
    assert rep.numbers["section/0/0/score"] == 0.75
    # two figures (the ROC and the section's), plotly.js embedded once (its banner), and no
    # URL written anywhere but inside plotly.js's own code
    assert rep.html.count('class="plotly-graph-div"') == 2
    assert rep.html.count("* plotly.js v") == 1
    assert urls_outside_plotlyjs(rep.html) == []
    assert urls_outside_plotlyjs(rep.html.replace("</body>", "https://cdn.example/x</body>")) \
        == ["https://cdn.example/x"]


def test_a_family_without_tpr_at_1pct_fpr_states_the_rule_it_uses(store):
    r = store.get_or_run(ATTRIBUTE)
    rep = build_report(r.key, store=store)
    rec = rep.recommendation
    assert rec.rule == "auc" and "does not apply" in rec.rule_text
    assert not any("tpr_at_1pct_fpr" in n for n in rep.numbers)  # never a made-up TPR
    best = max((c for c in rec.points[0].checks if c.auc_lo is not None),
               key=lambda c: c.auc_lo)
    assert rec.release is (not best.auc_lo > 0.5)
    assert rec.points[0].sacro is None and mismatched(rep, store, 0.05) == []


def _reader_text(html: str) -> str:
    """What a reader of the report sees, without its configuration appendix (which keeps the
    names a user types), styles and scripts."""
    import re
    from html import unescape

    body = re.sub(r"<(pre|script|style)\b.*?</\1>", " ", html, flags=re.DOTALL)
    return unescape(re.sub(r"<[^>]+>", " ", body))


def test_the_report_reads_for_its_family_and_names_its_parts_by_title(run, store):
    """An attribute report: the rule's real reason (its TPR at 1 % FPR is stored), no
    membership wording; both reports name the architecture, say the level is the default
    (and set by the user otherwise), and show titles, never registered names."""
    from dashboard.browser_check import raw_identifiers_text, undrawable

    attr = store.get_or_run(ATTRIBUTE)
    assert "tpr_at_1pct_fpr" in attr.metrics  # the run stores one: the text may not deny it
    text = " ".join(_reader_text(build_report(attr.key, store=store).html).split())
    assert "report no TPR" not in text and "guess a private attribute" in text
    assert "few non-members" not in text and "members scored" not in text  # membership's
    assert "architecture MLP (64 sigmoid units)" in text
    assert "(level 0.05 , the default)" in text
    mia = " ".join(_reader_text(build_report(run.key, store=store).html).split())
    assert "architecture MLP (64 sigmoid units)" in mia
    assert "set by the user" in _reader_text(build_report(run.key, store=store, level=0.1).html)
    for t in (text, mia):
        assert raw_identifiers_text(t) == [] and undrawable(t) == []
    # the check sees a registered name in a note as the report printed it before
    assert raw_identifiers_text(mia + " runner's note: rmia: TPR at 0.1 % FPR") == ["rmia"]


def test_registered_names_a_reader_would_see_as_identifiers_are_titled():
    from core.foundation.part_names import identifiers, titled

    names = identifiers()
    assert {"rmia", "logreg", "lira_offline", "tappfl", "dp_sgd"} <= set(names)
    assert not {"loss", "prior", "entropy", "channel", "none"} & set(names)  # words in titles
    assert titled("rmia: TPR; lira_offline; loss", "membership") == \
        "RMIA (offline): TPR; LiRA (offline); loss"


def test_a_comparison_has_one_verdict_per_point_and_names_the_best(comparison, store):
    from core.runs.compare import read_comparison

    cmp = read_comparison(comparison, store)
    n_points = sum(len(c.knob) * len(c.seeds) for c in cmp.curves)
    rep = build_report(comparison, store=store, level=0.5)
    rec = rep.recommendation
    assert len(rec.points) == n_points == 3
    # the release reads the advisor's points: each curve's knob value with its seed-mean
    # utility (the comparison's utility_mean), never one seed's run
    if rec.release:
        labels = {(c.name + (f" · {c.symbol} = {fmt(float(k))}" if c.knob_field and c.symbol
                             else "")): float(c.utility_mean[i])
                  for c in cmp.curves for i, k in enumerate(c.knob)}
        named = next(lab for lab in labels if rec.sentence.startswith(f"Release {lab}:"))
        assert f"seed mean {fmt(labels[named])}" in rec.sentence and "· seed" not in \
            rec.sentence
    if all(v.release for v in rec.points):  # every point meets: the most useful seed mean
        utility = {(c.name, i): float(c.utility_mean[i]) for c in cmp.curves
                   for i in range(len(c.knob))}
        assert rec.point == max(utility, key=utility.get)
    strict = recommend(comparison, store=store, level=0.001)
    assert strict.release is False and strict.best is None
    assert strict.sentence.startswith("Do not release any of the 3 points")
    assert mismatched(rep, store, 0.5) == []


def test_the_release_rule_beside_the_advisor_names_the_same_point_or_says_its_rule(
        comparison, store):
    """The advisor and the release rule read the same seed-mean points: where both accept
    every point they name the same one; a different pick is said with the rule each uses."""
    from core.report import advisor as A
    from core.report import beside_advice
    from core.runs.compare import read_comparison

    cmp = read_comparison(comparison, store)
    rec = recommend(cmp, store=store, level=0.99)
    assert rec.release is True and rec.point is not None
    advice = A.advise(cmp, threat=A.Threat(cmp.spec.family, cmp.spec.privacy, 1.0),
                      floor=A.Floor(0.0))
    chosen = (advice.chosen.curve, advice.chosen.index)
    assert chosen == rec.point
    assert beside_advice(rec, chosen) == "The privacy report's release rule names the same point."
    other = next((c.name, i) for c in cmp.curves for i in range(len(c.knob))
                 if (c.name, i) != rec.point)
    said = beside_advice(rec, other)
    assert said.startswith("The privacy report's release rule answers differently: Release")
    assert "Which rule each uses" in said and rec.rule_text in said
    strict = recommend(cmp, store=store, level=0.001)
    assert beside_advice(strict, chosen).startswith("The privacy report's release rule answers "
                                                    "differently: Do not release")


def test_cli_writes_the_report_of_a_comparison_file(comparison, store, tmp_path, capsys):
    import yaml

    from cli.main import main

    spec = tmp_path / "cmp.yaml"
    spec.write_text(yaml.safe_dump({
        "family": comparison.family, "data": comparison.data, "utility": comparison.utility,
        "privacy": comparison.privacy, "seeds": list(comparison.seeds),
        "base": dict(comparison.base),
        "defenses": [{"defense": "none"}, {"defense": "inf2guard", "grid": [0.0, 1.0]}]}))
    out = tmp_path / "r.html"
    assert main(["report", "--comparison", str(spec), "-o", str(out), "--level", "0.5",
                 "--cache-dir", str(store.root)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["report", "--cache-dir", str(store.root)]) == 2  # neither KEY nor a file
    assert "give a stored run or sweep KEY" in capsys.readouterr().err


def test_the_pdf_flags_match_the_browser_test():
    from core.report.pdf import CHROMIUM_ARGS
    from dashboard.browser_check import CHROMIUM_ARGS as BROWSER

    assert CHROMIUM_ARGS == BROWSER


@needs_chromium
def test_no_request_leaves_the_page_and_the_pdf_has_pages(run, comparison, store, tmp_path):
    from core.report.pdf import external_requests

    for target in (run.key, comparison):
        rep = build_report(target, store=store)
        assert "<link" not in rep.html and ' src="http' not in rep.html
        assert external_requests(rep.html) == []
    assert rep.to_pdf(tmp_path / "r.pdf") >= 1
    assert (tmp_path / "r.pdf").read_bytes().startswith(b"%PDF")
    # `privlab report KEY --pdf`: the PDF beside the HTML file, under its name
    from cli.main import main

    html = tmp_path / "run.html"
    assert main(["report", run.key, "-o", str(html), "--pdf", "--cache-dir", str(store.root)]) == 0
    assert (tmp_path / "run.pdf").read_bytes().startswith(b"%PDF")
    # the counter sees a request that leaves the page
    planted = rep.html.replace("</body>", '<img src="https://example.invalid/x.png"></body>')
    assert external_requests(planted) == ["https://example.invalid/x.png"]


def test_membership_page_shows_the_recommendation_and_the_report_box(tmp_path, monkeypatch):
    from tests.test_pages import open_page

    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    at = open_page("views/membership.py")
    at.selectbox(key="mi_dataset").set_value("digits").run()
    for field, value in (("members", 60), ("epochs", 5), ("refs", 1), ("targets", 1),
                         ("shadows", 2)):
        at.text_input(key=f"mi_{field}__text").set_value(str(value)).run()
    at.button(key="mi_run").click().run(timeout=240)
    assert not at.exception, at.exception
    from dashboard.recommendation_check import recommendation_blocks

    said = recommendation_blocks(at)
    assert len(said) == 1 and ("Do not release" in said[0] or "Release:" in said[0])
    box = next(e for e in at.expander if e.label == "Privacy report (HTML / PDF)")
    assert not box.proto.expanded
    at.session_state["mi_report_open"] = True
    at.run(timeout=120)
    assert not at.exception, at.exception
    ids = [str(b.proto.id) for b in at.get("download_button")]
    assert any("mi_report_html" in i for i in ids) and any("mi_report_pdf" in i for i in ids)


def test_the_compare_hook_shows_one_sentence_for_the_comparison(comparison, store, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(store.root))

    def page() -> None:
        from benchmarks.report_bench import tiny_comparison
        from core.runs.compare import read_comparison
        from dashboard.base.widgets import get_store
        from dashboard.components.report_button import report_button

        report_button(read_comparison(tiny_comparison(), get_store()), key="cmp")

    at = AppTest.from_function(page, default_timeout=60).run()
    assert not at.exception, at.exception
    said = [m.value for m in at.markdown if "Release recommendation" in m.value]
    assert len(said) == 1 and ("of the 3 points" in said[0] or "of 3 points" in said[0])


def test_a_stored_sweep_reports_each_point(comparison, store):
    base = {**TINY, "defense": {"kind": "inf2guard"}}
    sweep = store.get_or_run({"kind": "sweep", "base": base,
                              "grid": {"defense.tradeoff_lambda": [0.0, 1.0]}})
    rep = build_report(sweep.key, store=store, level=0.5)
    labels = [v.label for v in rep.recommendation.points]
    assert labels == ["tradeoff_lambda = 0.0 · seed 0", "tradeoff_lambda = 1.0 · seed 0"]
    assert mismatched(rep, store, 0.5) == []


def test_the_accountants_epsilon_stands_beside_the_audited_one(store):
    cfg = {**TINY, "defense": {"kind": "dp_sgd", "noise_multiplier": 1.0, "epochs": 3},
           "audit": {"kind": "auto", "canaries": 100}}
    r = store.get_or_run(cfg)
    rep = build_report(r.key, store=store)
    pre = r.key[:12]
    budget = rep.html[rep.html.index("Privacy budget"):rep.html.index("<h3>Attacks")]
    order = [budget.index(f'data-n="{pre}/{m}"') for m in ("epsilon_accountant",
                                                           "audit_epsilon_lower")]
    assert order == sorted(order)
    assert ("consistent with the claim" in budget) is (r.metrics["audit_exceeds_claim"] < 0.5)
    assert mismatched(rep, store, 0.05) == []


def test_a_family_without_a_release_rule_says_so_and_shows_its_budget(store):
    cfg = {"kind": "fisher_information", "data": {"name": "digits"}, "irfil": {"iterations": 3},
           "attack": {"noise_trials": 4, "crb_trials": 200, "sigma_grid": 3}}
    r = store.get_or_run(cfg)
    rep = build_report(r.key, store=store)
    rec = rep.recommendation
    assert rec.release is None and rec.rule == "no_rule"
    assert "No release rule applies" in rec.rule_text and "Fisher information" in rec.rule_text
    assert f"{r.key[:12]}/fil_eta" in rep.numbers  # the run's budget, η
    assert not any("tpr_at_1pct_fpr" in n for n in rep.numbers)
    assert mismatched(rep, store, 0.05) == []
