"""Reading busy-node series: validation errors name file:line, gaps are repaired only on
request and reported, resampling takes 10-minute maxima."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dlsched.energy.series import (
    SeriesError,
    bundled_series_path,
    load_series,
    write_series_csv,
)
from tests.energy.helpers import SHARED_PHILLY, minute_rows, series_csv


def test_resamples_to_ten_minute_maxima(tmp_path: Path) -> None:
    busy = [3, 7, 2, 1, 1, 1, 1, 1, 1, 1] + [4] * 10 + [0, 9]
    path = series_csv(tmp_path / "s.csv", minute_rows("2017-10-03 00:00:00", busy))
    series = load_series(path)
    assert list(series.busy) == [7, 4, 9]
    assert list(series.total) == [10, 10, 10]
    assert series.label(0) == "2017-10-03 00:00:00" and series.label(2) == "2017-10-03 00:20:00"
    assert series.interval_s == 60 and series.samples == len(busy)
    assert not series.filled.any() and series.gaps == ()


def test_steps_align_to_the_clock(tmp_path: Path) -> None:
    path = series_csv(tmp_path / "s.csv", minute_rows("2017-10-03 00:07:00", [1, 2, 3, 4]))
    series = load_series(path)
    assert series.label(0) == "2017-10-03 00:00:00"
    assert list(series.busy) == [3, 4]  # 00:07-00:09 then 00:10


@pytest.mark.parametrize(
    ("rows", "line", "problem"),
    [
        ([("2017-10-03 00:00:00", "1", "10"), ("2017-10-03 00:01", "1", "10")], 3, "time: not a"),
        ([("2017-10-03 00:00:00", "x", "10")], 2, "active: not a number: 'x'"),
        ([("2017-10-03 00:00:00", "1.5", "10")], 2, "active: not a whole number"),
        ([("2017-10-03 00:00:00", "-1", "10")], 2, "active: negative (-1)"),
        ([("2017-10-03 00:00:00", "4", "-2")], 2, "total: negative"),
        ([("2017-10-03 00:00:00", "0", "0")], 2, "total: must be positive"),
        ([("2017-10-03 00:00:00", "11", "10")], 2, "active (11) exceeds total (10)"),
        ([("2017-10-03 00:00:00", "nan", "10")], 2, "active: not a whole number"),
        (
            [("2017-10-03 00:00:00", "1", "10"), ("2017-10-03 00:00:00", "1", "10")],
            3,
            "duplicate time 2017-10-03 00:00:00 (also on line 2)",
        ),
        (
            [("2017-10-03 00:05:00", "1", "10"), ("2017-10-03 00:04:00", "1", "10")],
            3,
            "time goes backwards: 2017-10-03 00:04:00 comes after 2017-10-03 00:05:00 (line 2)",
        ),
    ],
)
def test_bad_rows_name_file_line_and_problem(
    tmp_path: Path, rows: list[tuple[str, str, str]], line: int, problem: str
) -> None:
    path = series_csv(tmp_path / "bad.csv", rows)
    with pytest.raises(SeriesError) as err:
        load_series(path)
    assert f"{path}:{line}: " in str(err.value)
    assert problem in str(err.value)


def test_short_rows_missing_columns_and_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "short.csv"
    path.write_text("time,active,total\n2017-10-03 00:00:00,3\n")
    with pytest.raises(SeriesError, match=rf"{path}:2: expected at least 3 fields"):
        load_series(path)
    path.write_text("time,busy,total\n2017-10-03 00:00:00,3,4\n")
    with pytest.raises(SeriesError, match=rf"{path}:1: missing column\(s\) active"):
        load_series(path)
    path.write_text("")
    with pytest.raises(SeriesError, match="empty file"):
        load_series(path)
    path.write_text("time,active,total\n")
    with pytest.raises(SeriesError, match="no data rows"):
        load_series(path)


def test_every_bad_row_is_listed_up_to_a_limit(tmp_path: Path) -> None:
    rows = [("2017-10-03 00:00:00", "-1", "10")] + [
        (f"2017-10-03 00:{m:02d}:00", "x", "10") for m in range(1, 30)
    ]
    with pytest.raises(SeriesError) as err:
        load_series(series_csv(tmp_path / "bad.csv", rows))
    assert len(err.value.problems) == 20 and err.value.more == 10
    assert "... and 10 more problems" in str(err.value)


def gap_file(tmp_path: Path) -> Path:
    before = minute_rows("2017-10-03 00:00:00", [5] * 12)  # 00:00 … 00:11
    after = minute_rows("2017-10-03 00:45:00", [8] * 10)  # 00:45 … 00:54
    return series_csv(tmp_path / "gap.csv", before + after)


def test_a_gap_is_an_error_naming_the_line_after_it(tmp_path: Path) -> None:
    path = gap_file(tmp_path)
    with pytest.raises(SeriesError) as err:
        load_series(path)
    text = str(err.value)
    assert (
        f"{path}:14: gap: 34 min between consecutive samples at 2017-10-03 00:11:00 and "
        "2017-10-03 00:45:00 (samples are every 60 s)"
    ) in text
    assert "--fill-gaps" in text


def test_fill_gaps_forward_fills_and_reports(tmp_path: Path) -> None:
    series = load_series(gap_file(tmp_path), fill_gaps=True)
    # Steps 00:00 (5), 00:10 (5, one sample), 00:20 and 00:30 empty, 00:40 (8), 00:50 (8).
    assert list(series.busy) == [5, 5, 5, 5, 8, 8]
    assert list(series.filled) == [False, False, True, True, False, False]
    (gap,) = series.gaps
    assert (gap.before, gap.after, gap.missing_s) == (
        "2017-10-03 00:11:00",
        "2017-10-03 00:45:00",
        34 * 60.0,
    )
    ranges = series.filled_ranges()
    assert [(r.first, r.last, r.steps) for r in ranges] == [
        ("2017-10-03 00:20:00", "2017-10-03 00:30:00", 2)
    ]


def test_series_with_a_sampling_interval_above_a_step_are_refused(tmp_path: Path) -> None:
    path = series_csv(
        tmp_path / "hourly.csv", minute_rows("2017-10-03 00:00:00", [1] * 5, every_s=3600)
    )
    with pytest.raises(SeriesError, match="3600 s apart, longer than the 600-s step"):
        load_series(path)


def test_written_series_round_trip_and_keep_their_gaps(tmp_path: Path) -> None:
    series = load_series(gap_file(tmp_path), fill_gaps=True)
    out = tmp_path / "out.csv"
    write_series_csv(series, out)
    with pytest.raises(SeriesError, match="gap"):
        load_series(out)
    again = load_series(out, fill_gaps=True)
    assert np.array_equal(again.busy, series.busy) and np.array_equal(again.filled, series.filled)


def test_bundled_philly_series() -> None:
    path = bundled_series_path("philly")
    with pytest.raises(SeriesError, match=r"2017-10-25 14:00:00 and 2017-10-26 00:00:00"):
        load_series(path)
    series = load_series(path, fill_gaps=True)
    assert len(series) == 10_625 and series.label(0) == "2017-10-03 00:00:00"
    assert int(series.filled.sum()) == 59
    assert set(series.total[-2000:].tolist()) == {420}
    with pytest.raises(ValueError, match="bundled: philly"):
        bundled_series_path("venus")


@pytest.mark.skipif(not SHARED_PHILLY.is_file(), reason="the shared Philly series is absent")
def test_bundled_series_equals_the_resampled_source() -> None:
    source = load_series(SHARED_PHILLY, fill_gaps=True)
    bundled = load_series(bundled_series_path("philly"), fill_gaps=True)
    assert source.samples == 105_644 and source.interval_s == 60
    assert source.start_s == bundled.start_s
    for field in ("busy", "total", "filled"):
        assert np.array_equal(getattr(source, field), getattr(bundled, field))
    assert [g.before for g in source.gaps] == [g.before for g in bundled.gaps]
