"""The paper check's paper-architecture column: every claim read again with the paper's own
architecture family (:class:`core.paper_check.claims.PaperArch`, declared beside each claim), by
the same verdict rule (:mod:`core.paper_check.verdicts`: the 95 % interval of the compared difference),
beside the first column (today's models: MLPs for the image runners, the papers' own models
where our runner already trains them). Where both columns are measured and their verdicts
differ, the row says so (:func:`verdict_changes`).

Torch-free and streamlit-free (the CLI and the Home page import it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.foundation.provenance import source_files, stale_mark
from core.paper_check.measures import RESULTS, _match, dig, load, num
from core.paper_check.verdicts import UNRESOLVED, decide, fmt_value

NOT_MEASURED = "not measured"
#: the table's short form of a provenance mark (the whole mark is in the row's details)
OLDER_SHORT = "made by an older engine (see the details)"
SHORT = 110  # characters of a not-measured reason in the table (the rest in the details)


def _rows_behind(arch: Any, root: Path) -> list[dict[str, Any]]:
    """The rows of ``arch.file`` matching any of ``arch.runs`` (the runs behind the reading)."""
    rows = dig(load(f"{RESULTS}/{arch.file}", root), ("rows",)) if arch.file else None
    if not isinstance(rows, list):
        return []
    return [r for r in rows if any(_match(r, f) for f in arch.runs)]


def cell(claim: Any, first: dict[str, Any] | None, root: Path) -> dict[str, Any]:
    """The claim's paper-architecture cell: arch, width, data, verdict, interval, seeds,
    seconds (wall and CPU of the runs behind it), and the text the table shows. ``first``:
    the first column's deciding cell (its reading is this column's where ``arch.measure`` is
    None: the first column already trains the paper's model)."""
    a = claim.arch
    base = {"family": a.family, "arch": a.arch, "width": a.width, "data": a.data,
            "reductions": a.reductions, "same_as_first": a.measure is None}
    if a.measure is None:
        if not first or not first.get("measured"):
            why = (first or {}).get("why") or "the first column is not measured"
            return {**base, "measured": False, "verdict": None, "interval": None,
                    "seeds": [], "seconds": None, "cpu_seconds": None, "why": why,
                    "text": f"{NOT_MEASURED}: {why}"}
        return {**base, "measured": True, "verdict": first["verdict"],
                "interval": first.get("interval"), "value": first.get("value"), "seeds": [],
                "seconds": None, "cpu_seconds": None, "why": first.get("why", ""),
                "sources": first.get("sources", []),
                "text": "the first column's reading (its runs train the paper's model): "
                        + first.get("text", "")}
    r = a.measure.read(root)
    behind = _rows_behind(a, root)
    if not r.measured:
        why = a.unrun if a.unrun and not behind else r.why
        return {**base, "measured": False, "verdict": None, "interval": None, "seeds": [],
                "seconds": None, "cpu_seconds": None, "why": why,
                "text": f"{NOT_MEASURED}: {why}"}
    seeds = sorted({x.get("seed") for x in behind if x.get("seed") is not None})
    secs = [num(x.get("seconds")) for x in behind]
    cpus = [num(x.get("cpu_seconds")) for x in behind]
    doc = load(f"{RESULTS}/{a.file}", root) or {}
    iv = r.interval
    text = f"{claim.base_label} {fmt_value(r.base)} → {claim.test_label} {fmt_value(r.test)}"
    text += (f"; Δ {fmt_value(iv.estimate)} [{fmt_value(iv.lo)}, {fmt_value(iv.hi)}] "
             f"({iv.method})" if iv else f"; no interval: {r.why}")
    mark = stale_mark(source_files(r.sources), root)
    if mark:
        text += f" ({mark})"
    return {**base, "measured": True, "verdict": decide(iv, claim.relation),
            "interval": iv.as_dict() if iv else None, "value": [r.base, r.test],
            "seeds": seeds, "why": "" if iv else r.why, "sources": r.sources,
            "seconds": round(sum(x for x in secs if x is not None), 1) if behind else None,
            "cpu_seconds": round(sum(x for x in cpus if x is not None), 1) if behind else None,
            "protocol": str(doc.get("reductions") or ""), "partial": bool(doc.get("partial")),
            "stale": mark, "text": text}


def differs(row: dict[str, Any]) -> bool:
    """Both columns measured and their verdicts differ."""
    a = row.get("paper_arch") or {}
    return bool(a.get("measured")) and row.get("verdict") != a.get("verdict")


def verdict_changes(rows: list[dict[str, Any]]) -> list[str]:
    """claim ids whose paper-architecture verdict differs from the first column's."""
    return [r["claim_id"] for r in rows if differs(r)]


def short(row: dict[str, Any]) -> str:
    """The column in a few words for the table: the verdict and the model, or why not."""
    a = row.get("paper_arch")
    if not a:
        return "—"
    if not a["measured"]:
        # the first clause only (the whole reason is in the row's details)
        why = a["why"].split(";")[0]
        if len(why) > SHORT:
            why = why[:SHORT].rsplit(" ", 1)[0] + " …"
        return f"{NOT_MEASURED} ({arch_title(a['arch'])}): {why}"
    width = f" ×{a['width']:g}" if a.get("width") is not None else ""
    mark = " · differs from the first column" if differs(row) else ""
    iv = a.get("interval")
    ivt = (f"Δ {fmt_value(iv['estimate'])} [{fmt_value(iv['lo'])}, {fmt_value(iv['hi'])}]"
           if iv else "no interval")
    old = f" · {OLDER_SHORT}" if a.get("stale") else ""
    return f"{a['verdict']} · {arch_title(a['arch'])}{width}, {a['data']} · {ivt}{mark}{old}"


def arch_title(arch: str) -> str:
    """A registered architecture by its title (a reader never sees a registered name); other
    model descriptions ("linear / logistic") as they are."""
    from core.foundation.parts import ARCHITECTURES

    return ARCHITECTURES.get(arch).title if arch in ARCHITECTURES else arch


def headline(rows: list[dict[str, Any]], paper: str) -> dict[str, Any]:
    """``paper_arch_claims_measured``: claims of origin ``paper`` measured with the paper's
    architecture family, out of ``paper_arch_claims_total``; ``paper_arch_verdict_changes``:
    the claims (paper claims and our own findings) whose verdict differs between columns;
    ``paper_arch_newly_run``: paper claims whose column comes from runs of the paper's model
    made for it (not the first column's reading)."""
    p = [r for r in rows if r["origin"] == paper]
    measured = [r for r in p if (r.get("paper_arch") or {}).get("measured")]
    return {"paper_arch_claims_measured": len(measured),
            "paper_arch_claims_total": len(p),
            "paper_arch_newly_run": sum(not r["paper_arch"]["same_as_first"] for r in measured),
            "paper_arch_verdict_changes": verdict_changes(rows),
            "paper_arch_not_resolved": sum(r["paper_arch"]["verdict"] == UNRESOLVED
                                           for r in measured)}


def changes_sentence(rows: list[dict[str, Any]]) -> str:
    """One line naming the claims whose verdict differs between the columns ("" when none)."""
    ch = [r for r in rows if differs(r)]
    if not ch:
        return ""
    return ("With the paper's architecture the verdict differs for "
            + "; ".join(f"{r['claim_id']} ({r['verdict']} → {r['paper_arch']['verdict']})"
                        for r in ch) + ".")


def summary_sentence(rows: list[dict[str, Any]], paper: str) -> str:
    """The column's count (out of the paper claims) and, where any, the verdicts that differ."""
    h = headline(rows, paper)
    return (f"With the paper's architecture: {h['paper_arch_claims_measured']} of "
            f"{h['paper_arch_claims_total']} paper claims measured "
            f"({h['paper_arch_newly_run']} from runs of the papers' conv nets). "
            + (changes_sentence(rows) or "No verdict differs where both columns are measured."))
