"""Forecaster features and models: calendar values, no look-ahead, baselines, determinism."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from dlsched.energy.features import (
    FlagsError,
    calendar_features,
    design,
    feature_names,
    load_flags,
)
from dlsched.energy.forecast import (
    Split,
    persistence,
    seasonal_naive,
    smape,
    train_forecaster,
    training_horizons,
)
from dlsched.trace.walltime import parse_wall_time


def unix(text: str) -> int:
    return int(parse_wall_time(text))


def test_calendar_features() -> None:
    times = np.array(
        [unix("2017-12-31 23:50:00"), unix("2018-01-01 00:00:00"), unix("2016-01-01 10:20:00")]
    )
    got = calendar_features(times)
    # month, day, hour, minute, weekday (Monday 0), day of year, ISO week
    assert got.tolist() == [
        [12, 31, 23, 50, 6, 365, 52],
        [1, 1, 0, 0, 0, 1, 1],
        [1, 1, 10, 20, 4, 1, 53],
    ]


def synthetic(days: int = 12, seed: int = 1) -> np.ndarray:
    """Busy nodes with a daily wave, a slow drift and noise (144 steps a day)."""
    rng = np.random.default_rng(seed)
    t = np.arange(days * 144)
    wave = 60 + 25 * np.sin(2 * np.pi * t / 144) + 10 * np.sin(2 * np.pi * t / (144 * 5))
    out: np.ndarray = np.clip(np.round(wave + rng.normal(0, 3, len(t))), 0, 100)
    return out


START = unix("2017-10-02 00:00:00")


def test_features_never_read_past_the_issue_step() -> None:
    values = synthetic(days=3)
    rng = np.random.default_rng(7)
    for issue in (0, 5, 17, 18, 30, 200, 400):
        hs = np.arange(1, 61)
        rows = np.full(len(hs), issue)
        x, anchor = design(values, rows, hs, START)
        future = values.copy()
        future[issue + 1 :] = rng.integers(0, 1000, len(future) - issue - 1)
        x2, anchor2 = design(future, rows, hs, START)
        np.testing.assert_array_equal(x, x2)  # NaN equals NaN here
        np.testing.assert_array_equal(anchor, anchor2)
        # ... while the past does matter (the anchor is the issue step's value).
        past = values.copy()
        past[issue] += 50
        assert not np.array_equal(design(past, rows, hs, START)[0], x)


def test_feature_columns() -> None:
    values = synthetic(days=2)
    x, anchor = design(values, np.array([100, 100]), np.array([1, 30]), START)
    names = feature_names(with_flags=False)
    assert x.shape == (2, len(names))
    col = {n: i for i, n in enumerate(names)}
    assert x[:, col["horizon"]].tolist() == [1, 30]
    assert x[:, col["last_observed"]].tolist() == [values[100]] * 2 == anchor.tolist()
    # h = 1: the 1-hour window ends 1 h before the target (seeds.md); h = 30: at the issue step.
    assert x[0, col["mean_1h"]] == pytest.approx(values[90:96].mean() - values[100])
    assert x[1, col["mean_1h"]] == pytest.approx(values[95:101].mean() - values[100])
    assert x[0, col["value_3h_ago"]] == values[101 - 18] - values[100]
    assert x[1, col["value_3h_ago"]] == values[100] - values[100]
    smooth = 0.5 * values[83] + 0.25 * (values[82] + values[84])
    assert x[0, col["smoothed_3h_ago"]] == pytest.approx(smooth - values[100])
    with pytest.raises(ValueError, match="at least 1"):
        design(values, np.array([3]), np.array([0]), START)


def test_flags(tmp_path: Path) -> None:
    path = tmp_path / "flags.csv"
    path.write_text("date,holiday,deadline\n2017-12-25,1,0\n2017-12-01,0,1\n")
    flags = load_flags(path)
    got = flags.lookup(
        np.array(
            [unix("2017-12-25 13:00:00"), unix("2017-12-01 00:00:00"), unix("2017-12-02 00:00:00")]
        )
    )
    assert got.tolist() == [[1, 0], [0, 1], [0, 0]]
    x, _ = design(synthetic(2), np.array([10]), np.array([1]), START, flags)
    assert x.shape[1] == len(feature_names(with_flags=True))
    path.write_text("date,holiday,deadline\n2017-12-25,1,0\n2017-13-01,0,1\n2017-12-25,0,0\n")
    with pytest.raises(FlagsError) as err:
        load_flags(path)
    assert f"{path}:3: date: not a date" in str(err.value)
    assert f"{path}:4: date 2017-12-25 already on line 2" in str(err.value)
    path.write_text("date,holiday\n")
    with pytest.raises(FlagsError, match=rf"{path}:1: missing column\(s\) deadline"):
        load_flags(path)
    path.write_text("date,holiday,deadline\n2017-12-25,yes,0\n")
    with pytest.raises(FlagsError, match=rf"{path}:2: holiday: expected 0 or 1"):
        load_flags(path)


def test_training_horizons() -> None:
    assert training_horizons(60) == (1, 2, 3, 4, 5, 6, 9, 12, 15, 18, 24, 30, 36, 42, 48, 54, 60)
    assert training_horizons(36) == (1, 2, 3, 4, 5, 6, 9, 12, 15, 18, 24, 30, 36)
    assert training_horizons(4) == (1, 2, 3, 4)
    assert training_horizons(40)[-1] == 40


def test_baselines() -> None:
    values = np.arange(400, dtype=float)
    naive = seasonal_naive(values, np.array([200, 300]), 150)
    assert naive[0, 0] == 201 - 144 and naive[1, 143] == 300 + 144 - 144
    assert naive[1, 144] == 300 + 145 - 288  # beyond a day: two days back
    assert np.isnan(seasonal_naive(values, np.array([10]), 3)).all()
    assert persistence(values, np.array([7]), 3).tolist() == [[7, 7, 7]]


def test_smape() -> None:
    assert smape(np.array([0.0, 110.0]), np.array([0.0, 90.0])) == pytest.approx(10.0)
    assert smape(np.array([1.0]), np.array([0.0])) == pytest.approx(200.0)


def test_forecaster_is_deterministic_and_blind_to_the_future() -> None:
    values = synthetic(days=12)
    filled = np.zeros(len(values), dtype=bool)
    split = Split(6 * 144, 9 * 144, 12 * 144)
    model = train_forecaster(values, filled, START, split, 12)
    again = train_forecaster(values, filled, START, split, 12)
    issue = np.arange(split.valid_end, split.valid_end + 50)
    first = model.predict(issue, 12)
    assert first.shape == (50, 12)
    np.testing.assert_array_equal(first, again.predict(issue, 12))
    assert model.best_iteration >= 1 and model.horizons == training_horizons(12)
    # Changing the series after the last issue step changes no forecast.
    changed = values.copy()
    changed[issue[-1] + 1 :] = 0
    blind = dataclasses.replace(model, values=changed).predict(issue, 12)
    np.testing.assert_array_equal(first, blind)
    # The daily wave is learnable: 2 h ahead, the model beats persistence on the test days.
    steps = np.arange(split.valid_end, split.test_end - 12)
    actual = values[steps + 12]
    assert smape(model.predict(steps, 12)[:, 11], actual) < smape(values[steps], actual)


def test_filled_steps_are_not_trained_on() -> None:
    values = synthetic(days=6)
    filled = np.zeros(len(values), dtype=bool)
    filled[: 2 * 144] = True
    split = Split(2 * 144, 4 * 144, 6 * 144)
    with pytest.raises(ValueError, match="usable step"):
        train_forecaster(values, filled, START, split, 6)
