"""A busy-nodes time series: read, validate and resample to 10-minute maxima.

**Input.** A CSV with columns ``time, active, total`` (others are ignored): a wall-clock time
``YYYY-MM-DD HH:MM:SS`` (read as naive UTC, like every dlsched trace time), the busy nodes and
the cluster's nodes, both whole numbers with ``0 ≤ active ≤ total`` and ``total > 0``. Times
must strictly increase. The HeliosArtifact's ``philly_node_sequence.csv`` (one row a minute)
is this format; so is the 10-minute copy bundled with dlsched (:func:`bundled_series_path`).

**Gaps.** The sampling interval is the most common difference between consecutive times; a
difference above 1.5 intervals is a gap (samples are missing). A gap is an error unless
``fill_gaps`` is set; then each 10-minute step without any sample takes the values of the step
before it (forward fill), and the series records which steps were filled (:attr:`filled`) and
which gaps caused them (:attr:`gaps`). Nothing is ever filled silently.

**Resampling.** Step ``k`` covers ``[k·600 s, (k+1)·600 s)`` on the Unix clock (steps start
at :00, :10, ...); its busy and total nodes are the maxima over the samples in it, so a job
that held a node for any part of the step counts (144 steps a day).

**From a simulator run.** :func:`series_from_run` derives the series from a run directory's
``timeline.parquet`` (see that function for the approximation it makes).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path

import numpy as np

from dlsched.trace.walltime import WALL_TIME_FORM, parse_wall_time

STEP_S = 600
"""Length of one step: 10 minutes."""
STEPS_PER_DAY = 86_400 // STEP_S
GAP_FACTOR = 1.5
"""A difference between consecutive samples above this many sampling intervals is a gap."""
MAX_PROBLEMS = 20
"""Problems listed in one error; the rest are counted."""
COLUMNS = ("time", "active", "total")
BUNDLED = {"philly": "philly_node_sequence_10min.csv"}
_EPOCH = datetime(1970, 1, 1)


class SeriesError(ValueError):
    """A series file is unreadable or invalid. ``problems`` lists ``file:line: problem``
    strings (``file: row N: ...`` for Parquet input); ``more`` counts problems not listed."""

    def __init__(self, problems: Sequence[str], more: int = 0, hint: str = "") -> None:
        self.problems = tuple(problems)
        self.more = more
        self.hint = hint
        lines = list(self.problems)
        if more:
            lines.append(f"... and {more} more problems")
        if hint:
            lines.append(hint)
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Gap:
    """Samples missing between consecutive samples at ``before`` and ``after`` (wall-clock
    texts), ``missing_s`` apart; ``where`` locates the sample after the gap (``file:line``)."""

    where: str
    before: str
    after: str
    missing_s: float


@dataclass(frozen=True)
class FilledRange:
    """Consecutive 10-minute steps ``first``…``last`` (wall-clock starts) that had no sample
    and were forward-filled."""

    first: str
    last: str
    steps: int


@dataclass(frozen=True)
class BusySeries:
    """Busy and total nodes per 10-minute step from ``start_s`` (Unix seconds, a multiple of
    600). ``filled[k]`` marks a step forward-filled over a gap. ``interval_s`` is the input's
    sampling interval and ``samples`` its number of data rows; ``origin_known`` is False when
    the times are relative (a run without ``origin``), counted from 1970-01-01."""

    source: str
    start_s: int
    busy: np.ndarray
    total: np.ndarray
    filled: np.ndarray
    gaps: tuple[Gap, ...]
    interval_s: float
    samples: int
    origin_known: bool = True

    def __len__(self) -> int:
        return len(self.busy)

    @property
    def times_s(self) -> np.ndarray:
        """Start of every step, Unix seconds."""
        return self.start_s + STEP_S * np.arange(len(self.busy), dtype=np.int64)

    def label(self, step: int) -> str:
        """The start of ``step``: ``YYYY-MM-DD HH:MM:SS``, or ``day D HH:MM:SS`` (days since
        time 0) when the times are relative."""
        return time_label(self.start_s + STEP_S * step, self.origin_known)

    def filled_ranges(self) -> list[FilledRange]:
        """The forward-filled steps, as runs of consecutive steps."""
        out: list[FilledRange] = []
        steps = np.flatnonzero(self.filled)
        if len(steps) == 0:
            return out
        breaks = np.flatnonzero(np.diff(steps) > 1)
        starts = np.concatenate([[0], breaks + 1])
        ends = np.concatenate([breaks, [len(steps) - 1]])
        for s, e in zip(starts, ends, strict=True):
            first, last = int(steps[s]), int(steps[e])
            out.append(FilledRange(self.label(first), self.label(last), last - first + 1))
        return out


def wall_time(unix_s: float) -> str:
    """``YYYY-MM-DD HH:MM:SS`` of Unix seconds, as naive UTC (the inverse of the trace
    readers' ``parse_wall_time``)."""
    return (_EPOCH + timedelta(seconds=float(unix_s))).strftime("%Y-%m-%d %H:%M:%S")


def time_label(unix_s: float, wall_clock: bool) -> str:
    """:func:`wall_time`, or ``day D HH:MM:SS`` counted from time 0 when not ``wall_clock``."""
    if wall_clock:
        return wall_time(unix_s)
    day, rest = divmod(float(unix_s), 86_400.0)
    return f"day {int(day)} {wall_time(rest)[11:]}"


def bundled_series_path(name: str) -> Path:
    """The bundled series ``name`` (``philly``: the Philly busy-node series at 10-minute
    maxima, see ``data/energy/README.md``). ValueError for an unknown name."""
    try:
        filename = BUNDLED[name]
    except KeyError:
        raise ValueError(
            f"no bundled busy-node series {name!r}; bundled: {', '.join(BUNDLED)}"
        ) from None
    directory = resources.files("dlsched") / "data" / "energy"
    if not isinstance(directory, Path):
        raise RuntimeError(f"dlsched's bundled data is not on the file system: {directory}")
    return directory / filename


def load_series(path: str | Path, *, fill_gaps: bool = False) -> BusySeries:
    """Read and validate the CSV at ``path`` and resample it (module docstring).

    Raises :class:`SeriesError` naming ``file:line`` and the problem for a missing column,
    an unparsable or out-of-range value, a duplicate or decreasing time, or (without
    ``fill_gaps``) a gap; FileNotFoundError when there is no such file.
    """
    path = Path(path)
    text = str(path)
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise SeriesError([f"{text}: empty file (expected a header {','.join(COLUMNS)})"])
        names = [h.strip() for h in header]
        missing = [c for c in COLUMNS if c not in names]
        if missing:
            raise SeriesError(
                [f"{text}:1: missing column(s) {', '.join(missing)} (header: {','.join(names)})"]
            )
        cols = [names.index(c) for c in COLUMNS]
        times, busy, total, lines = _parse_rows(text, reader, cols)
    return _resample(
        text, times, busy, total, [f"{text}:{n}" for n in lines], fill_gaps, wall_clock=True
    )


def series_from_run(
    run_dir: str | Path,
    *,
    gpus_per_node: int = 8,
    origin_s: float | None = None,
    fill_gaps: bool = False,
) -> BusySeries:
    """The busy-node series of a simulator run directory, from its ``timeline.parquet``.

    For each sampled time, busy nodes = Σ over partitions of ⌈busy_gpus / gpus_per_node⌉ and
    total nodes = Σ total_gpus / gpus_per_node. This is an approximation: the timeline counts
    GPUs per partition, not per node, so it assumes each partition's busy GPUs are packed onto
    as few nodes as possible (true under consolidated placement of whole-node jobs, a lower
    bound on busy nodes otherwise). ``origin_s`` is the Unix time of ``time_s = 0``; without
    it the steps are counted from 1970-01-01 and calendar features are only relative.

    Raises :class:`SeriesError` (``file: row N: problem``) for a missing file or column,
    negative or non-finite values, busy above total, a partition whose GPUs are not a
    multiple of ``gpus_per_node``, duplicate or missing (time, partition) samples, or a gap.
    """
    import pyarrow.parquet as pq

    if gpus_per_node < 1:
        raise ValueError(f"--gpus-per-node must be at least 1, got {gpus_per_node}")
    path = Path(run_dir) / "timeline.parquet"
    text = str(path)
    if not path.is_file():
        raise SeriesError([f"{run_dir}: not a dlsched run directory (no timeline.parquet)"])
    table = pq.read_table(path)
    needed = ("time_s", "partition", "total_gpus", "busy_gpus")
    missing = [c for c in needed if c not in table.column_names]
    if missing:
        raise SeriesError([f"{text}: missing column(s) {', '.join(missing)}"])
    time_s = np.asarray(table.column("time_s").to_numpy(zero_copy_only=False), dtype=float)
    parts = [str(p) for p in table.column("partition").to_pylist()]
    total_g = np.asarray(table.column("total_gpus").to_numpy(zero_copy_only=False), dtype=float)
    busy_g = np.asarray(table.column("busy_gpus").to_numpy(zero_copy_only=False), dtype=float)
    problems = _check_timeline_rows(text, time_s, parts, total_g, busy_g, gpus_per_node)
    if problems:
        raise SeriesError(problems[:MAX_PROBLEMS], len(problems) - len(problems[:MAX_PROBLEMS]))
    times, first_row, inverse = np.unique(time_s, return_index=True, return_inverse=True)
    per_time = np.bincount(inverse, minlength=len(times))
    n_parts = len(set(parts))
    incomplete = np.flatnonzero(per_time != n_parts)
    if len(incomplete):
        k = int(incomplete[0])
        raise SeriesError(
            [
                f"{text}: row {int(first_row[k]) + 1}: time_s {times[k]:g} has samples of "
                f"{per_time[k]} partitions, expected {n_parts} (one per partition)"
            ]
        )
    nodes_busy = np.ceil(busy_g / gpus_per_node - 1e-9)
    busy = np.bincount(inverse, weights=nodes_busy, minlength=len(times))
    total = np.bincount(inverse, weights=total_g / gpus_per_node, minlength=len(times))
    origin = 0.0 if origin_s is None else float(origin_s)
    locations = [f"{text}: row {int(r) + 1}" for r in first_row]
    return _resample(
        text,
        times + origin,
        np.rint(busy),
        np.rint(total),
        locations,
        fill_gaps,
        wall_clock=origin_s is not None,
    )


def write_series_csv(series: BusySeries, path: str | Path) -> None:
    """Write ``series`` as a ``time, active, total`` CSV, one row per step that had samples:
    forward-filled steps are left out, so reading the file back finds the same gaps."""
    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        for k in range(len(series)):
            if not series.filled[k]:
                writer.writerow([series.label(k), int(series.busy[k]), int(series.total[k])])


def _parse_rows(
    text: str, reader: Iterable[list[str]], cols: list[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    times: list[float] = []
    busy: list[int] = []
    total: list[int] = []
    lines: list[int] = []
    problems: list[str] = []
    more = 0
    prev_time: float | None = None
    prev_line = 0
    width = max(cols) + 1
    for line, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        found = _row_problems(row, cols, width)
        parsed = None if found else _values(row, cols)
        if parsed is not None:
            t, active, nodes = parsed
            if prev_time is not None and t == prev_time:
                found = [f"duplicate time {row[cols[0]].strip()} (also on line {prev_line})"]
            elif prev_time is not None and t < prev_time:
                found = [
                    f"time goes backwards: {row[cols[0]].strip()} comes after "
                    f"{wall_time(prev_time)} (line {prev_line})"
                ]
            else:
                times.append(t)
                busy.append(active)
                total.append(nodes)
                lines.append(line)
            prev_time, prev_line = t, line
        for problem in found:
            if len(problems) < MAX_PROBLEMS:
                problems.append(f"{text}:{line}: {problem}")
            else:
                more += 1
    if problems:
        raise SeriesError(problems, more)
    if not times:
        raise SeriesError([f"{text}: no data rows"])
    return (
        np.asarray(times, dtype=float),
        np.asarray(busy, dtype=float),
        np.asarray(total, dtype=float),
        lines,
    )


def _row_problems(row: list[str], cols: list[int], width: int) -> list[str]:
    if len(row) < width:
        return [f"expected at least {width} fields, found {len(row)}"]
    out: list[str] = []
    try:
        parse_wall_time(row[cols[0]].strip())
    except ValueError:
        out.append(f"time: not a time of the form {WALL_TIME_FORM}: {row[cols[0]]!r}")
    counts: dict[str, int] = {}
    for name, col in zip(COLUMNS[1:], cols[1:], strict=True):
        value, problem = _count(row[col])
        if problem:
            out.append(f"{name}: {problem}")
        else:
            counts[name] = value
    if "total" in counts and counts["total"] == 0:
        out.append("total: must be positive (a cluster of 0 nodes)")
    if len(counts) == 2 and counts["active"] > counts["total"]:
        out.append(f"active ({counts['active']}) exceeds total ({counts['total']})")
    return out


def _values(row: list[str], cols: list[int]) -> tuple[float, int, int]:
    return (
        parse_wall_time(row[cols[0]].strip()),
        _count(row[cols[1]])[0],
        _count(row[cols[2]])[0],
    )


def _count(text: str) -> tuple[int, str]:
    """A whole, non-negative node count, or an explanation of why ``text`` is not one."""
    stripped = text.strip()
    try:
        value = float(stripped)
    except ValueError:
        return 0, f"not a number: {text!r}"
    if not math.isfinite(value) or value != int(value):
        return 0, f"not a whole number of nodes: {text!r}"
    if value < 0:
        return 0, f"negative ({stripped})"
    return int(value), ""


def _check_timeline_rows(
    text: str,
    time_s: np.ndarray,
    parts: list[str],
    total_g: np.ndarray,
    busy_g: np.ndarray,
    gpus_per_node: int,
) -> list[str]:
    problems: list[str] = []
    bad = ~np.isfinite(time_s) | ~np.isfinite(total_g) | ~np.isfinite(busy_g)
    for r in np.flatnonzero(bad)[:MAX_PROBLEMS]:
        problems.append(f"{text}: row {r + 1}: missing or non-finite value")
    for r in np.flatnonzero(~bad & ((busy_g < 0) | (total_g < 0)))[:MAX_PROBLEMS]:
        problems.append(f"{text}: row {r + 1}: negative GPU count")
    for r in np.flatnonzero(~bad & (busy_g > total_g))[:MAX_PROBLEMS]:
        problems.append(
            f"{text}: row {r + 1}: busy_gpus ({busy_g[r]:g}) exceeds total_gpus ({total_g[r]:g})"
        )
    uneven = sorted({parts[r] for r in np.flatnonzero(~bad & (total_g % gpus_per_node != 0))})
    for name in uneven:
        problems.append(
            f"{text}: partition {name!r}: total_gpus is not a multiple of --gpus-per-node "
            f"{gpus_per_node}"
        )
    seen: dict[tuple[float, str], int] = {}
    for r, key in enumerate(zip(time_s.tolist(), parts, strict=True)):
        if key in seen:
            problems.append(
                f"{text}: row {r + 1}: duplicate sample of partition {key[1]!r} at time_s "
                f"{key[0]:g} (also row {seen[key] + 1})"
            )
            if len(problems) >= 2 * MAX_PROBLEMS:
                break
        else:
            seen[key] = r
    return problems


def _resample(
    source: str,
    times: np.ndarray,
    busy: np.ndarray,
    total: np.ndarray,
    locations: Sequence[str],
    fill_gaps: bool,
    *,
    wall_clock: bool,
) -> BusySeries:
    if len(times) > 1 and np.any(np.diff(times) <= 0):
        k = int(np.argmax(np.diff(times) <= 0)) + 1
        raise SeriesError([f"{locations[k]}: times must strictly increase"])
    interval = _interval(times)
    if interval > STEP_S:
        raise SeriesError(
            [
                f"{source}: samples are {interval:g} s apart, longer than the {STEP_S}-s step; "
                "a 10-minute maximum needs at least one sample per step"
            ]
        )
    diffs = np.diff(times)
    gap_at = np.flatnonzero(diffs > GAP_FACTOR * interval) + 1
    gaps = tuple(
        Gap(
            locations[k],
            time_label(times[k - 1], wall_clock),
            time_label(times[k], wall_clock),
            float(diffs[k - 1]),
        )
        for k in gap_at.tolist()
    )
    if gaps and not fill_gaps:
        shown = [
            f"{g.where}: gap: {_span(g.missing_s)} between consecutive samples at {g.before} "
            f"and {g.after} (samples are every {interval:g} s)"
            for g in gaps[:MAX_PROBLEMS]
        ]
        raise SeriesError(
            shown,
            len(gaps) - len(shown),
            "pass --fill-gaps to forward-fill the missing 10-minute steps; "
            "the repair is listed in stats.json",
        )
    bins = np.floor(times / STEP_S).astype(np.int64)
    first = int(bins[0])
    n = int(bins[-1]) - first + 1
    step_busy = np.full(n, -1.0)
    step_total = np.full(n, -1.0)
    np.maximum.at(step_busy, bins - first, busy)
    np.maximum.at(step_total, bins - first, total)
    filled = step_busy < 0
    # Forward fill: each empty step takes the index of the last step with samples.
    last_seen = np.maximum.accumulate(np.where(filled, 0, np.arange(n)))
    return BusySeries(
        source=source,
        start_s=first * STEP_S,
        busy=step_busy[last_seen].astype(np.int64),
        total=step_total[last_seen].astype(np.int64),
        filled=filled,
        gaps=gaps,
        interval_s=interval,
        samples=len(times),
        origin_known=wall_clock,
    )


def _interval(times: np.ndarray) -> float:
    """The most common difference between consecutive times (the smallest among ties);
    one step for a single sample."""
    if len(times) < 2:
        return float(STEP_S)
    values, counts = np.unique(np.diff(times), return_counts=True)
    return float(values[int(np.argmax(counts))])


def _span(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:g} min" if minutes < 120 else f"{minutes / 60:g} h"
