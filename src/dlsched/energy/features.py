"""Features of the CES forecaster (seeds.md 1.4), built for direct multi-step forecasts.

A row describes one forecast: issued at step ``i`` (everything up to and including step ``i``
is known) for the target step ``t = i + h``, ``h ≥ 1``. Its features:

- calendar of the target step: month, day, hour, minute, weekday (Monday = 0), day of year,
  ISO week; optionally holiday and deadline flags of its date (:class:`Flags`);
- mean, median and standard deviation of the busy nodes over 30 minutes and over 1 hour,
  ending ``max(1 h, h)`` before the target: the seeds' "shifted by 1 h" when ``h`` ≤ 1 h, and
  ending at the issue step for longer horizons;
- the value ``max(3 h, h)`` before the target, and a smoothed one (½ the value plus ¼ each of
  its two neighbours) centred ``max(3 h, h + 1)`` before it;
- the horizon ``h`` and the last observed value ``busy[i]`` (the *anchor*).

Every lagged feature reads only steps ``≤ i`` (the test suite checks this by perturbing the
future). Levels (means, medians, the values 3 h ago) are given relative to the anchor, and the
forecaster predicts the change ``busy[t] − busy[i]``: trees cannot extrapolate, and busy
nodes drift between months to levels the training window never saw.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import numpy as np

from dlsched.energy.series import STEP_S, SeriesError

HOUR_STEPS = 3600 // STEP_S
WINDOWS = (("30min", 30 * 60 // STEP_S), ("1h", HOUR_STEPS))
SHIFT_STEPS = HOUR_STEPS
AGO_STEPS = 3 * HOUR_STEPS
CALENDAR = ("month", "day", "hour", "minute", "weekday", "day_of_year", "week")
FLAG_NAMES = ("holiday", "deadline")
LAGGED = (
    *(f"{stat}_{name}" for name, _ in WINDOWS for stat in ("mean", "median", "std")),
    "value_3h_ago",
    "smoothed_3h_ago",
)
TAIL = ("horizon", "last_observed")


class FlagsError(SeriesError):
    """A flags file is unreadable or invalid (``file:line: problem``)."""


@dataclass(frozen=True)
class Flags:
    """Holiday and deadline flags by date (days since 1970-01-01); dates not listed are 0.
    ``source`` is the file they came from."""

    source: str
    by_day: dict[int, tuple[int, int]] = field(default_factory=dict)

    def lookup(self, times_s: np.ndarray) -> np.ndarray:
        """``(len(times_s), 2)`` holiday and deadline flags of each time's date."""
        days = np.floor_divide(np.asarray(times_s, dtype=np.int64), 86_400)
        unique, inverse = np.unique(days, return_inverse=True)
        table = np.array([self.by_day.get(int(d), (0, 0)) for d in unique], dtype=float)
        out: np.ndarray = table.reshape(-1, 2)[inverse.reshape(-1)]
        return out


def feature_names(with_flags: bool) -> tuple[str, ...]:
    """Column names of :func:`design` in order."""
    return (*CALENDAR, *(FLAG_NAMES if with_flags else ()), *LAGGED, *TAIL)


def load_flags(path: str | Path) -> Flags:
    """Read a flags CSV with columns ``date, holiday, deadline`` (``YYYY-MM-DD``, then 0 or 1).
    Raises :class:`FlagsError` naming ``file:line`` for a missing column, a bad date or flag,
    or a date listed twice."""
    text = str(path)
    by_day: dict[int, tuple[int, int]] = {}
    lines: dict[int, int] = {}
    problems: list[str] = []
    with Path(path).open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = [h.strip() for h in next(reader, [])]
        missing = [c for c in ("date", *FLAG_NAMES) if c not in header]
        if missing:
            raise FlagsError([f"{text}:1: missing column(s) {', '.join(missing)}"])
        cols = [header.index(c) for c in ("date", *FLAG_NAMES)]
        for line, row in enumerate(reader, start=2):
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) <= max(cols):
                problems.append(f"{text}:{line}: expected {max(cols) + 1} fields")
                continue
            try:
                day = (date.fromisoformat(row[cols[0]].strip()) - date(1970, 1, 1)).days
            except ValueError:
                problems.append(f"{text}:{line}: date: not a date YYYY-MM-DD: {row[cols[0]]!r}")
                continue
            values = [row[c].strip() for c in cols[1:]]
            bad = [n for n, v in zip(FLAG_NAMES, values, strict=True) if v not in ("0", "1")]
            if bad:
                problems.append(f"{text}:{line}: {', '.join(bad)}: expected 0 or 1")
                continue
            if day in by_day:
                problems.append(
                    f"{text}:{line}: date {row[cols[0]].strip()} already on line {lines[day]}"
                )
                continue
            by_day[day] = (int(values[0]), int(values[1]))
            lines[day] = line
    if problems:
        raise FlagsError(problems[:20], max(0, len(problems) - 20))
    return Flags(text, by_day)


def calendar_features(times_s: np.ndarray) -> np.ndarray:
    """``(n, 7)`` calendar features (:data:`CALENDAR`) of Unix times read as naive UTC."""
    seconds = np.asarray(times_s, dtype=np.int64)
    days = np.floor_divide(seconds, 86_400)
    as_days = days.astype("datetime64[D]")
    months = as_days.astype("datetime64[M]")
    years = as_days.astype("datetime64[Y]")
    month = (months - years.astype("datetime64[M]")).astype(np.int64) + 1
    day = (as_days - months.astype("datetime64[D]")).astype(np.int64) + 1
    second_of_day = seconds - days * 86_400
    day_of_year = (as_days - years.astype("datetime64[D]")).astype(np.int64) + 1
    # 1970-01-01 was a Thursday (weekday 3 with Monday = 0).
    weekday = (days + 3) % 7
    unique_days, inverse = np.unique(days, return_inverse=True)
    iso_weeks = np.array(
        [date.fromordinal(int(d) + 719_163).isocalendar()[1] for d in unique_days],
        dtype=np.int64,
    )
    return np.column_stack(
        [
            month,
            day,
            second_of_day // 3600,
            (second_of_day % 3600) // 60,
            weekday,
            day_of_year,
            iso_weeks[inverse],
        ]
    ).astype(float)


def design(
    values: np.ndarray,
    issue: np.ndarray,
    horizon: np.ndarray,
    start_s: int,
    flags: Flags | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows (module docstring) for forecasts issued at steps ``issue`` for steps
    ``issue + horizon``, and the anchors ``values[issue]``.

    ``values`` is the busy-node series from step 0 at ``start_s``; ``issue`` must index it and
    ``horizon`` must be ≥ 1 (targets may lie past its end). Steps before 0 read as NaN, which
    LightGBM treats as missing. Only ``values[k]`` with ``k ≤ issue`` is ever read.
    """
    issue = np.asarray(issue, dtype=np.int64)
    horizon = np.asarray(horizon, dtype=np.int64)
    if issue.shape != horizon.shape:
        raise ValueError("issue and horizon must have the same shape")
    if np.any(horizon < 1):
        raise ValueError("forecast horizons must be at least 1 step")
    if len(issue) and (issue.min() < 0 or issue.max() >= len(values)):
        raise ValueError("issue steps must index the series")
    target = issue + horizon
    anchor = values[issue].astype(float)
    cols: list[np.ndarray] = [calendar_features(start_s + STEP_S * target)]
    if flags is not None:
        cols.append(flags.lookup(start_s + STEP_S * target))
    window_end = target - np.maximum(SHIFT_STEPS, horizon)
    for _, width in WINDOWS:
        window = np.column_stack([_at(values, window_end - j) for j in range(width)])
        # A window reaching before step 0 is all or partly NaN; its statistics are NaN too.
        cols.append(
            np.column_stack(
                [
                    window.mean(axis=1) - anchor,
                    np.median(window, axis=1) - anchor,
                    window.std(axis=1),
                ]
            )
        )
    ago = _at(values, target - np.maximum(AGO_STEPS, horizon))
    centre = target - np.maximum(AGO_STEPS, horizon + 1)
    smooth = 0.5 * _at(values, centre) + 0.25 * (_at(values, centre - 1) + _at(values, centre + 1))
    cols.append(np.column_stack([ago - anchor, smooth - anchor, horizon, anchor]))
    return np.column_stack(cols), anchor


def _at(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    out = np.full(len(index), np.nan)
    ok = index >= 0
    out[ok] = values[index[ok]]
    return out
