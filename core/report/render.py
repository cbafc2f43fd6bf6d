"""The report as one self-contained HTML page: inline CSS with system fonts, plotly figures
inline (plotly.js embedded once), no external URL. Every number printed goes through
:meth:`Page.num`, which wraps it in ``<span class="num" data-n="NAME">`` and records it in
:attr:`Page.numbers` (name -> value), so a checker can compare each with the store."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from core.report.rules import Num, Parts, fmt

CSS = """
:root { --ink: #1d2330; --mute: #5b6475; --line: #d9dde5; --ok: #1f7a3a; --bad: #b3261e;
        --none: #6b6b6b; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans",
       sans-serif; color: var(--ink); max-width: 900px; margin: 24px auto; padding: 0 18px;
       font-size: 14px; line-height: 1.45; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 28px 0 8px; border-bottom: 2px solid var(--line);
     padding-bottom: 4px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
p { margin: 6px 0; }
.sub { color: var(--mute); margin-bottom: 14px; }
.verdict { border: 2px solid var(--none); border-radius: 8px; padding: 12px 16px;
           margin: 14px 0; break-inside: avoid; }
.verdict.release { border-color: var(--ok); background: #eef8f0; }
.verdict.reject { border-color: var(--bad); background: #fcefee; }
.verdict .big { font-size: 17px; font-weight: 600; }
.rules { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; margin-top: 8px; }
.rules > div { background: #fff; border: 1px solid var(--line); border-radius: 6px;
               padding: 8px 10px; font-size: 13px; }
.rules h3 { margin: 0 0 4px; font-size: 13px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; font-size: 12.5px;
        break-inside: auto; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 6px; text-align: left;
         vertical-align: top; }
th { background: #f3f5f8; font-weight: 600; }
tr { break-inside: avoid; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.n { white-space: nowrap; }
.iv { color: var(--mute); font-size: 11.5px; }
.flag { color: var(--bad); font-size: 11px; vertical-align: super; }
.cards { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
        break-inside: avoid; font-size: 12.5px; }
.card b { display: block; margin-bottom: 3px; }
.note { color: var(--mute); font-size: 12.5px; }
ol.caveats { font-size: 12.5px; padding-left: 20px; }
.tag { display: inline-block; padding: 1px 7px; border-radius: 10px; font-size: 11.5px;
       font-weight: 600; color: #fff; background: var(--none); }
.tag.release { background: var(--ok); }
.tag.reject { background: var(--bad); }
.fig { margin: 8px 0; break-inside: avoid; }
pre.config { columns: 2; column-gap: 18px; }
pre { background: #f6f7f9; border: 1px solid var(--line); padding: 8px; font-size: 11px;
      white-space: pre-wrap; word-break: break-word; }
@page { size: A4; margin: 14mm; }
@media print { body { margin: 0; max-width: none; padding: 0; } h2 { break-after: avoid; } }
"""


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def verdict_class(release: bool | None) -> str:
    return {True: "release", False: "reject", None: "undecided"}[release]


class Page:
    """An HTML page being written: its body parts, the numbers printed, whether plotly.js is
    embedded yet."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.body: list[str] = []
        self.numbers: dict[str, float] = {}
        self._plotly_in = False
        self._figures = 0

    # -- numbers -----------------------------------------------------------------------------

    def num(self, n: Num) -> str:
        """A number as printed: recorded under its name (NaN for a missing value)."""
        self.numbers[n.name] = math.nan if n.value is None else float(n.value)
        return f'<span class="num" data-n="{esc(n.name)}">{esc(fmt(n.value))}</span>'

    def parts(self, parts: Parts) -> str:
        """A sentence with its numbers tagged."""
        return "".join(self.num(p) if isinstance(p, Num) else esc(p) for p in parts)

    def with_interval(self, value: Num, lo: Num | None, hi: Num | None) -> str:
        cell = self.num(value)
        if lo is not None and hi is not None:
            cell += f' <span class="iv">[{self.num(lo)}, {self.num(hi)}]</span>'
        return cell

    # -- blocks ------------------------------------------------------------------------------

    def add(self, markup: str) -> None:
        self.body.append(markup)

    def h(self, level: int, text: str) -> None:
        self.add(f"<h{level}>{esc(text)}</h{level}>")

    def p(self, text: str, cls: str | None = None) -> None:
        c = f' class="{cls}"' if cls else ""
        self.add(f"<p{c}>{esc(text)}</p>")

    def table(self, header: Sequence[str], rows: Iterable[Sequence[str]],
              numeric: Sequence[bool] | None = None) -> None:
        """A table of markup cells (escape text cells before); ``numeric`` right-aligns."""
        numeric = list(numeric or [False] * len(header))
        th = "".join(f'<th class="n">{esc(h)}</th>' if n else f"<th>{esc(h)}</th>"
                     for h, n in zip(header, numeric, strict=True))
        trs = "".join("<tr>" + "".join(f'<td class="n">{c}</td>' if n else f"<td>{c}</td>"
                                       for c, n in zip(r, numeric, strict=True)) + "</tr>"
                      for r in rows)
        self.add(f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>")

    def figure(self, fig: Any) -> None:
        """A plotly figure inline; plotly.js embedded with the first one only."""
        self._figures += 1
        markup = fig.to_html(full_html=False, include_plotlyjs=not self._plotly_in,
                             div_id=f"fig{self._figures}",
                             config={"displaylogo": False, "displayModeBar": False,
                                     "responsive": False})
        self._plotly_in = True
        self.add(f'<div class="fig">{markup}</div>')

    def section(self, section: Mapping[str, Any], index: int) -> None:
        """A section handed in by another helper (advisor, per-record exposure): title,
        sentences, rows (a table over the union of their keys), optional figure."""
        self.h(2, str(section.get("title") or f"Section {index + 1}"))
        for s in section.get("sentences") or ():
            self.p(str(s))
        rows = list(section.get("rows") or ())
        if rows:
            cols = list(dict.fromkeys(k for r in rows for k in r))
            numeric = [all(isinstance(r.get(c), int | float) for r in rows if c in r)
                       for c in cols]
            cells = []
            for i, r in enumerate(rows):
                line = []
                for c in cols:
                    v = r.get(c)
                    if isinstance(v, int | float) and not isinstance(v, bool):
                        line.append(self.num(Num(f"section/{index}/{i}/{c}", float(v))))
                    else:
                        line.append(esc("" if v is None else v))
                cells.append(line)
            self.table([str(c) for c in cols], cells, numeric)
        fig = section.get("figure")
        if fig is not None:
            self.figure(fig)

    def config(self, config: Mapping[str, Any]) -> None:
        self.add(f'<pre class="config">{esc(json.dumps(config, indent=1, sort_keys=True, default=str))}</pre>')

    def html(self) -> str:
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{esc(self.title)}</title><style>{CSS}</style></head><body>"
                + "\n".join(self.body) + "</body></html>\n")
