"""Reproducible bundles: one zip that holds a run, a sweep or a comparison with everything
needed to read, check and re-import it elsewhere (:func:`write_bundle`, :func:`import_bundle`).

A bundle describes itself: ``manifest.json`` names its kind, keys, seeds, the engine that wrote
it (version and source fingerprint, :mod:`core.foundation.fingerprint`), the versions of the packages that
shape the numbers, its creation time and the sha256 of every other file. Each run is its
Result's strict JSON and its arrays as ``.npz`` (read back with ``allow_pickle=False``); figures
come as self-contained HTML (plotly.js inline: the bundle opens offline) and PNG.

The module lives with the result store, on the runs' level (:mod:`core.layers`): it reads runs
from the store and writes imported ones into it (with their origin), and it assembles a
comparison with :func:`core.runs.compare.read_comparison`; the engine (``core``) may use neither.
Figures are the dashboard's, one level up: they come in through a figure builder
(:func:`set_figure_builder`, or ``figures=<callable>``), never drawn a second time here.
"""

from cache.bundle.errors import BundleError
from cache.bundle.figures import set_figure_builder
from cache.bundle.read import ImportReport, import_bundle, read_manifest
from cache.bundle.write import BundleInfo, write_bundle
from core.runs.compare import load_spec, spec_from_dict, spec_to_dict

__all__ = ["BundleError", "BundleInfo", "ImportReport", "import_bundle", "load_spec",
           "read_manifest", "set_figure_builder", "spec_from_dict", "spec_to_dict",
           "write_bundle"]
