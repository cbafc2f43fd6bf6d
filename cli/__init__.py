"""The ``privlab`` command line (console script ``privlab = cli.main:main``): an entry point
above the engine, the store and the dashboard.
"""
