"""privlab dashboard: ``streamlit run dashboard/app.py``.

Pages hold widgets and plots only; every number comes from a Result (through the cache store)
or from a closed-form formula in :mod:`core.bounds`. No ML logic lives here.
"""
