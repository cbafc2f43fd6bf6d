"""privlab engine: defenses, attacks, federated simulation, bounds and projections.

The engine never imports streamlit. Everything enters through :func:`core.runs.experiments.run`
with a validated config from :mod:`core.config.schema`.
"""

#: part of every cache key: bump whenever a result for the same config would change
ENGINE_VERSION = "0.2.0"

__all__ = ["ENGINE_VERSION"]
