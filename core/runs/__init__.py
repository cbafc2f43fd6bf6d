"""Experiment runners, one module per config kind (registered in core.runs.experiments)."""
