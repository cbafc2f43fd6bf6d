"""Privacy report (core.report): a tiny membership run and a tiny membership comparison (no
defense and Inf2Guard λ ∈ {0, 1}) in a private store, each reported as HTML and PDF.

Headline: ``report_pdf_pages`` (pages of the run's PDF), ``report_external_requests``
(requests that tried to leave ``file://`` while Chromium loaded and drew both HTML pages),
``report_numbers_mismatched`` (printed numbers of both reports that differ from the store:
each ``<span class="num" data-n=NAME>`` read back, NAME resolved in the store, the derived
numbers recomputed here with scipy). Timing beside the load average.

:func:`mismatched` is the checker the tests use too.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

SPAN = re.compile(r'<span class="num" data-n="([^"]+)">([^<]*)</span>')

TINY = {"kind": "membership", "data": {"name": "digits"},
        "train": {"members": 80, "epochs": 8, "batch_size": 32},
        "attack": {"attackers": ["loss", "lira_offline"], "shadows": 2, "rmia_references": 1},
        "projection_points": 0}


def tiny_comparison() -> Any:
    from core.runs.compare import ComparisonSpec, DefenseSpec

    return ComparisonSpec(
        family="membership", data="digits", utility="utility_acc", privacy="mia_auc_best",
        defenses=(DefenseSpec.of("none"), DefenseSpec.of("inf2guard", (0.0, 1.0))), seeds=(0,),
        base={k: v for k, v in TINY.items() if k in ("train", "attack", "projection_points")})


# -- the checker: every printed number against the store ----------------------------------------


def urls_outside_plotlyjs(html: str) -> list[str]:
    """The http(s) URLs written in ``html`` outside the embedded plotly.js bundle (whose code
    names URLs it never requests unless a map or MathJax asks: Chromium counts requests)."""
    scripts = [(m.start(), m.end()) for m in re.finditer(r"<script[^>]*>.*?</script>", html,
                                                          re.DOTALL)
               if "* plotly.js v" in m.group(0)[:200]]
    rest, last = [], 0
    for a, b in scripts:
        rest.append(html[last:a])
        last = b
    rest.append(html[last:])
    return re.findall(r"https?://[^\s\"'<>]+", "".join(rest))


def _expected(name: str, store: Any, level: float, cache: dict[str, Any]) -> float | None:
    """The store's value of printed number ``name`` (None: not a store number, a section's)."""
    from scipy.stats import beta, norm

    from core.foundation.parts import attack_by_config_name

    head, *rest = name.split("/")
    if head == "param":
        return level if rest == ["level"] else math.nan
    if head == "section":
        return None
    r = cache.get(head) or cache.setdefault(head, store.get(head))
    if r is None:
        return math.nan
    if rest[0] == "scored":
        return float(r.info["scored"][rest[1]][0 if rest[2] == "pos" else 1])
    if rest[0] == "derived":
        what = rest[1]

        def counts(attack: str) -> tuple[int, int]:
            pos, neg = r.info["scored"][attack]
            return int(pos), int(neg)

        def p_of(attack: str) -> float:
            auc = r.metrics[attack_by_config_name(r.kind, attack).metric_name("auc")]
            n1, n2 = counts(attack)
            sd = math.sqrt((0.25 + (n1 - 1) / 12 + (n2 - 1) / 12) / (n1 * n2))
            return float(norm.sf((auc - 0.5) / sd))

        if what == "tpr_hi":
            tpr = r.metrics[attack_by_config_name(r.kind, rest[2]).metric_name(
                "tpr_at_1pct_fpr")]
            n = counts(rest[2])[0]
            k = round(tpr * n)
            return 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
        if what == "p":
            return p_of(rest[2])
        if what == "sacro_mean_auc":
            aucs = [r.metrics[attack_by_config_name(r.kind, a).metric_name("auc")]
                    for a in r.info["scored"] if p_of(a) < 0.05]
            return sum(aucs) / len(aucs)
        return math.nan
    metric = rest[0]
    if len(rest) == 1:
        v = r.metrics.get(metric)
    else:
        v = (r.intervals.get(metric) or {}).get(rest[1])
    return math.nan if v is None else float(v)


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def mismatched(report: Any, store: Any, level: float) -> list[str]:
    """Printed numbers of ``report`` whose value (``report.numbers``) or printed text differs
    from the store's (derived ones recomputed here); each as ``name: printed vs store``."""
    from core.report.rules import fmt

    cache: dict[str, Any] = {}
    bad = []
    spans = SPAN.findall(report.html)
    for name, text in spans:
        exp = _expected(name, store, level, cache)
        if exp is None:
            continue
        if text != fmt(None if math.isnan(exp) else exp) or not _same(report.numbers[name], exp):
            bad.append(f"{name}: printed {text} ({report.numbers.get(name)}) vs store {exp}")
    names = {n for n, _ in spans}
    bad += [f"{n}: in .numbers, not printed" for n in report.numbers if n not in names]
    return bad


# -- the benchmark -------------------------------------------------------------------------------


def main(quick: bool = False) -> dict[str, Any]:
    from cache.store import ResultStore
    from core.report import build_report
    from core.report.pdf import external_requests, screenshot
    from core.runs.compare import run_comparison

    load_start = [round(x, 2) for x in os.getloadavg()]
    rows = []
    with tempfile.TemporaryDirectory(prefix="privlab-report-bench-") as tmp:
        store = ResultStore(Path(tmp) / "cache")
        t0 = time.perf_counter()
        run = store.get_or_run(TINY)
        spec = tiny_comparison()
        run_comparison(spec, store)
        runs_s = time.perf_counter() - t0
        pages = external = mism = 0
        for what, target in (("run", run.key), ("comparison", spec)):
            level = 0.05
            t = time.perf_counter()
            rep = build_report(target, store=store, level=level)
            html_s = time.perf_counter() - t
            t = time.perf_counter()
            n_pages = rep.to_pdf(Path(tmp) / f"{what}.pdf")
            pdf_s = time.perf_counter() - t
            ext = external_requests(rep.html)
            urls = urls_outside_plotlyjs(rep.html)
            bad = mismatched(rep, store, level)
            if what == "run":
                pages = n_pages
                shot = Path(tempfile.gettempdir()) / "privlab_report_run.png"
                screenshot(rep.html, shot)
            external += len(ext)
            mism += len(bad)
            rows.append({"target": what, "verdict": rep.recommendation.sentence[:70],
                         "numbers_printed": len(rep.numbers), "mismatched": len(bad),
                         "external_requests": len(ext), "urls_outside_plotlyjs": len(urls),
                         "pdf_pages": n_pages,
                         "html_kB": round(len(rep.html.encode()) / 1024),
                         "build_html_s": round(html_s, 3), "print_pdf_s": round(pdf_s, 2)})
    load_end = [round(x, 2) for x in os.getloadavg()]
    return {"name": "report",
            "headline": {"report_pdf_pages": pages, "report_external_requests": external,
                         "report_numbers_mismatched": mism},
            "rows": rows,
            "timing": {"runs_and_comparison_s": round(runs_s, 2), "load_start": load_start,
                       "load_end": load_end},
            "notes": ("A 2-core machine shared with other sessions (load average 1/5/15 min at "
                      f"start {load_start}, at end {load_end}). build_html_s: build_report "
                      "from the store (plotly.js embedded once); print_pdf_s: Chromium start, "
                      "load, figures drawn, print to A4.")}
