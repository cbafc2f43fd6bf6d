"""Validated experiment configs: the config blocks (:mod:`core.config.schema`), their shared
base, safe config files, migrations of stored configs and sweep expansion.
"""
