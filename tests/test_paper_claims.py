"""Every paper claim cites the paper's own table, figure, section or theorem (never a section of
the notes) and quotes the paper verbatim; our own findings carry neither and say so."""

from __future__ import annotations

import re

import pytest

from core.paper_check.claims import CLAIMS, OWN, PAPER
from core.paper_check.papers import ROOT

PAPERS_DIR = ROOT.parent / "shared" / "papers"
#: the plain-text copy of each paper (shared/papers/README.md maps them)
PAPER_FILES = {"TAPPFL": "000_24e3c09950d5d970.txt", "κ channel": "001_9d14152fdbdc2ed0.txt",
               "FIL": "002_24c0022af4ad1670.txt", "Inf2Guard": "004_205fd57fb21a80a8.txt"}
# the notes' section labels (shared/spec): "§A11", "B11", "spec", "notes" must not be cited
NOTES_LABEL = re.compile(r"§\s*[AB]\d|\b[AB]\d{1,2}\b|\bspec\b|\bnotes?\b|seed-00", re.IGNORECASE)
PAPER_LABEL = re.compile(r"\b(Table|Tables|Fig\.|Figs\.|Figure|Theorem)\s*\d|§\s*\d")
# prose runs of the quote: math symbols and digits are where the text conversion mangles
PROSE = re.compile(r"[A-Za-z ,.;:'’()\-—]+")


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _prose_pieces(quote: str) -> list[str]:
    return [p.strip() for p in PROSE.findall(quote) if len(p.strip()) >= 15]


@pytest.mark.parametrize("claim", [c for c in CLAIMS if c.origin == PAPER],
                         ids=lambda c: c.claim_id)
def test_paper_claim_cites_the_paper_not_the_notes(claim):
    assert claim.citation.startswith(claim.paper.split()[0]), claim.citation
    assert PAPER_LABEL.search(claim.citation), claim.citation
    assert not NOTES_LABEL.search(claim.citation), claim.citation
    assert not NOTES_LABEL.search(claim.paper_number), claim.paper_number
    assert claim.quote and len(_prose_pieces(claim.quote)) >= 1


@pytest.mark.skipif(not PAPERS_DIR.is_dir(), reason="shared/papers not present")
@pytest.mark.parametrize("claim", [c for c in CLAIMS if c.origin == PAPER],
                         ids=lambda c: c.claim_id)
def test_paper_claim_quote_is_verbatim(claim):
    text = _normal((PAPERS_DIR / PAPER_FILES[claim.paper]).read_text())
    pieces = _prose_pieces(claim.quote)
    assert sum(map(len, pieces)) >= 0.6 * len(claim.quote.replace(" ", "")), \
        "the quote is mostly symbols: too little to check"
    for piece in pieces:
        assert piece in text, f"not verbatim in {PAPER_FILES[claim.paper]}: {piece!r}"


def test_the_verbatim_check_catches_a_paraphrase():
    text = _normal((PAPERS_DIR / PAPER_FILES["κ channel"]).read_text()) \
        if PAPERS_DIR.is_dir() else "the Natural Channel achieves the best utility-privacy trade-off"
    assert "the Natural Channel achieves the best utility-privacy trade-off" in text
    assert not all(p in text for p in _prose_pieces("Natural Channel has the best trade-off"))


def test_own_findings_are_apart_and_say_why():
    own = [c for c in CLAIMS if c.origin == OWN]
    assert {c.claim_id for c in own} >= {"fil_identifies_leakers",
                                         "inf2guard_dra_learned_vs_fixed"}
    for c in own:
        assert not c.citation and not c.quote and c.paper_number.startswith("not a paper claim")


def test_claims_are_unique_directional_and_read_stored_results():
    ids = [c.claim_id for c in CLAIMS]
    assert len(ids) == len(set(ids))
    for c in CLAIMS:
        assert c.relation in ("<", ">") and c.scales and c.command
        for s in c.scales:
            for f in getattr(s.measure, "files", ()) or (getattr(s.measure, "file", None),):
                assert f is None or f.endswith(".json")


def test_fig14_channel_ordering_is_a_row():
    ids = {c.claim_id for c in CLAIMS}
    assert {"kappa_white_over_natural_mse", "kappa_personalized_over_natural_mse"} <= ids


def test_fil_black_box_verdict_states_its_pi_and_the_default_pi_is_measured_beside_it():
    """The black-box claim names the confusion-matrix π its verdict reads; the rows it reads
    hold the engine's default (Gaussian) π beside it, and what the note says of both holds."""
    import json

    claim = next(c for c in CLAIMS if c.claim_id == "fil_blackbox_eta")
    assert "confusion matrix" in claim.note and "black_box_gaussian_acc" in claim.note
    rows = [r for r in json.loads((ROOT / "benchmarks/results/fil.json")
                                  .read_text())["rows"] if r["part"] == "adult_attack"]
    assert rows and all(r["black_box_pi"] == "confusion" for r in rows)
    high = [r for r in rows if r["eta_bar"] >= 0.3 - 1e-9]
    assert high and all(r["black_box_acc"] == r["prior_acc"] for r in high)
    assert all(r["black_box_gaussian_acc"] > r["prior_acc"] + 0.05 for r in rows)
