"""The scan the provenance test and the trust benchmark share: every figure the paper check
and the architecture cost captions show from a result file, whether that file records the
engine that made it (:mod:`core.foundation.provenance`) and whether an older engine's figure
carries its mark."""

from __future__ import annotations

from pathlib import Path

from core.foundation.provenance import ROOT, origin, source_files


def shown_figures(root: Path = ROOT) -> list[tuple[str, list[str]]]:
    """(text shown, files it was read from) for every figure the paper check (first column,
    paper-architecture column, preset estimates) and the architecture cost captions show."""
    from core.engine import costs as model_costs
    from core.foundation.parts import ARCHITECTURES
    from core.paper_check import papers

    out: list[tuple[str, list[str]]] = []
    for r in papers.build_table(root, cuda=False):
        for c in r["cells"]:
            files = source_files(c.get("sources") or [])
            if c.get("measured") and files:
                out.append((c["text"], files))
        big = r["ours_largest"]
        if big.get("estimate") and big.get("estimate_seconds") is not None:
            out.append((big["text"], [Path(papers.PAPERS_JSON).name]))
        a = r.get("paper_arch") or {}
        files = source_files(a.get("sources") or [])
        if a.get("measured") and files:
            out.append((a["text"], files))
    for name in ARCHITECTURES:
        got = model_costs.cpu_rate(name)
        if got is not None and got[2]:
            out.append((got[1], list(got[2])))
    return out


def scan(root: Path = ROOT) -> dict[str, int]:
    """``shown_figures_without_provenance``: figures whose file has no provenance block;
    ``stale_figures_unmarked``: figures from a file of another engine whose text lacks its
    mark; ``shown_figures``: all counted."""
    figs = shown_figures(root)
    missing = stale = 0
    for text, files in figs:
        origins = [origin(f, root) for f in files]
        missing += any(not o.recorded for o in origins)
        stale += any(not o.current and o.mark() not in text for o in origins)
    return {"shown_figures": len(figs), "shown_figures_without_provenance": missing,
            "stale_figures_unmarked": stale}
