"""The headline figures of a run (``summary.json``), computed from its per-job table.

Every run's summary holds a ``deadlines`` block (:class:`DeadlineFigures`, keys
:data:`DEADLINE_KEYS`): all null in a run whose trace gives no job a deadline (deadlines not
modelled, never 0).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from dlsched.cluster.topology import BLOCK, RACK, TIER_NAMES


def _stat(values: np.ndarray, fn: str) -> float | None:
    if values.size == 0:
        return None
    if fn == "mean":
        return float(np.mean(values))
    return float(np.percentile(values, {"median": 50, "p95": 95, "p99": 99}[fn]))


def summarize(
    jobs: pa.Table,
    partition_gpus: dict[str, int],
    policy: str,
    placement: str,
    sim_wall_s: float,
    extra: dict[str, Any] | None = None,
    idle_w_per_gpu: float = 0.0,
    busy_extra_w_per_gpu: float = 0.0,
    powered_gpus: Sequence[tuple[float, int]] | None = None,
) -> dict[str, Any]:
    """Summary of the finished jobs of a run. Times in seconds. ``gpu_utilization`` is GPU-time
    held (including restore stalls) over GPUs × makespan, counting the GPUs of the partitions
    that ran jobs (so a run restricted to some VCs is not diluted by the others);
    ``cluster_gpu_utilization`` counts every GPU. The makespan runs from the first submission
    to the last completion. Statistics of an empty set are null. Energy: each powered GPU slot
    draws ``idle_w_per_gpu``, plus ``busy_extra_w_per_gpu`` per GPU-second held by jobs.
    ``powered_gpus`` lists ``(time, GPU slots powered from then on)`` change points in time
    order (first at -inf); without it every node is powered for the whole makespan.
    ``energy_always_on_kwh`` is the same run's energy had every node stayed on. ``deadlines``
    is :func:`deadline_figures` of ``jobs`` (a dict; all null without deadlines); jobs a policy
    declined are among ``jobs_set_aside``, with its reasons."""
    status = jobs.column("status").to_numpy(zero_copy_only=False)
    done = status == "finished"
    col = {
        name: jobs.column(name).to_numpy(zero_copy_only=False)
        for name in ("submit_s", "first_start_s", "end_s", "jct_s", "queue_s", "run_time_s")
    }
    jct = col["jct_s"][done]
    queue = col["queue_s"][done]
    run = col["run_time_s"][done]
    gpu_s = jobs.column("gpu_seconds").to_numpy()[done]
    start, end = makespan_window(jobs)
    makespan = end - start
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(run > 0, jct / run, np.nan)
    slowdown = slowdown[np.isfinite(slowdown)]
    reasons = jobs.column("reason").to_pylist()
    set_aside = Counter(r for r, d in zip(reasons, done, strict=True) if not d and r)
    total_gpus = sum(partition_gpus.values())
    partitions = jobs.column("partition").to_pylist()
    used = {p for p, d in zip(partitions, done, strict=True) if d}
    used_gpus = sum(g for name, g in partition_gpus.items() if name in used)

    always_on_idle_j = total_gpus * idle_w_per_gpu * makespan
    if powered_gpus is None:
        idle_j = always_on_idle_j
    else:
        idle_j = idle_w_per_gpu * integrate_steps(powered_gpus, start, end)
    busy_j = float(gpu_s.sum()) * busy_extra_w_per_gpu

    def utilization(gpus: int) -> float | None:
        return float(gpu_s.sum() / (gpus * makespan)) if makespan > 0 and gpus else None

    summary: dict[str, Any] = {
        "policy": policy,
        "placement": placement,
        "jobs": int(done.sum()),
        "jobs_in_trace": jobs.num_rows,
        "jobs_set_aside": int((~done).sum()),
        "set_aside_reasons": dict(sorted(set_aside.items())),
        "avg_jct_s": _stat(jct, "mean"),
        "median_jct_s": _stat(jct, "median"),
        "p95_jct_s": _stat(jct, "p95"),
        "p99_jct_s": _stat(jct, "p99"),
        "avg_queue_s": _stat(queue, "mean"),
        "median_queue_s": _stat(queue, "median"),
        "p95_queue_s": _stat(queue, "p95"),
        "makespan_s": makespan,
        "gpu_utilization": utilization(used_gpus),
        "cluster_gpu_utilization": utilization(total_gpus),
        "avg_slowdown": _stat(slowdown, "mean"),
        "preemptions": int(jobs.column("preemptions").to_numpy()[done].sum()),
        "restarts": int(jobs.column("restarts").to_numpy()[done].sum()),
        "gpu_seconds": float(gpu_s.sum()),
        "lost_gpu_seconds": float(jobs.column("lost_gpu_seconds").to_numpy()[done].sum()),
        "energy_kwh": (idle_j + busy_j) / 3.6e6,
        "energy_idle_kwh": idle_j / 3.6e6,
        "energy_busy_kwh": busy_j / 3.6e6,
        "energy_always_on_kwh": (always_on_idle_j + busy_j) / 3.6e6,
        "total_gpus": total_gpus,
        "partition_gpus_used": used_gpus,
        "sim_wall_s": sim_wall_s,
        "deadlines": deadline_figures(jobs).as_dict(),
    }
    if extra:
        summary.update(extra)
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v)
        for k, v in summary.items()
    }


@dataclass(frozen=True)
class DeadlineFigures:
    """The ``deadlines`` block of a summary: how the jobs with a deadline fared.

    Every field is None when no job of the run has a deadline (deadlines not modelled); else
    the counts are numbers (0 a real 0) and each of ``jobs_with_deadline`` jobs is exactly one
    of ``met`` (finished by its deadline: end ≤ deadline), ``missed_late`` (finished after
    it), ``declined`` (refused by its policy's admission control) or ``not_finished`` (set aside
    or unfinished, not declined). ``satisfaction_ratio`` is ``met / jobs_with_deadline``
    (ElasticFlow's deadline satisfactory ratio: best-effort jobs excluded, a declined or
    set-aside job a miss). ``tardiness_mean_s`` and ``tardiness_p99_s`` (numpy's linear
    percentile) are over the finished jobs with a deadline, a met one's tardiness 0; None when
    none finished. ``best_effort_jobs`` counts the jobs without a deadline;
    ``best_effort_avg_jct_s`` is the mean JCT of those that finished (None if none did)."""

    jobs_with_deadline: int | None = None
    met: int | None = None
    missed_late: int | None = None
    declined: int | None = None
    not_finished: int | None = None
    satisfaction_ratio: float | None = None
    tardiness_mean_s: float | None = None
    tardiness_p99_s: float | None = None
    best_effort_jobs: int | None = None
    best_effort_avg_jct_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The block as ``summary.json`` holds it (keys :data:`DEADLINE_KEYS`, in order)."""
        return dataclasses.asdict(self)


DEADLINE_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(DeadlineFigures))
"""The keys of a summary's ``deadlines`` block, in order."""


def deadline_figures(jobs: pa.Table) -> DeadlineFigures:
    """The :class:`DeadlineFigures` of a jobs table (:data:`dlsched.metrics.jobs.JOBS_SCHEMA`).
    A table without a ``deadline`` column (from before deadlines), or in which no job has one
    (null or NaN), gives all None. A job counts as declined only if the table says so (a
    ``declined`` column); non-finite tardiness and JCT values are left out of the statistics."""
    names = jobs.column_names
    if "deadline" not in names:
        return DeadlineFigures()
    deadline = _floats(jobs, "deadline")
    has = ~np.isnan(deadline)
    if not has.any():
        return DeadlineFigures()
    done = jobs.column("status").to_numpy(zero_copy_only=False) == "finished"
    end = _floats(jobs, "end_s")
    if "declined" in names:
        declined = np.asarray(
            jobs.column("declined").fill_null(False).to_numpy(zero_copy_only=False), dtype=bool
        )
    else:
        declined = np.zeros(jobs.num_rows, dtype=bool)
    with np.errstate(invalid="ignore"):
        late_by = end - deadline
    timed = has & done & ~np.isnan(late_by)
    met = timed & (late_by <= 0)
    late = timed & (late_by > 0)
    refused = has & ~done & declined
    tardiness = np.maximum(late_by[timed], 0.0)
    tardiness = tardiness[np.isfinite(tardiness)]
    jct = _floats(jobs, "jct_s")[done & ~has]
    jct = jct[np.isfinite(jct)]
    n = int(has.sum())
    return DeadlineFigures(
        jobs_with_deadline=n,
        met=int(met.sum()),
        missed_late=int(late.sum()),
        declined=int(refused.sum()),
        # Finished jobs whose end is unknown (NaN) are neither met nor late: not finished.
        not_finished=n - int(met.sum()) - int(late.sum()) - int(refused.sum()),
        satisfaction_ratio=float(met.sum()) / n,
        tardiness_mean_s=_stat(tardiness, "mean"),
        tardiness_p99_s=_stat(tardiness, "p99"),
        best_effort_jobs=int((~has).sum()),
        best_effort_avg_jct_s=_stat(jct, "mean"),
    )


def _floats(jobs: pa.Table, name: str) -> np.ndarray:
    """Column ``name`` of ``jobs`` as float64, nulls as NaN."""
    return np.asarray(
        jobs.column(name).cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64
    )


def topology_figures(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The topology figures of a run's ``summary``: ``fragmented_jobs`` as recorded,
    ``multi_node_starts`` (rigid starts on more than one node) and ``rack_spanning_share`` (of
    those, the share on more than one rack), both from ``starts_by_tier``. A figure the run did
    not model (no topology-aware placement, no comm model, a run from before them) is None,
    never 0; so is the share of a run in which no job started on several nodes."""
    starts = summary.get("starts_by_tier")
    multi = spanning = None
    if isinstance(starts, Mapping):
        multi = sum(int(starts.get(tier, 0)) for tier in TIER_NAMES[RACK:])
        spanning = sum(int(starts.get(tier, 0)) for tier in TIER_NAMES[BLOCK:])
    return {
        "fragmented_jobs": summary.get("fragmented_jobs"),
        "multi_node_starts": multi,
        "rack_spanning_share": spanning / multi if spanning is not None and multi else None,
    }


def makespan_window(jobs: pa.Table) -> tuple[float, float]:
    """First submission and last completion of the finished jobs ((0, 0) if none)."""
    done = jobs.column("status").to_numpy(zero_copy_only=False) == "finished"
    if not done.any():
        return 0.0, 0.0
    submit = jobs.column("submit_s").to_numpy(zero_copy_only=False)[done]
    end = jobs.column("end_s").to_numpy(zero_copy_only=False)[done]
    return float(np.min(submit)), float(np.max(end))


def integrate_steps(points: Sequence[tuple[float, float]], start: float, end: float) -> float:
    """Integral over ``[start, end]`` of the step function that takes value ``v`` from ``t``
    on for each ``(t, v)`` of ``points`` (time-ordered; 0 before the first)."""
    total = 0.0
    for k, (t, value) in enumerate(points):
        nxt = points[k + 1][0] if k + 1 < len(points) else math.inf
        lo, hi = max(t, start), min(nxt, end)
        if hi > lo:
            total += value * (hi - lo)
    return total


def baseline_comparison(managed: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """How a power-managed run compares with the same run with every node always on: energy
    saved (kWh and fraction of the baseline's), and queueing delay and JCT added (seconds and
    fraction). Fractions are null when the baseline's figure is 0 or missing."""

    def fraction(delta: float | None, base: float | None) -> float | None:
        return None if delta is None or not base else delta / base

    def diff(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a - b

    saved = diff(baseline["energy_kwh"], managed["energy_kwh"])
    extra_queue = diff(managed["avg_queue_s"], baseline["avg_queue_s"])
    extra_jct = diff(managed["avg_jct_s"], baseline["avg_jct_s"])
    return {
        "baseline_energy_kwh": baseline["energy_kwh"],
        "energy_saved_vs_baseline_kwh": saved,
        "energy_saved_vs_baseline_fraction": fraction(saved, baseline["energy_kwh"]),
        "baseline_avg_queue_s": baseline["avg_queue_s"],
        "extra_queue_s": extra_queue,
        "extra_queue_fraction": fraction(extra_queue, baseline["avg_queue_s"]),
        "baseline_avg_jct_s": baseline["avg_jct_s"],
        "extra_jct_fraction": fraction(extra_jct, baseline["avg_jct_s"]),
    }


def colocation_figures(jobs: pa.Table, pairs: int | None) -> dict[str, Any]:
    """The ``colocation`` block of a summary. ``pairs``: how many times two jobs began
    time-sharing GPUs, None when the run's policy does not co-locate (then every figure is
    None). ``jobs_colocated``: finished jobs that shared at some point; ``colocated_s`` and
    ``interference_s``: their seconds shared and of progress lost to interference, summed;
    ``mean_shared_speed``: 1 − lost / shared over all of them (None when nobody shared)."""
    keys = ("pairs", "jobs_colocated", "colocated_s", "interference_s", "mean_shared_speed")
    if pairs is None or "colocated_s" not in jobs.column_names:
        return dict.fromkeys(keys)
    done = jobs.column("status").to_numpy(zero_copy_only=False) == "finished"
    shared = _floats(jobs, "colocated_s")[done]
    lost = _floats(jobs, "interference_s")[done]
    total, lost_total = float(np.nansum(shared)), float(np.nansum(lost))
    return {
        "pairs": pairs,
        "jobs_colocated": int((shared > 0).sum()),
        "colocated_s": total,
        "interference_s": lost_total,
        "mean_shared_speed": 1.0 - lost_total / total if total > 0 else None,
    }
