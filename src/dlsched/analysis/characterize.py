"""Workload characterization of a job trace, as in the Helios study.

The sections follow Hu et al., "Characterization and Prediction of Deep Learning Workloads in
Large-Scale GPU Datacenters", SC'21: job-duration CDFs, GPU demand by jobs and by GPU-time, final
states, submissions by hour and weekday, queueing delay by GPU demand, cluster GPU demand over
time, per-user GPU-time concentration, job recurrence and per-VC figures.

Everything here is a pure function of a :class:`~dlsched.trace.schema.Trace`: no plotting, no
I/O. A section whose fields the trace lacks is an :class:`Unavailable` stating why; nothing is
guessed. Conventions used throughout:

* a *GPU job* asks for at least one GPU (``num_gpus > 0``); its *GPUs* are ``num_gpus`` times the
  per-GPU share ``gpu_milli / 1000`` when the trace has shares (Alibaba), else ``num_gpus``;
* *GPU-time* is GPUs × ``duration`` (GPU-seconds), over the jobs whose duration is known;
* GPU-demand buckets are ``<1`` (a share of one GPU; only when the trace has such jobs), ``1``,
  ``2-4``, ``5-8`` and ``>8`` GPUs;
* a CDF is kept as quantiles at :data:`CDF_PROBABILITIES` (the inverse empirical CDF: the
  smallest value whose cumulative share reaches p), so a plot of it shows exactly what is stored;
* user names and job names that are null or empty count as missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from dlsched.trace.schema import Trace

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

CDF_POINTS = 201
CDF_PROBABILITIES: tuple[float, ...] = tuple(i / (CDF_POINTS - 1) for i in range(CDF_POINTS))
SHARED_BUCKET = "<1"
WHOLE_BUCKETS: tuple[tuple[str, int, int], ...] = (
    ("1", 1, 1),
    ("2-4", 2, 4),
    ("5-8", 5, 8),
    (">8", 9, 2**31 - 1),
)
TOP_USER_PERCENTS = (1, 5, 10)
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
# Bin widths for the demand series, smallest first; the first giving at most MAX_BINS is used.
DEMAND_BIN_CHOICES_S = (60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 86400, 7 * 86400)
MAX_DEMAND_BINS = 1000
CURVE_POINTS = 201
MINUTE_S, HOUR_S, DAY_S = 60.0, 3600.0, 86400.0
# 1970-01-01 was a Thursday: index 3 with Monday = 0.
_EPOCH_WEEKDAY = 3


@dataclass(frozen=True)
class Unavailable:
    """A section the trace cannot support; ``reason`` names the missing field."""

    reason: str


@dataclass(frozen=True)
class Distribution:
    """Summary of a sample of seconds (durations or delays); ``count`` >= 1.

    ``quantiles[i]`` is the value at ``CDF_PROBABILITIES[i]`` (the first is the minimum, the last
    the maximum). ``median`` is numpy's (mean of the two middle values for an even count).
    """

    count: int
    mean: float
    median: float
    p95: float
    share_within_1min: float
    share_within_1h: float
    share_within_1day: float
    quantiles: tuple[float, ...]


@dataclass(frozen=True)
class Overview:
    """Counts of the trace as analyzed; times in seconds, ``*_utc`` only with wall-clock times."""

    jobs: int
    gpu_jobs: int
    cpu_jobs: int
    shared_gpu_jobs: int
    jobs_with_duration: int
    total_gpu_time_s: float | None
    first_submit_s: float | None
    last_submit_s: float | None
    first_submit_utc: str | None
    last_submit_utc: str | None
    users: int | None
    vcs: int | None
    fields_present: tuple[str, ...]


@dataclass(frozen=True)
class DurationCdfs:
    """Run-time CDFs keyed "all jobs", "GPU jobs", then by GPU-demand bucket (non-empty ones)."""

    curves: dict[str, Distribution]
    jobs_without_duration: int


@dataclass(frozen=True)
class DemandBucket:
    """GPU jobs in one demand bucket; the GPU-time fields are None without known durations."""

    bucket: str
    jobs: int
    share_jobs: float
    gpu_time_s: float | None
    share_gpu_time: float | None


@dataclass(frozen=True)
class DemandLevel:
    """GPU jobs asking for exactly ``gpus`` GPUs (fractional for shared GPUs)."""

    gpus: float
    jobs: int
    share_jobs: float
    gpu_time_s: float | None
    share_gpu_time: float | None


@dataclass(frozen=True)
class GpuDemand:
    """How GPU jobs and their GPU-time split by GPUs requested."""

    gpu_jobs: int
    buckets: tuple[DemandBucket, ...]
    levels: tuple[DemandLevel, ...]
    gpu_time_s: float | None
    gpu_jobs_without_duration: int


@dataclass(frozen=True)
class StateRow:
    """One final state: its jobs (all, GPU) and its share of GPU-time (None if unknown)."""

    state: str
    jobs: int
    share_jobs: float
    gpu_jobs: int
    share_gpu_jobs: float
    gpu_time_s: float | None
    share_gpu_time: float | None


@dataclass(frozen=True)
class FinalStates:
    """Rows in decreasing number of jobs; shares are of the jobs that have a state."""

    rows: tuple[StateRow, ...]
    jobs_without_state: int


@dataclass(frozen=True)
class Submissions:
    """Submissions per UTC hour of day (24) and per weekday (7, Monday first)."""

    by_hour: tuple[int, ...]
    gpu_by_hour: tuple[int, ...]
    by_weekday: tuple[int, ...]
    gpu_by_weekday: tuple[int, ...]
    days_covered: float


@dataclass(frozen=True)
class QueueingDelays:
    """``start_time - submit_time`` CDFs: "all jobs", "GPU jobs", then by GPU-demand bucket."""

    curves: dict[str, Distribution]
    jobs_without_start: int


@dataclass(frozen=True)
class ClusterDemand:
    """GPUs held by running jobs over time, averaged (and maximized) per bin.

    ``basis`` is "start/end" when the trace has original start times, else "submit+duration"
    (every job assumed to start when submitted, so it is demand, not what the cluster ran).
    Bin i covers ``[first_bin_s + i*bin_s, first_bin_s + (i+1)*bin_s)`` in trace seconds; with
    wall-clock times (``origin_unix`` set) bins are aligned to UTC multiples of ``bin_s``.
    """

    basis: str
    origin_unix: float | None
    bin_s: float
    first_bin_s: float
    mean_gpus: tuple[float, ...]
    max_gpus: tuple[float, ...]
    peak_gpus: float
    time_avg_gpus: float
    span_s: float
    jobs_counted: int
    jobs_not_counted: int
    capacity_gpus: int | None
    capacity_name: str | None
    avg_utilization: float | None
    share_time_over_capacity: float | None


@dataclass(frozen=True)
class TopUsers:
    """The ``users`` heaviest users (the top ``percent``%, at least one) by GPU-time."""

    percent: int
    users: int
    share_gpu_time: float
    share_gpu_jobs: float


@dataclass(frozen=True)
class UserConcentration:
    """GPU-time concentration over the users with at least one GPU job of known duration.

    ``curve_users[i]`` (share of users, heaviest first) and ``curve_gpu_time[i]`` (their share
    of GPU-time) trace the cumulative curve from (0, 0) to (1, 1).
    """

    users: int
    gpu_time_s: float
    top: tuple[TopUsers, ...]
    curve_users: tuple[float, ...]
    curve_gpu_time: tuple[float, ...]


@dataclass(frozen=True)
class Recurrence:
    """Jobs whose user submitted a job of the same name earlier (among jobs with both fields).

    The count does not depend on how same-instant submissions are ordered: every (user, name)
    pair's first job is new and each later one recurs. ``share_gpu_time_recurrent`` is None
    without known durations.
    """

    jobs_considered: int
    recurrent_jobs: int
    share_recurrent: float
    distinct_pairs: int
    users: int
    share_gpu_time_recurrent: float | None


@dataclass(frozen=True)
class VcRow:
    """One VC. ``share_jobs`` is of the jobs that name a VC; durations and queueing are over its
    GPU jobs (None when none is known)."""

    vc: str
    jobs: int
    share_jobs: float
    gpu_jobs: int
    gpu_time_s: float | None
    share_gpu_time: float | None
    mean_duration_s: float | None
    median_duration_s: float | None
    mean_queue_s: float | None


@dataclass(frozen=True)
class VcTable:
    """Rows in decreasing GPU-time (then jobs); ``queue_known`` says if start times exist."""

    rows: tuple[VcRow, ...]
    jobs_without_vc: int
    queue_known: bool


@dataclass(frozen=True)
class Characterization:
    """Every section of the report for one trace."""

    source: str
    overview: Overview
    durations: DurationCdfs | Unavailable
    gpu_demand: GpuDemand | Unavailable
    states: FinalStates | Unavailable
    submissions: Submissions | Unavailable
    queueing: QueueingDelays | Unavailable
    cluster_demand: ClusterDemand | Unavailable
    users: UserConcentration | Unavailable
    recurrence: Recurrence | Unavailable
    vcs: VcTable | Unavailable


@dataclass(frozen=True)
class JobColumns:
    """A trace's columns as arrays (see :func:`job_columns`): missing numbers are NaN, missing
    strings are code -1, other codes index ``state_labels``/``vc_labels`` (users and job names
    are compared by code only)."""

    submit: Floats
    num_gpus: Ints
    gpus: Floats
    shared: Mask
    duration: Floats
    start: Floats
    end: Floats
    user: Ints
    name: Ints
    state: Ints
    state_labels: tuple[str, ...]
    vc: Ints
    vc_labels: tuple[str, ...]

    @property
    def gpu(self) -> Mask:
        return self.num_gpus > 0

    @property
    def gpu_time(self) -> Floats:
        return self.gpus * self.duration


def characterize(
    trace: Trace, capacity_gpus: int | None = None, capacity_name: str | None = None
) -> Characterization:
    """Characterize ``trace``; ``capacity_gpus`` (a cluster's GPUs, named ``capacity_name``) is
    drawn against the cluster-wide demand and gives its utilization. Never raises on a valid
    trace: sections the trace cannot support are :class:`Unavailable`."""
    jobs = job_columns(trace)
    if len(jobs.submit) == 0:
        empty = Unavailable("the trace has no jobs")
        return Characterization(
            source=trace.source,
            overview=overview(trace, jobs),
            durations=empty,
            gpu_demand=empty,
            states=empty,
            submissions=empty,
            queueing=empty,
            cluster_demand=empty,
            users=empty,
            recurrence=empty,
            vcs=empty,
        )
    return Characterization(
        source=trace.source,
        overview=overview(trace, jobs),
        durations=duration_cdfs(jobs),
        gpu_demand=gpu_demand(jobs),
        states=final_states(jobs),
        submissions=submissions(jobs, trace.origin_unix),
        queueing=queueing_delays(jobs),
        cluster_demand=cluster_demand(jobs, trace.origin_unix, capacity_gpus, capacity_name),
        users=user_concentration(jobs),
        recurrence=recurrence(jobs),
        vcs=vc_table(jobs),
    )


def distribution(values: Floats) -> Distribution:
    """Summarize a non-empty sample of seconds (ValueError when empty)."""
    if len(values) == 0:
        raise ValueError("distribution of an empty sample")
    v = np.sort(np.asarray(values, dtype=np.float64))
    quantiles = np.quantile(v, CDF_PROBABILITIES, method="inverted_cdf")
    n = len(v)

    def within(limit: float) -> float:
        return float(np.searchsorted(v, limit, side="right")) / n

    return Distribution(
        count=n,
        mean=float(v.mean()),
        median=float(np.median(v)),
        p95=float(np.quantile(v, 0.95, method="inverted_cdf")),
        share_within_1min=within(MINUTE_S),
        share_within_1h=within(HOUR_S),
        share_within_1day=within(DAY_S),
        quantiles=tuple(float(q) for q in quantiles),
    )


def demand_buckets(jobs: JobColumns) -> list[tuple[str, Mask]]:
    """(label, mask of GPU jobs) per demand bucket, in order; ``<1`` only if the trace has it."""
    return bucket_masks(jobs.num_gpus, jobs.shared)


def bucket_masks(num_gpus: Ints, shared: Mask) -> list[tuple[str, Mask]]:
    """(label, mask) per GPU-demand bucket of jobs asking for ``num_gpus`` GPUs (``shared``:
    a share of one GPU each), in order; ``<1`` only if some job shares a GPU."""
    out: list[tuple[str, Mask]] = []
    if shared.any():
        out.append((SHARED_BUCKET, shared))
    whole = (num_gpus > 0) & ~shared
    for label, low, high in WHOLE_BUCKETS:
        out.append((label, whole & (num_gpus >= low) & (num_gpus <= high)))
    return out


def overview(trace: Trace, jobs: JobColumns) -> Overview:
    """Job counts, time span and which canonical fields have any value (``jobs`` is
    ``job_columns(trace)``)."""
    table = trace.table
    present = tuple(n for n in table.column_names if table.column(n).null_count < table.num_rows)
    known = ~np.isnan(jobs.duration)
    gpu_time = jobs.gpu_time[known & jobs.gpu]
    n = len(jobs.submit)
    first = float(jobs.submit.min()) if n else None
    last = float(jobs.submit.max()) if n else None
    user_codes = jobs.user[jobs.user >= 0]
    return Overview(
        jobs=n,
        gpu_jobs=int(jobs.gpu.sum()),
        cpu_jobs=int((~jobs.gpu).sum()),
        shared_gpu_jobs=int(jobs.shared.sum()),
        jobs_with_duration=int(known.sum()),
        total_gpu_time_s=float(gpu_time.sum()) if known.any() else None,
        first_submit_s=first,
        last_submit_s=last,
        first_submit_utc=_utc(trace.origin_unix, first),
        last_submit_utc=_utc(trace.origin_unix, last),
        users=len(np.unique(user_codes)) if len(user_codes) else None,
        vcs=len(jobs.vc_labels) if (jobs.vc >= 0).any() else None,
        fields_present=present,
    )


def duration_cdfs(jobs: JobColumns) -> DurationCdfs | Unavailable:
    """Run-time CDFs of all jobs, GPU jobs and each GPU-demand bucket (known durations)."""
    known = ~np.isnan(jobs.duration)
    if not known.any():
        return Unavailable("the trace has no run times (duration)")
    return DurationCdfs(
        curves=_curves(jobs, jobs.duration, known),
        jobs_without_duration=int((~known).sum()),
    )


def gpu_demand(jobs: JobColumns) -> GpuDemand | Unavailable:
    """GPU jobs and GPU-time per demand bucket and per exact GPU count."""
    gpu = jobs.gpu
    n = int(gpu.sum())
    if n == 0:
        return Unavailable("the trace has no GPU jobs")
    known = gpu & ~np.isnan(jobs.duration)
    total = float(jobs.gpu_time[known].sum()) if known.any() else None

    def gpu_time(mask: Mask) -> tuple[float | None, float | None]:
        if total is None:
            return None, None
        value = float(jobs.gpu_time[mask & known].sum())
        return value, _ratio(value, total)

    buckets = []
    for label, mask in demand_buckets(jobs):
        count = int(mask.sum())
        buckets.append(DemandBucket(label, count, count / n, *gpu_time(mask)))
    levels = []
    for value in np.unique(jobs.gpus[gpu]):
        mask = gpu & (jobs.gpus == value)
        count = int(mask.sum())
        levels.append(DemandLevel(float(value), count, count / n, *gpu_time(mask)))
    return GpuDemand(
        gpu_jobs=n,
        buckets=tuple(buckets),
        levels=tuple(levels),
        gpu_time_s=total,
        gpu_jobs_without_duration=int((gpu & np.isnan(jobs.duration)).sum()),
    )


def final_states(jobs: JobColumns) -> FinalStates | Unavailable:
    """Per final state: jobs, GPU jobs and GPU-time, with their shares."""
    has = jobs.state >= 0
    if not has.any():
        return Unavailable("the trace has no final states (state)")
    n = int(has.sum())
    gpu = jobs.gpu & has
    n_gpu = int(gpu.sum())
    known = gpu & ~np.isnan(jobs.duration)
    total = float(jobs.gpu_time[known].sum()) if known.any() else None
    rows = []
    for code, label in enumerate(jobs.state_labels):
        mask = jobs.state == code
        count = int(mask.sum())
        if count == 0:
            continue
        gpu_count = int((mask & gpu).sum())
        value = float(jobs.gpu_time[mask & known].sum()) if total is not None else None
        rows.append(
            StateRow(
                state=label,
                jobs=count,
                share_jobs=count / n,
                gpu_jobs=gpu_count,
                share_gpu_jobs=_ratio(gpu_count, n_gpu) or 0.0,
                gpu_time_s=value,
                share_gpu_time=None if value is None or total is None else _ratio(value, total),
            )
        )
    rows.sort(key=lambda r: (-r.jobs, r.state))
    return FinalStates(tuple(rows), int((~has).sum()))


def submissions(jobs: JobColumns, origin_unix: float | None) -> Submissions | Unavailable:
    """Submissions per UTC hour of day and weekday; needs wall-clock times (``origin_unix``)."""
    if origin_unix is None:
        return Unavailable(
            "the trace has no wall-clock times (submit times are relative to an unknown origin)"
        )
    wall = origin_unix + jobs.submit
    days = np.floor(wall / DAY_S)
    hour = ((wall - days * DAY_S) // HOUR_S).astype(np.int64)
    weekday = ((days.astype(np.int64) + _EPOCH_WEEKDAY) % 7).astype(np.int64)

    def counts(index: Ints, mask: Mask, size: int) -> tuple[int, ...]:
        return tuple(int(c) for c in np.bincount(index[mask], minlength=size))

    everyone = np.ones(len(wall), dtype=bool)
    return Submissions(
        by_hour=counts(hour, everyone, 24),
        gpu_by_hour=counts(hour, jobs.gpu, 24),
        by_weekday=counts(weekday, everyone, 7),
        gpu_by_weekday=counts(weekday, jobs.gpu, 7),
        days_covered=float(jobs.submit.max() - jobs.submit.min()) / DAY_S,
    )


def queueing_delays(jobs: JobColumns) -> QueueingDelays | Unavailable:
    """``start - submit`` CDFs of jobs with an original start time."""
    known = ~np.isnan(jobs.start)
    if not known.any():
        return Unavailable("the trace has no original start times (start_time)")
    return QueueingDelays(
        curves=_curves(jobs, jobs.start - jobs.submit, known),
        jobs_without_start=int((~known).sum()),
    )


def cluster_demand(
    jobs: JobColumns,
    origin_unix: float | None,
    capacity_gpus: int | None = None,
    capacity_name: str | None = None,
) -> ClusterDemand | Unavailable:
    """GPUs of running GPU jobs over time (see :class:`ClusterDemand` for the basis)."""
    begin, finish, basis = _run_intervals(jobs)
    counted = jobs.gpu & ~np.isnan(begin) & ~np.isnan(finish)
    if not counted.any():
        return Unavailable("the trace has neither start/end times nor run times of GPU jobs")
    b, f, g = begin[counted], finish[counted], jobs.gpus[counted]
    times = np.concatenate([b, f])
    deltas = np.concatenate([g, -g])
    # Ends sort before starts at the same instant, so no tie inflates the running maximum.
    order = np.lexsort((deltas, times))
    times, levels = times[order], np.maximum(np.cumsum(deltas[order]), 0.0)
    lo, hi = float(times[0]), float(times[-1])
    span = max(hi - lo, 1.0)
    bins = step_bins(times, levels, origin_unix or 0.0)
    segment = np.diff(times)
    held = levels[:-1]
    total = float((segment * held).sum())
    utilization = over = None
    if capacity_gpus:
        utilization = total / (span * capacity_gpus)
        over = float(segment[held > capacity_gpus + 1e-9].sum()) / span
    return ClusterDemand(
        basis=basis,
        origin_unix=origin_unix,
        bin_s=bins.bin_s,
        first_bin_s=bins.first_bin_s,
        mean_gpus=tuple(float(x) for x in np.round(bins.mean, 6)),
        max_gpus=tuple(float(x) for x in np.round(bins.maxima, 6)),
        peak_gpus=float(np.round(levels.max(), 6)),
        time_avg_gpus=total / span,
        span_s=span,
        jobs_counted=int(counted.sum()),
        jobs_not_counted=int((jobs.gpu & ~counted).sum()),
        capacity_gpus=capacity_gpus,
        capacity_name=capacity_name,
        avg_utilization=utilization,
        share_time_over_capacity=over,
    )


def user_concentration(jobs: JobColumns) -> UserConcentration | Unavailable:
    """GPU-time share of the top 1/5/10% of users (see :class:`UserConcentration`)."""
    if not (jobs.user >= 0).any():
        return Unavailable("the trace has no users (user)")
    mask = jobs.gpu & (jobs.user >= 0) & ~np.isnan(jobs.duration)
    if not mask.any():
        return Unavailable("the trace has no GPU jobs with a user and a known run time")
    codes, per_job = np.unique(jobs.user[mask], return_inverse=True)
    gpu_time = np.bincount(per_job, weights=jobs.gpu_time[mask])
    counts = np.bincount(per_job).astype(np.float64)
    # Heaviest first; ties broken by more jobs, then by user code, so results are repeatable.
    order = np.lexsort((codes, -counts, -gpu_time))
    gpu_time, counts = gpu_time[order], counts[order]
    users = len(codes)
    total = float(gpu_time.sum())
    cum_time = np.concatenate([[0.0], np.cumsum(gpu_time)]) / (total or 1.0)
    cum_jobs = np.concatenate([[0.0], np.cumsum(counts)]) / counts.sum()
    top = []
    for percent in TOP_USER_PERCENTS:
        k = max(1, math.ceil(users * percent / 100))
        top.append(TopUsers(percent, k, float(cum_time[k]), float(cum_jobs[k])))
    picks = np.unique(np.round(np.linspace(0, users, min(CURVE_POINTS, users + 1))).astype(int))
    return UserConcentration(
        users=users,
        gpu_time_s=total,
        top=tuple(top),
        curve_users=tuple(float(k) / users for k in picks),
        curve_gpu_time=tuple(float(cum_time[k]) for k in picks),
    )


def recurrence(jobs: JobColumns) -> Recurrence | Unavailable:
    """Share of jobs whose (user, job name) pair occurred earlier in the trace."""
    if not (jobs.user >= 0).any():
        return Unavailable("the trace has no users (user)")
    if not (jobs.name >= 0).any():
        return Unavailable("the trace has no job names (job_name)")
    mask = (jobs.user >= 0) & (jobs.name >= 0)
    index = np.flatnonzero(mask)
    pairs = jobs.user[index] * (int(jobs.name.max()) + 1) + jobs.name[index]
    _, first = np.unique(pairs, return_index=True)
    recurrent = np.ones(len(index), dtype=bool)
    recurrent[first] = False
    share_time = None
    known = ~np.isnan(jobs.duration[index])
    if known.any():
        times = jobs.gpu_time[index]
        total = float(times[known].sum())
        share_time = _ratio(float(times[known & recurrent].sum()), total)
    n = len(index)
    return Recurrence(
        jobs_considered=n,
        recurrent_jobs=int(recurrent.sum()),
        share_recurrent=float(recurrent.sum()) / n,
        distinct_pairs=len(first),
        users=len(np.unique(jobs.user[index])),
        share_gpu_time_recurrent=share_time,
    )


def vc_table(jobs: JobColumns) -> VcTable | Unavailable:
    """Per-VC jobs, GPU jobs, GPU-time and GPU-job duration and queueing figures."""
    if not (jobs.vc >= 0).any():
        return Unavailable("the trace has no virtual clusters (vc)")
    known = ~np.isnan(jobs.duration)
    total = float(jobs.gpu_time[jobs.gpu & known].sum()) if known.any() else None
    queue_known = bool((~np.isnan(jobs.start)).any())
    with_vc = int((jobs.vc >= 0).sum())
    rows = []
    for code, label in enumerate(jobs.vc_labels):
        mask = jobs.vc == code
        gpu = mask & jobs.gpu
        durations = jobs.duration[gpu & known]
        queues = (jobs.start - jobs.submit)[gpu & ~np.isnan(jobs.start)]
        value = float(jobs.gpu_time[gpu & known].sum()) if total is not None else None
        rows.append(
            VcRow(
                vc=label,
                jobs=int(mask.sum()),
                share_jobs=float(mask.sum()) / with_vc,
                gpu_jobs=int(gpu.sum()),
                gpu_time_s=value,
                share_gpu_time=None if value is None or total is None else _ratio(value, total),
                mean_duration_s=float(durations.mean()) if len(durations) else None,
                median_duration_s=float(np.median(durations)) if len(durations) else None,
                mean_queue_s=float(queues.mean()) if len(queues) else None,
            )
        )
    rows.sort(key=lambda r: (-(r.gpu_time_s or 0.0), -r.jobs, r.vc))
    return VcTable(tuple(rows), int((jobs.vc < 0).sum()), queue_known)


def _curves(jobs: JobColumns, values: Floats, known: Mask) -> dict[str, Distribution]:
    """CDFs of ``values`` for all jobs, GPU jobs and non-empty demand buckets."""
    return sample_curves(values, known, jobs.num_gpus, jobs.shared)


def sample_curves(
    values: Floats, known: Mask, num_gpus: Ints, shared: Mask
) -> dict[str, Distribution]:
    """CDFs of the ``known`` entries of ``values``: "all jobs", "GPU jobs" (``num_gpus`` > 0),
    then each non-empty GPU-demand bucket (:func:`bucket_masks`), labelled "<bucket> GPU"."""
    groups: list[tuple[str, Mask]] = [("all jobs", known), ("GPU jobs", known & (num_gpus > 0))]
    groups += [(f"{label} GPU", known & mask) for label, mask in bucket_masks(num_gpus, shared)]
    return {label: distribution(values[mask]) for label, mask in groups if mask.any()}


def _run_intervals(jobs: JobColumns) -> tuple[Floats, Floats, str]:
    """Each job's (begin, end) of running; NaN when it never ran or is unknown.

    With any start time in the trace, a job without one never ran (a cancelled or pending job);
    without start times at all, jobs are placed at their submission for their duration.
    """
    if (~np.isnan(jobs.start)).any():
        end = np.where(np.isnan(jobs.end), jobs.start + jobs.duration, jobs.end)
        return jobs.start, end, "start/end"
    return jobs.submit, jobs.submit + jobs.duration, "submit+duration"


@dataclass(frozen=True)
class StepBins:
    """A step function averaged and maximized per bin: bin i covers ``[first_bin_s +
    i*bin_s, first_bin_s + (i+1)*bin_s)``."""

    bin_s: float
    first_bin_s: float
    mean: Floats
    maxima: Floats


def step_bins(times: Floats, levels: Floats, shift: float = 0.0) -> StepBins:
    """Bins over the step function that is ``levels[i]`` from ``times[i]`` (sorted, at least
    one) to the next time, from the first time to the last: the narrowest width of
    :data:`DEMAND_BIN_CHOICES_S` giving at most :data:`MAX_DEMAND_BINS` bins, aligned to
    multiples of the width after adding ``shift`` (a Unix origin aligns them to UTC)."""
    lo, hi = float(times[0]), float(times[-1])
    span = max(hi - lo, 1.0)
    bin_s = next(
        (float(w) for w in DEMAND_BIN_CHOICES_S if span / w <= MAX_DEMAND_BINS),
        float(DEMAND_BIN_CHOICES_S[-1]),
    )
    first = math.floor((lo + shift) / bin_s) * bin_s - shift
    n_bins = max(1, math.ceil((hi - first) / bin_s))
    edges = first + bin_s * np.arange(n_bins + 1, dtype=np.float64)
    integral = _step_integral(times, levels, edges)
    mean = np.diff(integral) / bin_s
    maxima = _step_level(times, levels, edges[:-1])
    inside = np.searchsorted(edges, times, side="right") - 1
    np.maximum.at(maxima, np.clip(inside, 0, n_bins - 1), levels)
    return StepBins(bin_s, first, mean, maxima)


def _step_level(times: Floats, levels: Floats, at: Floats) -> Floats:
    """The step function's value at each of ``at`` (0 before the first step)."""
    index = np.searchsorted(times, at, side="right") - 1
    return np.where(index >= 0, levels[np.clip(index, 0, None)], 0.0)


def _step_integral(times: Floats, levels: Floats, at: Floats) -> Floats:
    """The integral of the step function from -inf to each of ``at``."""
    cumulative = np.concatenate([[0.0], np.cumsum(np.diff(times) * levels[:-1])])
    index = np.searchsorted(times, at, side="right") - 1
    safe = np.clip(index, 0, None)
    tail = (at - times[safe]) * levels[safe]
    return np.where(index >= 0, cumulative[safe] + tail, 0.0)


def job_columns(trace: Trace) -> JobColumns:
    """The columns of ``trace`` that the characterization reads, as arrays."""
    table = trace.table

    def floats(name: str) -> Floats:
        column = pc.cast(table.column(name), pa.float64())
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)

    num_gpus = np.asarray(table.column("num_gpus").to_numpy(), dtype=np.int64)
    milli = floats("gpu_milli")
    share = np.where(np.isnan(milli), 1.0, milli / 1000.0)
    state, state_labels = _codes(table.column("state"))
    vc, vc_labels = _codes(table.column("vc"))
    return JobColumns(
        submit=floats("submit_time"),
        num_gpus=num_gpus,
        gpus=np.asarray(num_gpus * share, dtype=np.float64),
        shared=(num_gpus > 0) & (share < 1.0),
        duration=floats("duration"),
        start=floats("start_time"),
        end=floats("end_time"),
        user=_codes(table.column("user"))[0],
        name=_codes(table.column("job_name"))[0],
        state=state,
        state_labels=state_labels,
        vc=vc,
        vc_labels=vc_labels,
    )


def _codes(column: pa.ChunkedArray) -> tuple[Ints, tuple[str, ...]]:
    """Integer codes of a string column (-1 for null or empty) and the label of each code."""
    # One array before encoding, so that a single dictionary covers every chunk.
    whole = column.combine_chunks()
    blank = pc.if_else(pc.equal(whole, ""), pa.scalar(None, pa.string()), whole)
    encoded = pc.dictionary_encode(blank)
    labels = tuple(str(x) for x in encoded.dictionary.to_pylist())
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    return np.asarray(codes, dtype=np.int64), labels


def _ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def _utc(origin_unix: float | None, seconds: float | None) -> str | None:
    if origin_unix is None or seconds is None:
        return None
    stamp = np.datetime64(round(origin_unix + seconds), "s")
    return str(stamp).replace("T", " ") + " UTC"
