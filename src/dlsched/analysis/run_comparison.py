"""What ``dlsched analyze`` reports of several job run directories, or of a sweep: one *line*
per run given, or per group of a sweep (:mod:`dlsched.analysis.sweep_groups`) whose seeds are
pooled; pure functions of the runs' files, no plotting, no writing.

Per line:

- its label and the values of the configuration fields that differ between the lines
  (:mod:`dlsched.analysis.run_labels`);
- the JCT and queueing-delay CDFs of the finished jobs of its runs, pooled (a
  :class:`~dlsched.analysis.characterize.Distribution`: quantiles at ``CDF_PROBABILITIES``);
- its table row: finished jobs, mean, median and 95th percentile JCT, mean queueing delay (of
  the pooled jobs, as ``summary.json`` computes them: mean and numpy's linear percentiles), and
  GPU utilization: the runs' GPU-time held over their GPUs × makespan, summed over the runs
  (for one run, its summary's ``gpu_utilization``; from the summaries' ``gpu_seconds``,
  ``partition_gpus_used`` and ``makespan_s``, null when one lacks them);
- utilization (GPUs busy over the GPUs of the partitions that ran jobs, as
  :mod:`dlsched.analysis.run_analysis`) and jobs waiting over time, averaged per bin, on bins
  shared by every line: time runs from each run's first timeline sample (runs of one trace
  start together), and a line's value in a bin is the mean over its runs whose timeline
  reaches the bin (null past the end of all of them).

A value without data (no finished job, an empty timeline) is an :class:`Unavailable` stating
why, or None; never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.analysis.characterize import Distribution, Floats, Unavailable, distribution, step_bins
from dlsched.analysis.run_analysis import (
    JOB_COLUMNS,
    JOBS,
    TIMELINE,
    TIMELINE_COLUMNS,
    ClusterSteps,
    cluster_steps,
    finished_values,
    mean_or_none,
    percentile_or_none,
    ran_partitions,
    read_table,
    timeline_steps,
)
from dlsched.analysis.run_labels import flat_fields, group_fields, read_config, run_labels
from dlsched.analysis.sweep_groups import SweepGroups
from dlsched.metrics.rundir import read_summary

MAX_LINES = 10
"""Lines a figure draws at most: the first ones, in the order of :attr:`RunComparison.lines`;
the table and ``stats.json`` hold every line."""
RUNS, SWEEP = "runs", "sweep"
SEED_FIELD = "seed"
"""The field a sweep pools within a group: never part of a group's label."""


@dataclass(frozen=True)
class LineTimeline:
    """One line over the shared bins (:class:`SharedBins`): per bin, the mean over its runs of
    the share of GPUs busy and of the jobs waiting (None past the end of all its runs), and the
    most jobs any of its runs had waiting."""

    utilization_mean: tuple[float | None, ...]
    waiting_jobs_mean: tuple[float | None, ...]
    peak_waiting_jobs: int


@dataclass(frozen=True)
class Line:
    """One run, or one sweep group (module docstring). ``seeds`` is a sweep group's (None for
    a run given on its own)."""

    label: str
    fields: dict[str, str]
    runs: tuple[str, ...]
    seeds: tuple[int, ...] | None
    jobs: int
    avg_jct_s: float | None
    median_jct_s: float | None
    p95_jct_s: float | None
    avg_queue_s: float | None
    gpu_utilization: float | None
    jct: Distribution | Unavailable
    queueing: Distribution | Unavailable
    timeline: LineTimeline | Unavailable


@dataclass(frozen=True)
class SharedBins:
    """The bins of every line's timeline: bin i covers ``[first_bin_s + i*bin_s, first_bin_s +
    (i+1)*bin_s)`` seconds since each run's first timeline sample, up to ``span_s``, the
    longest run's."""

    bin_s: float
    first_bin_s: float
    bins: int
    span_s: float


@dataclass(frozen=True)
class RunComparison:
    """Every line, in order: the runs as given, or a sweep's groups in its grid's order.
    ``source`` is :data:`RUNS` or :data:`SWEEP` (then ``sweep`` is its directory and
    ``cells_in_grid`` / ``cells_finished`` count its cells); ``fields`` are the configuration
    fields that differ between the lines, as their labels show them."""

    source: str
    sweep: str | None
    cells_in_grid: int | None
    cells_finished: int | None
    fields: tuple[str, ...]
    lines: tuple[Line, ...]
    bins: SharedBins | Unavailable

    @property
    def shown(self) -> tuple[Line, ...]:
        """The lines the figures draw (at most :data:`MAX_LINES`)."""
        return self.lines[:MAX_LINES]


@dataclass(frozen=True)
class _Run:
    """What one run directory adds to its line."""

    fields: dict[str, Any]
    summary: dict[str, Any]
    jct: Floats
    queue: Floats
    steps: ClusterSteps | Unavailable


def _read_run(path: Path) -> _Run:
    summary = read_summary(path)
    jobs = read_table(path, JOBS, JOB_COLUMNS)
    steps = timeline_steps(read_table(path, TIMELINE, TIMELINE_COLUMNS))
    return _Run(
        fields=flat_fields(read_config(path)),
        summary=summary,
        jct=finished_values(jobs, "jct_s"),
        queue=finished_values(jobs, "queue_s"),
        steps=cluster_steps(steps, ran_partitions(jobs)),
    )


def compare_run_dirs(runs: Sequence[str | Path]) -> RunComparison:
    """One line per job run directory of ``runs``, in order. ValueError naming the file for
    a run directory that is incomplete or not a job run's."""
    read = [[_read_run(Path(r))] for r in runs]
    names = [Path(r).name or str(r) for r in runs]
    return _comparison(read, [(str(r),) for r in runs], None, names, RUNS, None)


def compare_sweep(groups: SweepGroups) -> RunComparison:
    """One line per group of a sweep's finished cells, its seeds pooled."""
    read = [[_read_run(r) for r in g.runs] for g in groups.groups]
    runs = [tuple(str(r) for r in g.runs) for g in groups.groups]
    seeds = [g.seeds for g in groups.groups]
    names = [g.name for g in groups.groups]
    return _comparison(read, runs, seeds, names, SWEEP, groups)


def _comparison(
    read: list[list[_Run]],
    runs: list[tuple[str, ...]],
    seeds: list[tuple[int, ...]] | None,
    names: list[str],
    source: str,
    sweep: SweepGroups | None,
) -> RunComparison:
    pooled = (SEED_FIELD,) if sweep is not None else ()
    fields = group_fields([[r.fields for r in members] for members in read], pooled)
    labels = run_labels(fields, names)
    bins = _shared_bins([r.steps for members in read for r in members])
    lines = []
    for i, members in enumerate(read):
        jct = np.concatenate([r.jct for r in members])
        queue = np.concatenate([r.queue for r in members])
        lines.append(
            Line(
                label=labels.labels[i],
                fields=labels.values[i],
                runs=runs[i],
                seeds=None if seeds is None else seeds[i],
                jobs=len(jct),
                avg_jct_s=mean_or_none(jct),
                median_jct_s=percentile_or_none(jct, 50),
                p95_jct_s=percentile_or_none(jct, 95),
                avg_queue_s=mean_or_none(queue),
                gpu_utilization=_utilization([r.summary for r in members]),
                jct=_distribution(jct),
                queueing=_distribution(queue),
                timeline=_line_timeline([r.steps for r in members], bins),
            )
        )
    return RunComparison(
        source=source,
        sweep=None if sweep is None else str(sweep.sweep),
        cells_in_grid=None if sweep is None else sweep.cells_in_grid,
        cells_finished=None if sweep is None else sweep.cells_finished,
        fields=labels.fields,
        lines=tuple(lines),
        bins=bins,
    )


def _distribution(values: Floats) -> Distribution | Unavailable:
    if not len(values):
        return Unavailable("no job finished")
    return distribution(values)


def _utilization(summaries: list[dict[str, Any]]) -> float | None:
    """Summed GPU-time over summed GPUs × makespan (module docstring)."""
    held = capacity = 0.0
    for s in summaries:
        values = [s.get(k) for k in ("gpu_seconds", "partition_gpus_used", "makespan_s")]
        numbers = [float(v) for v in values if isinstance(v, int | float)]
        if len(numbers) < len(values):
            return None
        gpu_s, gpus, makespan = numbers
        held += gpu_s
        capacity += gpus * makespan
    return held / capacity if capacity > 0 else None


def _span(steps: ClusterSteps) -> float:
    return float(steps.times[-1] - steps.times[0])


def _shared_bins(runs: list[ClusterSteps | Unavailable]) -> SharedBins | Unavailable:
    spans = [_span(s) for s in runs if not isinstance(s, Unavailable)]
    if not spans:
        return Unavailable("every run's timeline is empty (nothing ran)")
    span = max(spans)
    # step_bins picks the width from the span it is given: every run is binned over [0, span].
    bins = step_bins(np.array([0.0, span]), np.zeros(2))
    return SharedBins(bins.bin_s, bins.first_bin_s, len(bins.mean), span)


def _binned(steps: ClusterSteps, span: float, levels: Floats) -> Floats:
    """``levels`` (a step function over ``steps.times``) averaged over the shared bins of
    ``[0, span]`` after shifting time to the run's first sample; NaN in bins starting after
    the run's end (the first bin is always covered)."""
    times = steps.times - steps.times[0]
    own = float(times[-1])
    if own < span:
        # The last row holds until the next; there is none, so the padding only reaches the
        # bins the mask below drops and the rest of the bin holding the run's end.
        times = np.append(times, span)
        levels = np.append(levels, levels[-1])
    bins = step_bins(times, levels)
    starts = bins.first_bin_s + bins.bin_s * np.arange(len(bins.mean))
    covered = starts < own
    covered[0] = True
    return np.where(covered, bins.mean, np.nan)


def _line_timeline(
    runs: list[ClusterSteps | Unavailable], bins: SharedBins | Unavailable
) -> LineTimeline | Unavailable:
    steps = [s for s in runs if not isinstance(s, Unavailable)]
    if isinstance(bins, Unavailable) or not steps:
        return Unavailable("the timeline is empty (nothing ran)")
    share = []
    for s in steps:
        busy = _binned(s, bins.span_s, s.busy)
        share.append(busy / s.total_gpus if s.total_gpus else np.full_like(busy, np.nan))
    waiting = [_binned(s, bins.span_s, s.waiting) for s in steps]
    return LineTimeline(
        utilization_mean=_mean_over_runs(share),
        waiting_jobs_mean=_mean_over_runs(waiting),
        peak_waiting_jobs=max(int(s.waiting.max()) for s in steps),
    )


def _mean_over_runs(series: list[Floats]) -> tuple[float | None, ...]:
    stacked = np.vstack(series)
    counts = (~np.isnan(stacked)).sum(axis=0)
    sums = np.nansum(stacked, axis=0)
    return tuple(
        None if n == 0 else round(float(total / n), 6)
        for total, n in zip(sums, counts, strict=True)
    )
