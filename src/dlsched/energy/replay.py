"""The offline CES service: train the forecaster, forecast the test window, apply the rule.

**Windows.** The series is split by time into training, validation and test windows
(:class:`SplitSpec`: by calendar months as seeds.md 1.4 says, by fractions of the steps or at
given dates). The rule is evaluated
over the test window only, the one window whose forecasts come from a model that never saw it;
it starts there with ``busy + B`` nodes on.

**Measures** (over the evaluated steps): mean powered-off nodes (``total − on``); node
utilization before, the mean of ``busy / total``, and after, the mean of ``busy / on`` (steps
with nothing on and nothing busy are left out of that mean); shortfall steps and node-steps;
wake-ups and shrinks per day; forecast RMSE (nodes) and SMAPE (percent) over every (issue step,
horizon 1 … 2F) pair whose target lies in the test window and was not forward-filled, for the
model and for the seasonal-naive baseline; energy (:class:`PowerModel`).

**References.** The rule is also run with three other forecasts on the same window, to show how
much of the result the forecaster earns: a perfect forecast (the true future, the last value
repeated past the series end), persistence and seasonal naive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from dlsched.energy.features import Flags
from dlsched.energy.forecast import (
    ForecastConfig,
    Forecaster,
    Split,
    persistence,
    rmse,
    seasonal_naive,
    smape,
    train_forecaster,
)
from dlsched.energy.power_rule import RuleOutcome, RuleParams, apply_rule
from dlsched.energy.series import STEP_S, STEPS_PER_DAY, BusySeries
from dlsched.trace.walltime import parse_date_or_time

STEP_HOURS = STEP_S / 3600
HOUR_AHEAD_STEPS = 3600 // STEP_S
REPORTED_HORIZONS_H = (1 / 6, 1.0, 3.0)
"""Horizons (hours) listed in the accuracy table besides F and 2F."""
DGX1_MAX_POWER_W = 3500.0
DGX1_SOURCE = (
    "NVIDIA DGX-1 (8× Tesla V100) data sheet: maximum system power usage 3,500 W, taken as "
    "the draw of a busy 8-GPU node"
)
IDLE_FRACTION = 0.5
IDLE_SOURCE = (
    "half the busy draw: servers draw about half their peak power when idle (Barroso and "
    "Hölzle, “The Case for Energy-Proportional Computing”, IEEE Computer 40(12), 2007); an "
    "estimate, not a measurement of Philly's machines, and likely high for GPU servers whose "
    "GPUs idle far below their peak; pass --idle-power-w for measured hardware"
)


@dataclass(frozen=True)
class PowerModel:
    """Node power in watts: ``idle_w`` for a powered, idle node (what powering it off saves)
    and ``busy_w`` for a busy one (defaults: :data:`DGX1_SOURCE`, :data:`IDLE_SOURCE`)."""

    idle_w: float = IDLE_FRACTION * DGX1_MAX_POWER_W
    busy_w: float = DGX1_MAX_POWER_W

    def __post_init__(self) -> None:
        if not (self.idle_w >= 0 and self.busy_w >= 0 and np.isfinite(self.idle_w + self.busy_w)):
            raise ValueError(
                f"node power must be finite and non-negative, got idle {self.idle_w} W, "
                f"busy {self.busy_w} W"
            )


SplitMode = Literal["auto", "months", "fractions", "dates"]
SPLIT_MODES: tuple[SplitMode, ...] = ("auto", "months", "fractions", "dates")
MIN_MONTH_WINDOW_DAYS = 7
"""``auto`` splits by months only when the validation and test months hold this many days."""


@dataclass(frozen=True)
class SplitSpec:
    """How to split the series into training, validation and test windows (``mode``):

    - ``months``: seeds.md 1.4's "train on the first months, validate on the next, test on
      the last": the test window is the series' last calendar month (to the series' end), the
      validation window the month before, training everything earlier. Needs wall-clock
      times and three calendar months.
    - ``fractions``: the first ``train_fraction`` of the steps train, the next
      ``valid_fraction`` validate, the rest is the test window.
    - ``dates``: ``valid_start`` and ``test_start`` (``YYYY-MM-DD`` or ``YYYY-MM-DD
      HH:MM:SS``) and an optional exclusive ``test_end``.
    - ``auto`` (default): ``months`` when possible with at least
      :data:`MIN_MONTH_WINDOW_DAYS` days in both the validation and the test month, else
      ``fractions``.
    """

    mode: SplitMode = "auto"
    train_fraction: float = 0.6
    valid_fraction: float = 0.2
    valid_start: str | None = None
    test_start: str | None = None
    test_end: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in SPLIT_MODES:
            raise ValueError(f"split mode must be one of {', '.join(SPLIT_MODES)}, got {self.mode}")
        dated = (self.valid_start, self.test_start, self.test_end) != (None, None, None)
        if dated != (self.mode == "dates"):
            raise ValueError(
                "a split by dates needs mode 'dates' with the validation and test starts"
                if dated
                else "mode 'dates' needs the validation and test starts"
            )

    def resolve(self, series: BusySeries) -> tuple[Split, SplitMode]:
        """The step windows of ``series`` and the mode that made them (``auto`` resolved);
        ValueError if a window would be empty, the months or dates do not fit the series."""
        if self.mode == "dates":
            return self._by_dates(series), "dates"
        if self.mode in ("auto", "months"):
            months = self._by_months(series, strict=self.mode == "months")
            if months is not None:
                return months, "months"
        return self._by_fractions(len(series)), "fractions"

    def _by_fractions(self, n: int) -> Split:
        f_train, f_valid = self.train_fraction, self.valid_fraction
        if not (f_train > 0 and f_valid > 0 and f_train + f_valid < 1):
            raise ValueError(
                "train and validation fractions must be positive and sum to less than 1, "
                f"got {f_train} and {f_valid}"
            )
        return Split(int(f_train * n), int((f_train + f_valid) * n), n)

    def _by_dates(self, series: BusySeries) -> Split:
        if self.valid_start is None or self.test_start is None:
            raise ValueError("a split by dates needs both the validation and the test start")
        ends = [self._step(series, self.valid_start), self._step(series, self.test_start)]
        ends.append(len(series) if self.test_end is None else self._step(series, self.test_end))
        return Split(*ends)

    @staticmethod
    def _by_months(series: BusySeries, *, strict: bool) -> Split | None:
        n = len(series)
        first = np.datetime64(int(series.start_s), "s").astype("datetime64[M]")
        last = np.datetime64(int(series.start_s + STEP_S * (n - 1)), "s").astype("datetime64[M]")
        problem = ""
        if not series.origin_known:
            problem = "the series has relative times (give --origin)"
        elif last - first < np.timedelta64(2, "M"):
            problem = f"the series spans {int((last - first).astype(int)) + 1} calendar month(s)"
        if problem:
            if strict:
                raise ValueError(f"cannot split by months: {problem}; need three")
            return None
        valid_start_s = int((last - 1).astype("datetime64[s]").astype(np.int64))
        test_start_s = int(last.astype("datetime64[s]").astype(np.int64))
        train_end = (valid_start_s - series.start_s) // STEP_S
        valid_end = (test_start_s - series.start_s) // STEP_S
        days = min(valid_end - train_end, n - valid_end) / STEPS_PER_DAY
        if not strict and days < MIN_MONTH_WINDOW_DAYS:
            return None
        return Split(train_end, valid_end, n)

    @staticmethod
    def _step(series: BusySeries, text: str) -> int:
        at = parse_date_or_time(text)
        step = int(np.ceil((at - series.start_s) / STEP_S))
        if not 0 < step <= len(series):
            raise ValueError(
                f"{text} lies outside the series ({series.label(0)} … "
                f"{series.label(len(series) - 1)})"
            )
        return step


@dataclass(frozen=True)
class ReplayConfig:
    """Everything a replay needs besides the series: rule parameters (and the preset they
    came from, if any), the split, the forecaster and the power model."""

    params: RuleParams
    preset: str | None = None
    split: SplitSpec = field(default_factory=SplitSpec)
    forecast: ForecastConfig = field(default_factory=ForecastConfig)
    power: PowerModel = field(default_factory=PowerModel)


@dataclass(frozen=True)
class RuleSummary:
    """The measures of one rule run over the evaluated window (module docstring); fractions
    for utilization, kWh for energy."""

    mean_powered_off_nodes: float
    utilization_before: float
    utilization_after: float
    shortfall_steps: int
    shortfall_node_steps: int
    wakeups_per_day: float
    shrinks_per_day: float
    powered_off_node_hours: float
    energy_saved_kwh: float
    energy_before_kwh: float
    energy_after_kwh: float


@dataclass(frozen=True)
class Accuracy:
    """RMSE (nodes) and SMAPE (percent) over ``pairs`` forecast/actual pairs."""

    rmse: float
    smape: float
    pairs: int


@dataclass(frozen=True)
class HorizonAccuracy:
    """Accuracy at one horizon (steps) of the model, the seasonal-naive baseline and
    persistence."""

    horizon: int
    model: Accuracy
    baseline: Accuracy
    persistence: Accuracy


@dataclass(frozen=True)
class ReplayResult:
    """A finished replay; ``split_mode`` says how the windows were chosen. ``forecasts`` has
    one row per test step (``forecasts[j, h-1]`` predicts step ``split.valid_end + j + h``);
    ``hour_ahead[j]`` is the forecast of test step ``j`` issued one hour (or 2F steps, if
    shorter) before it; ``by_horizon`` has one entry per horizon ``1 … 2F``; ``outcome`` is the
    rule's run on the forecasts and ``summary`` its measures; ``references`` maps ``perfect``,
    ``persistence`` and ``seasonal_naive`` to the rule's measures with those forecasts
    instead."""

    series: BusySeries
    config: ReplayConfig
    split: Split
    split_mode: SplitMode
    forecaster: Forecaster
    forecasts: np.ndarray
    hour_ahead: np.ndarray
    outcome: RuleOutcome
    summary: RuleSummary
    accuracy: Accuracy
    baseline_accuracy: Accuracy
    persistence_accuracy: Accuracy
    by_horizon: tuple[HorizonAccuracy, ...]
    references: dict[str, RuleSummary]

    @property
    def test_steps(self) -> np.ndarray:
        """The evaluated steps (indices into the series)."""
        return np.arange(self.split.valid_end, self.split.test_end)


def replay(series: BusySeries, config: ReplayConfig, flags: Flags | None = None) -> ReplayResult:
    """Run the offline CES service on ``series`` (module docstring). Deterministic for a given
    series and config. Raises ValueError for an impossible split."""
    split, split_mode = config.split.resolve(series)
    params = config.params
    max_h = params.max_horizon
    forecaster = train_forecaster(
        series.busy, series.filled, series.start_s, split, max_h, config.forecast, flags
    )
    steps = np.arange(split.valid_end, split.test_end)
    forecasts = forecaster.predict(steps, max_h)
    busy, total = series.busy[steps], series.total[steps]
    outcome = apply_rule(busy, total, forecasts, params)
    summary = summarize(busy, total, outcome, config.power)
    baseline = seasonal_naive(series.busy, steps, max_h)
    last = persistence(series.busy, steps, max_h)
    actual, valid = _actuals(series, steps, max_h, split.test_end)
    by_horizon = tuple(
        HorizonAccuracy(
            h,
            _accuracy(forecasts[:, h - 1], actual[:, h - 1], valid[:, h - 1]),
            _accuracy(baseline[:, h - 1], actual[:, h - 1], valid[:, h - 1]),
            _accuracy(last[:, h - 1], actual[:, h - 1], valid[:, h - 1]),
        )
        for h in range(1, max_h + 1)
    )
    lead = min(HOUR_AHEAD_STEPS, max_h)
    hour_ahead = forecaster.predict(np.maximum(steps - lead, 0), lead)[:, lead - 1]
    hour_ahead[steps < lead] = np.nan
    perfect_idx = np.minimum(steps[:, None] + np.arange(1, max_h + 1), len(series) - 1)
    references = {
        "perfect": series.busy[perfect_idx].astype(float),
        "persistence": last,
        # Before the series' first day the baseline has no value; persistence stands in.
        "seasonal_naive": np.where(np.isnan(baseline), last, baseline),
    }
    return ReplayResult(
        series=series,
        config=config,
        split=split,
        split_mode=split_mode,
        forecaster=forecaster,
        forecasts=forecasts,
        hour_ahead=hour_ahead,
        outcome=outcome,
        summary=summary,
        accuracy=_accuracy(forecasts, actual, valid),
        baseline_accuracy=_accuracy(baseline, actual, valid),
        persistence_accuracy=_accuracy(last, actual, valid),
        by_horizon=by_horizon,
        references={
            name: summarize(busy, total, apply_rule(busy, total, fc, params), config.power)
            for name, fc in references.items()
        },
    )


def summarize(
    busy: np.ndarray, total: np.ndarray, outcome: RuleOutcome, power: PowerModel
) -> RuleSummary:
    """The measures (module docstring) of ``outcome`` over ``busy``/``total``."""
    on = outcome.powered_on.astype(float)
    busy_f, total_f = busy.astype(float), total.astype(float)
    days = len(busy) / STEPS_PER_DAY
    after = np.divide(busy_f, on, out=np.full_like(on, np.nan), where=on > 0)
    off = total_f - on
    kwh = STEP_HOURS / 1000
    before_kwh = float(np.sum(busy_f * power.busy_w + (total_f - busy_f) * power.idle_w)) * kwh
    after_kwh = float(np.sum(busy_f * power.busy_w + (on - busy_f) * power.idle_w)) * kwh
    return RuleSummary(
        mean_powered_off_nodes=float(off.mean()),
        utilization_before=float(np.mean(busy_f / total_f)),
        utilization_after=float(np.nanmean(after)) if np.any(on > 0) else float("nan"),
        shortfall_steps=outcome.shortfall_steps,
        shortfall_node_steps=outcome.shortfall_node_steps,
        wakeups_per_day=outcome.count("wake") / days,
        shrinks_per_day=outcome.count("shrink") / days,
        powered_off_node_hours=float(off.sum()) * STEP_HOURS,
        energy_saved_kwh=float(off.sum()) * power.idle_w * kwh,
        energy_before_kwh=before_kwh,
        energy_after_kwh=after_kwh,
    )


def reported_horizons(params: RuleParams) -> tuple[int, ...]:
    """Horizons (steps) of the per-horizon accuracy table: 10 min, 1 h, 3 h, F and 2F."""
    fixed = {round(h * 3600 / STEP_S) for h in REPORTED_HORIZONS_H}
    return tuple(
        sorted(h for h in fixed | {params.future, params.max_horizon} if h <= params.max_horizon)
    )


def _actuals(
    series: BusySeries, steps: np.ndarray, max_h: int, end: int
) -> tuple[np.ndarray, np.ndarray]:
    """The true value of every forecast target and whether it counts in the accuracy: inside
    the test window and not forward-filled."""
    target = steps[:, None] + np.arange(1, max_h + 1)
    inside = target < end
    clipped = np.minimum(target, len(series) - 1)
    return series.busy[clipped].astype(float), inside & ~series.filled[clipped]


def _accuracy(predicted: np.ndarray, actual: np.ndarray, valid: np.ndarray) -> Accuracy:
    keep = valid & ~np.isnan(predicted)
    return Accuracy(
        rmse(predicted[keep], actual[keep]), smape(predicted[keep], actual[keep]), int(keep.sum())
    )
