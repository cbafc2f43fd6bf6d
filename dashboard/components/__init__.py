"""Components that draw a Result (or Results), reusable by every page (DESIGN: Dashboard).

Each takes a Result and a ``key`` prefix for its widgets and plots; none runs anything and
none holds a domain rule (the strongest attacker, Theorem 1's threshold, the nearest cached
knob value come from the Result or :mod:`core.report.tradeoff`).
"""

from dashboard.components.attacks import attack_table, strongest_attacker, threat_card_lines
from dashboard.components.bounds import bounds_panel
from dashboard.components.copy_run import cli_one_liner, config_mapping, config_yaml, copy_run
from dashboard.components.curves import round_curves
from dashboard.components.deferred import deferred
from dashboard.components.knob import knob_ui
from dashboard.components.page_tail import page_tail
from dashboard.components.projections import projection_pair
from dashboard.components.result_info import (
    config_and_metrics,
    defense_panel,
    metrics_frame,
    metrics_table,
    result_caption,
    utility_panel,
)
from dashboard.components.tradeoff import tradeoff_plot

__all__ = [
    "attack_table", "bounds_panel", "cli_one_liner", "config_and_metrics", "config_mapping", "config_yaml", "copy_run",
    "defense_panel", "deferred", "knob_ui", "metrics_frame", "metrics_table", "page_tail",
    "projection_pair", "result_caption",
    "round_curves", "strongest_attacker", "threat_card_lines", "tradeoff_plot", "utility_panel",
]
