"""Cluster Energy Saving (CES) from Helios (Hu et al., SC'21), offline.

Read a busy-nodes series (:func:`load_series`, :func:`series_from_run`), forecast it with a
LightGBM model that only sees the past (:mod:`dlsched.energy.forecast`), decide per 10-minute
step how many nodes to keep powered on (:func:`apply_rule`, parameters in :data:`PRESETS`) and
measure the result over the test window (:func:`replay`, :func:`write_report`).
"""

from __future__ import annotations

from dlsched.energy.forecast import ForecastConfig, Forecaster, Split, train_forecaster
from dlsched.energy.power_rule import RuleEvent, RuleOutcome, RuleParams, apply_rule
from dlsched.energy.presets import PRESETS, get_preset
from dlsched.energy.replay import (
    PowerModel,
    ReplayConfig,
    ReplayResult,
    RuleSummary,
    SplitSpec,
    replay,
)
from dlsched.energy.report import write_report
from dlsched.energy.series import (
    BusySeries,
    SeriesError,
    bundled_series_path,
    load_series,
    series_from_run,
)

__all__ = [
    "PRESETS",
    "BusySeries",
    "ForecastConfig",
    "Forecaster",
    "PowerModel",
    "ReplayConfig",
    "ReplayResult",
    "RuleEvent",
    "RuleOutcome",
    "RuleParams",
    "RuleSummary",
    "SeriesError",
    "Split",
    "SplitSpec",
    "apply_rule",
    "bundled_series_path",
    "get_preset",
    "load_series",
    "replay",
    "series_from_run",
    "train_forecaster",
    "write_report",
]
