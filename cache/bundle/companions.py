"""The files that travel with every bundle besides the runs: the notebook that recreates the
target through the public ``privlab`` module (:mod:`core.report.notebook`, as ``.ipynb`` and as a
``.py`` script) and the privacy report (:mod:`core.report`, HTML, and PDF where Chromium is
used for the figures too)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

NOTEBOOK, SCRIPT, REPORT_HTML, REPORT_PDF = "notebook.ipynb", "notebook.py", "report.html", \
    "report.pdf"


def companions(target: Any, *, store: Any, pdf: bool = True) -> tuple[dict[str, bytes],
                                                                      list[str]]:
    """(files by name, notes): the notebook, its script and the report of ``target`` (a run or
    sweep key, a ComparisonSpec, or the stored Result / assembled Comparison already read). A part that cannot be made (no Chromium for the PDF) is
    left out with a note; the bundle is still written."""
    import nbformat

    from core.report import build_report
    from core.report.notebook import notebook_for, to_script

    nb = notebook_for(target, store=store)
    files = {NOTEBOOK: nbformat.writes(nb).encode(), SCRIPT: to_script(nb).encode()}
    notes: list[str] = []
    report = build_report(target, store=store)
    files[REPORT_HTML] = report.html.encode()
    if pdf:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / REPORT_PDF
            try:
                report.to_pdf(out)
                files[REPORT_PDF] = out.read_bytes()
            except (OSError, RuntimeError) as exc:  # no Chromium here: the HTML stands
                notes.append(f"{REPORT_PDF} not written: {str(exc).splitlines()[0]}")
    return files, notes
