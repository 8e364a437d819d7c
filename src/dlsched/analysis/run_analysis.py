"""What ``dlsched analyze`` reports of a job run directory (``dlsched simulate``, any kind of
jobs): pure functions of its ``jobs.parquet``, ``timeline.parquet`` and ``summary.json``; no
plotting, no writing.

- JCT and queueing-delay CDFs of the finished jobs: all jobs, GPU jobs and each GPU-demand
  bucket of the jobs' ``gpus`` (the buckets and quantile grid of the trace characterization,
  :mod:`dlsched.analysis.characterize`);
- the cluster over time, from the timeline summed over the partitions that ran jobs (all of
  them when none did; as the summary's ``gpu_utilization``, so that a run restricted to some
  VCs is not diluted by the others): GPUs busy and up, and jobs waiting (handed to their
  policy and not running: the timeline's ``pending_jobs``; in a run with queues, jobs still
  waiting for admission are not among them), averaged and maximized per bin. A timeline row
  holds until the next row of its partition;
- one row per partition (VC; ``*`` for a run with ``--no-partitions``): its GPUs, finished
  jobs, JCT and queueing statistics (as ``summary.json`` computes them: mean, and numpy's
  linear percentiles), GPU-time, utilization (GPU-time over GPUs × the run's makespan, as the
  summary's ``gpu_utilization``) and the jobs waiting in it.

A section without data (no finished job, an empty timeline) is an :class:`Unavailable` stating
why; a statistic of no values is None, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dlsched.analysis.characterize import (
    Distribution,
    Floats,
    Unavailable,
    sample_curves,
    step_bins,
)
from dlsched.metrics.rundir import read_summary
from dlsched.metrics.summary import makespan_window
from dlsched.metrics.timeline import FORM_KEY

JOBS, TIMELINE = "jobs.parquet", "timeline.parquet"
JOB_COLUMNS = ("partition", "status", "gpus", "gpu_milli", "jct_s", "queue_s", "gpu_seconds")
TIMELINE_COLUMNS = ("time_s", "partition", "total_gpus", "up_gpus", "busy_gpus", "pending_jobs")
OVERVIEW_KEYS = (
    "policy",
    "placement",
    "cluster",
    "kind_policies",
    "job_kinds",
    "jobs",
    "jobs_in_trace",
    "jobs_set_aside",
    "set_aside_reasons",
    "avg_jct_s",
    "avg_queue_s",
    "makespan_s",
    "gpu_utilization",
    "preemptions",
    "energy_kwh",
    "deadlines",
)
"""The summary figures the report's overview repeats (as ``summary.json`` has them; the
``deadlines`` block is :class:`dlsched.metrics.summary.DeadlineFigures`)."""
FINISHED = "finished"


@dataclass(frozen=True)
class JobCdfs:
    """CDFs of one figure of the finished jobs, keyed "all jobs", "GPU jobs", then by
    GPU-demand bucket (non-empty ones)."""

    curves: dict[str, Distribution]
    jobs_finished: int


@dataclass(frozen=True)
class ClusterTimeline:
    """The run's cluster over time, summed over ``partitions`` (of ``partitions_in_cluster``),
    per bin i covering ``[first_bin_s + i*bin_s, first_bin_s + (i+1)*bin_s)`` in simulated
    seconds.

    ``form`` is the timeline's (``grid``: every step sampled; ``changes``: only steps at which
    a partition changed). ``powered_varies`` says whether GPUs up ever differed from all GPUs
    (a power manager or failures)."""

    form: str
    partitions: tuple[str, ...]
    partitions_in_cluster: int
    start_s: float
    end_s: float
    total_gpus: int
    bin_s: float
    first_bin_s: float
    busy_gpus_mean: tuple[float, ...]
    busy_gpus_max: tuple[float, ...]
    up_gpus_mean: tuple[float, ...]
    waiting_jobs_mean: tuple[float, ...]
    waiting_jobs_max: tuple[float, ...]
    time_avg_busy_gpus: float
    time_avg_utilization: float | None
    time_avg_waiting_jobs: float
    peak_waiting_jobs: int
    powered_varies: bool


@dataclass(frozen=True)
class PartitionRow:
    """One partition (module docstring); ``gpus`` is None for a partition the timeline does
    not have."""

    partition: str
    gpus: int | None
    jobs: int
    gpu_time_s: float
    utilization: float | None
    avg_jct_s: float | None
    median_jct_s: float | None
    p95_jct_s: float | None
    avg_queue_s: float | None
    p95_queue_s: float | None
    avg_waiting_jobs: float | None
    peak_waiting_jobs: int | None


@dataclass(frozen=True)
class PartitionTable:
    """Rows in decreasing GPU-time, then name; jobs set aside (never run, so in no
    partition) are counted apart, with their reasons."""

    rows: tuple[PartitionRow, ...]
    makespan_s: float
    jobs_set_aside: int
    set_aside_reasons: dict[str, int]


@dataclass(frozen=True)
class RunAnalysis:
    """Every section of the report of one job run directory."""

    run: str
    overview: dict[str, Any]
    queues: int | None
    jct: JobCdfs | Unavailable
    queueing: JobCdfs | Unavailable
    timeline: ClusterTimeline | Unavailable
    partitions: PartitionTable | Unavailable


def read_table(run: Path, name: str, columns: tuple[str, ...]) -> pa.Table:
    """The table ``name`` of run directory ``run``; ValueError naming the file when it is
    missing, unreadable or lacks one of ``columns``."""
    path = run / name
    if not path.is_file():
        raise ValueError(f"{path}: missing; a job run directory holds {name}")
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from exc
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)}; simulate the run again")
    return table


def analyze_run(run: str | Path) -> RunAnalysis:
    """Analyze job run directory ``run`` (module docstring). ValueError naming the file for a
    run directory that is incomplete or not a job run's."""
    path = Path(run)
    summary = read_summary(path)
    jobs = read_table(path, JOBS, JOB_COLUMNS)
    steps = timeline_steps(read_table(path, TIMELINE, TIMELINE_COLUMNS))
    tenants = summary.get("tenants")
    return RunAnalysis(
        run=str(run),
        overview={k: summary.get(k) for k in OVERVIEW_KEYS},
        queues=len(tenants) if isinstance(tenants, dict) else None,
        jct=job_cdfs(jobs, "jct_s"),
        queueing=job_cdfs(jobs, "queue_s"),
        timeline=cluster_timeline(steps, ran_partitions(jobs)),
        partitions=partition_table(jobs, steps, summary),
    )


def _floats(table: pa.Table, name: str) -> Floats:
    column = pc.cast(table.column(name), pa.float64())
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


def _finished(jobs: pa.Table) -> np.ndarray:
    return np.asarray(
        pc.equal(jobs.column("status"), FINISHED).to_numpy(zero_copy_only=False), dtype=bool
    )


def ran_partitions(jobs: pa.Table) -> set[str]:
    """The partitions in which some job finished."""
    done = _finished(jobs)
    return {str(p) for p, d in zip(jobs.column("partition").to_pylist(), done, strict=True) if d}


def _known(jobs: pa.Table, column: str) -> np.ndarray:
    """Which jobs finished with a value of ``column``."""
    return _finished(jobs) & ~np.isnan(_floats(jobs, column))


def finished_values(jobs: pa.Table, column: str) -> Floats:
    """``column`` (``jct_s`` or ``queue_s``) of the finished jobs, in the table's order."""
    values: Floats = _floats(jobs, column)[_known(jobs, column)]
    return values


def job_cdfs(jobs: pa.Table, column: str) -> JobCdfs | Unavailable:
    """CDFs of ``column`` (``jct_s`` or ``queue_s``) over the finished jobs."""
    done = _known(jobs, column)
    if not done.any():
        return Unavailable("no job finished in this run")
    gpus = np.asarray(jobs.column("gpus").to_numpy(zero_copy_only=False), dtype=np.int64)
    milli = _floats(jobs, "gpu_milli")
    shared = (gpus > 0) & (milli < 1000)
    curves = sample_curves(_floats(jobs, column), done, gpus, shared)
    return JobCdfs(curves, int(done.sum()))


@dataclass(frozen=True)
class PartitionSteps:
    """A partition's timeline as step functions over :attr:`TimelineSteps.times`."""

    busy: Floats
    up: Floats
    waiting: Floats
    total: int


@dataclass(frozen=True)
class TimelineSteps:
    """A timeline read once: the union of its rows' times (sorted) and each partition's
    values at them."""

    form: str
    times: Floats
    partitions: dict[str, PartitionSteps]


def timeline_steps(timeline: pa.Table) -> TimelineSteps:
    """Each partition's busy GPUs, GPUs up and jobs waiting at every time of the timeline:
    the value of its last row at or before, or its initial state (idle, all up) before its
    first row."""
    meta = timeline.schema.metadata or {}
    form = meta.get(FORM_KEY, b"grid").decode()
    time = _floats(timeline, "time_s")
    times = np.unique(time)
    busy = _floats(timeline, "busy_gpus")
    up = _floats(timeline, "up_gpus")
    waiting = _floats(timeline, "pending_jobs")
    total = _floats(timeline, "total_gpus")
    encoded = pc.dictionary_encode(timeline.column("partition").combine_chunks())
    codes = np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False))
    out = {}
    for code, name in enumerate(encoded.dictionary.to_pylist()):
        mine = np.flatnonzero(codes == code)
        mine = mine[np.argsort(time[mine], kind="stable")]
        at = np.searchsorted(time[mine], times, side="right") - 1
        before = at < 0
        pick = mine[np.maximum(at, 0)]
        gpus = int(total[mine[0]])
        out[str(name)] = PartitionSteps(
            busy=np.where(before, 0.0, busy[pick]),
            up=np.where(before, float(gpus), up[pick]),
            waiting=np.where(before, 0.0, waiting[pick]),
            total=gpus,
        )
    return TimelineSteps(form, times, out)


def _time_average(times: Floats, levels: Floats) -> float:
    """The average of the step function over ``[times[0], times[-1]]`` (its one value when
    that is an instant)."""
    span = float(times[-1] - times[0])
    if span <= 0:
        return float(levels[0])
    return float((np.diff(times) * levels[:-1]).sum()) / span


@dataclass(frozen=True)
class ClusterSteps:
    """A timeline summed over ``partitions`` (of ``total_gpus`` GPUs): busy GPUs, GPUs up and
    jobs waiting from each of ``times`` (sorted, at least one) to the next."""

    partitions: tuple[str, ...]
    times: Floats
    busy: Floats
    up: Floats
    waiting: Floats
    total_gpus: int


def cluster_steps(steps: TimelineSteps, ran: set[str]) -> ClusterSteps | Unavailable:
    """The partitions in ``ran`` (those that ran jobs), or all when none of them did, summed
    at every time of the timeline; Unavailable for an empty timeline."""
    names = tuple(n for n in steps.partitions if n in ran) or tuple(steps.partitions)
    if not len(steps.times) or not names:
        return Unavailable("the timeline is empty (nothing ran)")
    parts = [steps.partitions[n] for n in names]
    return ClusterSteps(
        partitions=names,
        times=steps.times,
        busy=np.sum([s.busy for s in parts], axis=0),
        up=np.sum([s.up for s in parts], axis=0),
        waiting=np.sum([s.waiting for s in parts], axis=0),
        total_gpus=sum(s.total for s in parts),
    )


def cluster_timeline(steps: TimelineSteps, ran: set[str]) -> ClusterTimeline | Unavailable:
    """The cluster over time (see :class:`ClusterTimeline`), over the partitions in ``ran``
    (those that ran jobs), or over all when none of them did."""
    summed = cluster_steps(steps, ran)
    if isinstance(summed, Unavailable):
        return summed
    names, times, total = summed.partitions, summed.times, summed.total_gpus
    busy, up, waiting = summed.busy, summed.up, summed.waiting
    busy_bins = step_bins(times, busy)
    up_bins = step_bins(times, up)
    waiting_bins = step_bins(times, waiting)
    avg_busy = _time_average(times, busy)
    return ClusterTimeline(
        form=steps.form,
        partitions=names,
        partitions_in_cluster=len(steps.partitions),
        start_s=float(times[0]),
        end_s=float(times[-1]),
        total_gpus=total,
        bin_s=busy_bins.bin_s,
        first_bin_s=busy_bins.first_bin_s,
        busy_gpus_mean=_rounded(busy_bins.mean),
        busy_gpus_max=_rounded(busy_bins.maxima),
        up_gpus_mean=_rounded(up_bins.mean),
        waiting_jobs_mean=_rounded(waiting_bins.mean),
        waiting_jobs_max=_rounded(waiting_bins.maxima),
        time_avg_busy_gpus=avg_busy,
        time_avg_utilization=avg_busy / total if total else None,
        time_avg_waiting_jobs=_time_average(times, waiting),
        peak_waiting_jobs=int(waiting.max()),
        powered_varies=bool((up != total).any()),
    )


def _rounded(values: Floats) -> tuple[float, ...]:
    return tuple(float(x) for x in np.round(values, 6))


def mean_or_none(values: Floats) -> float | None:
    """The mean of ``values`` (None for none), as ``summary.json`` computes it."""
    return float(np.mean(values)) if len(values) else None


def percentile_or_none(values: Floats, q: float) -> float | None:
    """Numpy's linear ``q``-th percentile of ``values`` (None for none), as ``summary.json``
    computes it."""
    return float(np.percentile(values, q)) if len(values) else None


def partition_table(
    jobs: pa.Table, steps: TimelineSteps, summary: dict[str, Any]
) -> PartitionTable | Unavailable:
    """One row per partition of the timeline or of a finished job (module docstring)."""
    done = _finished(jobs)
    names = jobs.column("partition").to_pylist()
    part = np.array(["" if n is None else str(n) for n in names], dtype=object)
    labels = list(steps.partitions)
    labels += sorted({str(p) for p in part[done]} - set(labels))
    if not labels:
        return Unavailable("no job ran and the timeline has no partition")
    start, end = makespan_window(jobs)
    makespan = end - start
    jct, queue = _floats(jobs, "jct_s"), _floats(jobs, "queue_s")
    gpu_s = _floats(jobs, "gpu_seconds")
    times = steps.times
    rows = []
    for label in labels:
        mine = done & (part == label)
        own = steps.partitions.get(label)
        gpus = None if own is None else own.total
        waiting = None if own is None else own.waiting
        held = float(gpu_s[mine].sum())
        rows.append(
            PartitionRow(
                partition=label,
                gpus=gpus,
                jobs=int(mine.sum()),
                gpu_time_s=held,
                utilization=held / (gpus * makespan) if gpus and makespan > 0 else None,
                avg_jct_s=mean_or_none(jct[mine]),
                median_jct_s=percentile_or_none(jct[mine], 50),
                p95_jct_s=percentile_or_none(jct[mine], 95),
                avg_queue_s=mean_or_none(queue[mine]),
                p95_queue_s=percentile_or_none(queue[mine], 95),
                avg_waiting_jobs=None if waiting is None else _time_average(times, waiting),
                peak_waiting_jobs=None if waiting is None else int(waiting.max()),
            )
        )
    rows.sort(key=lambda r: (-r.gpu_time_s, r.partition))
    reasons = summary.get("set_aside_reasons") or {}
    return PartitionTable(
        rows=tuple(rows),
        makespan_s=makespan,
        jobs_set_aside=int((~done).sum()),
        set_aside_reasons={str(k): int(v) for k, v in reasons.items()},
    )
