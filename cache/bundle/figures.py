"""A bundle's figures as files: each plotly figure as self-contained HTML (plotly.js inline, so
it opens offline) and as PNG (kaleido, which drives the system's Chromium).

The figures themselves are the dashboard's (one layer up): a *figure builder* maps what is
bundled (a Result, or a :class:`core.runs.compare.Comparison`) to ``{name: plotly Figure}``. The
dashboard registers its builder with :func:`set_figure_builder`; a caller may also pass one.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from cache.bundle.errors import BundleError
from cache.bundle.manifest import FIGURES, figure_stem

FigureBuilder = Callable[[Any], Mapping[str, Any]]

_BUILDER: FigureBuilder | None = None
#: kaleido's browser server is one per process: one bundle renders at a time
_PNG_LOCK = threading.Lock()


def set_figure_builder(builder: FigureBuilder | None) -> None:
    """The builder ``figures=True`` uses (None: none; ``figures=True`` then refuses)."""
    global _BUILDER
    _BUILDER = builder


def build_figures(figures: bool | FigureBuilder | Mapping[str, Any], target: Any
                  ) -> dict[str, Any]:
    """``{name: figure}`` for ``target``: none for ``False``, the registered builder's for
    ``True``, a callable's, or a mapping as given."""
    if figures is False:
        return {}
    if figures is True:
        if _BUILDER is None:
            raise BundleError("figures: no figure builder is registered (the dashboard's is "
                              "dashboard.components.bundle_figures); pass figures=False or a "
                              "builder")
        made = _BUILDER(target)
    elif callable(figures):
        made = figures(target)
    elif isinstance(figures, Mapping):
        made = figures
    else:
        raise BundleError(f"figures: got {type(figures).__name__}; allowed: True, False, a "
                          "builder (target -> {name: figure}) or a mapping of figures")
    out: dict[str, Any] = {}
    for name, fig in made.items():
        stem = figure_stem(str(name))
        while stem in out:
            stem += "_"
        out[stem] = fig
    return out


def render(figures: Mapping[str, Any], *, png: bool = True) -> tuple[dict[str, bytes], list[str]]:
    """``figures/<name>.html`` (and ``.png``) bytes of each figure, and notes (a PNG that
    could not be made: no Chromium, say; the HTML is kept)."""
    files: dict[str, bytes] = {}
    notes: list[str] = []
    for name, fig in figures.items():
        html = fig.to_html(include_plotlyjs=True, full_html=True,
                           config={"displaylogo": False})
        files[f"{FIGURES}/{name}.html"] = html.encode("utf-8")
    if png and figures:
        try:
            files.update(_pngs(figures))
        except Exception as exc:  # noqa: BLE001 -- kaleido/Chromium missing or failing
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            notes.append(f"figures: PNG not written ({type(exc).__name__}: {first[:160]}); "
                         "the HTML figures are complete")
    return files, notes


def _pngs(figures: Mapping[str, Any]) -> dict[str, bytes]:
    """Every figure as PNG, one Chromium for all of them (kaleido's server: starting the
    browser is the cost, each figure after it is a fraction of a second)."""
    import kaleido

    out: dict[str, bytes] = {}
    with _PNG_LOCK, warnings.catch_warnings():
        # plotly passes options a running server ignores, and says so for every figure
        warnings.filterwarnings("ignore", message="The kopts argument is ignored")
        kaleido.start_sync_server(silence_warnings=True)
        try:
            for name, fig in figures.items():
                out[f"{FIGURES}/{name}.png"] = fig.to_image(format="png")
        finally:
            kaleido.stop_sync_server(silence_warnings=True)
    return out
