"""The CES replay on the Philly busy-node series against the bars of the brief, and on the
Helios artifact's own window (December 1-14) against the published re-run."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.energy import (
    ReplayConfig,
    ReplayResult,
    SplitSpec,
    bundled_series_path,
    get_preset,
    load_series,
    replay,
)
from dlsched.energy.report import report_stats
from tests.energy.helpers import SHARED_PHILLY


def assert_bars(result: ReplayResult) -> None:
    s = result.summary
    assert set(result.series.total[result.test_steps].tolist()) == {420}
    assert s.mean_powered_off_nodes >= 90
    assert s.utilization_before == pytest.approx(0.69, abs=0.01)
    assert s.utilization_after >= 0.85
    assert s.shortfall_steps <= 10
    assert result.accuracy.smape <= 8.0
    # The model's forecasts are better than the seasonal-naive baseline's.
    assert result.accuracy.rmse < result.baseline_accuracy.rmse


@pytest.fixture(scope="module")
def december() -> ReplayResult:
    """The artifact's windows: train October, validate November, test December 1-14."""
    series = load_series(bundled_series_path("philly"), fill_gaps=True)
    split = SplitSpec(
        "dates", valid_start="2017-11-01", test_start="2017-12-01", test_end="2017-12-15"
    )
    return replay(series, ReplayConfig(get_preset("philly"), "philly", split))


def test_default_split_on_the_shared_source_meets_the_bars() -> None:
    path = SHARED_PHILLY if SHARED_PHILLY.is_file() else bundled_series_path("philly")
    result = replay(load_series(path, fill_gaps=True), ReplayConfig(get_preset("philly"), "philly"))
    assert_bars(result)
    # seeds.md's months: train October (from the 3rd), validate November, test December.
    assert result.split_mode == "months"
    labels = [result.series.label(k) for k in (result.split.train_end, result.split.valid_end)]
    assert labels == ["2017-11-01 00:00:00", "2017-12-01 00:00:00"]
    assert result.split.test_end == len(result.series)


def test_a_split_by_fractions() -> None:
    series = load_series(bundled_series_path("philly"), fill_gaps=True)
    config = ReplayConfig(get_preset("philly"), "philly", SplitSpec("fractions"))
    result = replay(series, config)
    assert result.split_mode == "fractions"
    assert (result.split.train_end, result.split.valid_end) == (6375, 8500)
    # Validating on Nov 16-30 stops training after 1-3 rounds; which trees the bagging
    # draws then moves the powered-off mean between 89.3 and 92.2 nodes over seeds 0-4
    # (92.2 with seed 0). Utilization and shortfalls hold for every seed.
    assert result.summary.mean_powered_off_nodes >= 85
    assert result.summary.utilization_after >= 0.85
    assert result.summary.shortfall_steps <= 10


def test_the_artifact_window_meets_the_bars(december: ReplayResult) -> None:
    assert_bars(december)
    assert december.series.label(int(december.test_steps[0])) == "2017-12-01 00:00:00"
    assert len(december.test_steps) == 14 * 144
    # Utilization before CES over December 1-14 is the published 68.98 %.
    assert december.summary.utilization_before == pytest.approx(0.6898, abs=5e-5)


def test_references_bracket_the_forecaster(december: ReplayResult) -> None:
    refs = december.references
    # Persistence (no change forecast) shrinks at every falling step: more nodes off, many
    # more shortfalls; a perfect forecast powers more off than the model.
    assert refs["persistence"].shortfall_steps > 2 * december.summary.shortfall_steps
    assert refs["perfect"].mean_powered_off_nodes > december.summary.mean_powered_off_nodes


def test_measures_are_consistent(december: ReplayResult) -> None:
    s, steps = december.summary, december.test_steps
    on = december.outcome.powered_on
    busy, total = december.series.busy[steps], december.series.total[steps]
    assert s.mean_powered_off_nodes == pytest.approx(float(np.mean(total - on)))
    assert s.utilization_after == pytest.approx(float(np.mean(busy / on)))
    off_hours = float(np.sum(total - on)) / 6
    assert s.energy_saved_kwh == pytest.approx(off_hours * 1750 / 1000)
    assert s.energy_before_kwh - s.energy_after_kwh == pytest.approx(s.energy_saved_kwh)
    days = len(steps) / 144
    assert s.wakeups_per_day == pytest.approx(december.outcome.count("wake") / days)
    # One accuracy entry per horizon 1 … 2F; the overall figure covers all of them.
    assert [h.horizon for h in december.by_horizon] == list(range(1, 61))
    assert december.accuracy.pairs == sum(h.model.pairs for h in december.by_horizon)


def test_stats_document(december: ReplayResult) -> None:
    stats = report_stats(december)
    for key in (
        "mean_powered_off_nodes",
        "utilization_before",
        "utilization_after",
        "shortfall_steps",
        "shortfall_node_steps",
        "wakeups_per_day",
        "forecast_rmse",
        "forecast_smape",
        "energy_saved_kwh",
        "baseline_forecast_rmse",
        "baseline_forecast_smape",
        "parameters",
        "window",
    ):
        assert key in stats, key
    assert stats["parameters"] == get_preset("philly").to_dict()
    assert stats["window"]["evaluated"] == "test"
    assert stats["window"]["first_step"] == "2017-12-01 00:00:00"
    assert stats["window"]["last_step"] == "2017-12-14 23:50:00"
    assert stats["input"]["filled_steps"] == 59
    assert stats["input"]["filled"][0]["first"] == "2017-10-25 14:10:00"
    assert stats["published_reference"]["mean_powered_off_nodes"] == 94.6
    assert stats["energy"]["idle_power_w"] == 1750.0
