"""Cluster Energy Saving (CES) from Helios (Hu et al., SC'21), offline.

Read a busy-nodes series (:func:`load_series`, :func:`series_from_run`), forecast it with a
LightGBM model that only sees the past (:mod:`dlsched.energy.forecast`), decide per 10-minute
step how many nodes to keep powered on (:func:`apply_rule`, parameters in :data:`PRESETS`) and
measure the result over the test window (:func:`replay`, :func:`write_report`).
"""

import typing as _typing

from dlsched._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
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

_EXPORTS = {
    "ForecastConfig": "dlsched.energy.forecast",
    "Forecaster": "dlsched.energy.forecast",
    "Split": "dlsched.energy.forecast",
    "train_forecaster": "dlsched.energy.forecast",
    "RuleEvent": "dlsched.energy.power_rule",
    "RuleOutcome": "dlsched.energy.power_rule",
    "RuleParams": "dlsched.energy.power_rule",
    "apply_rule": "dlsched.energy.power_rule",
    "PRESETS": "dlsched.energy.presets",
    "get_preset": "dlsched.energy.presets",
    "PowerModel": "dlsched.energy.replay",
    "ReplayConfig": "dlsched.energy.replay",
    "ReplayResult": "dlsched.energy.replay",
    "RuleSummary": "dlsched.energy.replay",
    "SplitSpec": "dlsched.energy.replay",
    "replay": "dlsched.energy.replay",
    "write_report": "dlsched.energy.report",
    "BusySeries": "dlsched.energy.series",
    "SeriesError": "dlsched.energy.series",
    "bundled_series_path": "dlsched.energy.series",
    "load_series": "dlsched.energy.series",
    "series_from_run": "dlsched.energy.series",
}

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


def __getattr__(name: str) -> _typing.Any:
    return _lazy_exports(__name__, _EXPORTS, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
