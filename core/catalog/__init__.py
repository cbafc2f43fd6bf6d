"""Every registered part's one declaration, a module each (DESIGN: Architecture).

A module here declares one defense (its config block, its knob read from the block's
constraints, grids, budget metric, builder), one attack or a family's attack presets, or a
signal; it registers them in :mod:`core.foundation.parts` when imported. The registries import this
package on their first read, and this package imports every module in it: a new part is a new
file here and nothing else. A module imports light at top level (pydantic, numpy, the registry);
torch and friends inside its functions.
"""

from __future__ import annotations

import importlib
import pkgutil


def _discover() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{info.name}")


_discover()
