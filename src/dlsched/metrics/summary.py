"""The headline figures of a run (``summary.json``), computed from its per-job table."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa


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
) -> dict[str, Any]:
    """Summary of the finished jobs of a run. Times in seconds. ``gpu_utilization`` is GPU-time
    held (including restore stalls) over GPUs × makespan, counting the GPUs of the partitions
    that ran jobs (so a run restricted to some VCs is not diluted by the others);
    ``cluster_gpu_utilization`` counts every GPU. The makespan runs from the first submission
    to the last completion. Statistics of an empty set are null. Energy: every node is powered
    for the whole makespan (no power management), drawing ``idle_w_per_gpu`` per GPU slot, plus
    ``busy_extra_w_per_gpu`` per GPU-second held by jobs."""
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
    if done.any():
        makespan = float(np.max(col["end_s"][done]) - np.min(col["submit_s"][done]))
    else:
        makespan = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(run > 0, jct / run, np.nan)
    slowdown = slowdown[np.isfinite(slowdown)]
    reasons = jobs.column("reason").to_pylist()
    set_aside = Counter(r for r, d in zip(reasons, done, strict=True) if not d and r)
    total_gpus = sum(partition_gpus.values())
    partitions = jobs.column("partition").to_pylist()
    used = {p for p, d in zip(partitions, done, strict=True) if d}
    used_gpus = sum(g for name, g in partition_gpus.items() if name in used)

    idle_j = total_gpus * idle_w_per_gpu * makespan
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
        "total_gpus": total_gpus,
        "partition_gpus_used": used_gpus,
        "sim_wall_s": sim_wall_s,
    }
    if extra:
        summary.update(extra)
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v)
        for k, v in summary.items()
    }
