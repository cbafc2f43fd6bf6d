"""privlab engine: defenses, attacks, federated simulation, bounds and projections.

The engine never imports streamlit. Everything enters through :func:`core.experiments.run`
with a validated config from :mod:`core.config`.
"""

ENGINE_VERSION = "0.1.0"

__all__ = ["ENGINE_VERSION"]
