"""Statistics of a Helios-format trace, and the generated-versus-published table of the
Helios-like generator (``calibration.json``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dlsched.trace.schema import Trace
from dlsched.trace.synth.data import STATES, ClusterTargets

TOP_USER_FRACTION = 0.1


def recurrence(users: list[str | None], names: list[str | None]) -> float:
    """Share of jobs (in trace order) whose user submitted a job of the same name before.

    Jobs without a user or name never recur. 0 for an empty trace.
    """
    seen: set[tuple[str, str]] = set()
    hits = 0
    for user, name in zip(users, names, strict=True):
        if user is None or name is None:
            continue
        key = (user, name)
        hits += key in seen
        seen.add(key)
    return hits / len(users) if users else 0.0


def name_stem(name: str | None) -> str | None:
    """A job name without its last ``_``-separated part (the variant tag)."""
    return None if name is None else name.rsplit("_", 1)[0]


def top_user_share(users: list[str | None], gpu_seconds: np.ndarray, fraction: float) -> float:
    """Share of all GPU-time used by the ``fraction`` of users (rounded up) who used the most."""
    per_user: dict[str | None, float] = {}
    for user, used in zip(users, gpu_seconds.tolist(), strict=True):
        per_user[user] = per_user.get(user, 0.0) + used
    totals = sorted(per_user.values(), reverse=True)
    if not totals or sum(totals) <= 0:
        return 0.0
    top = max(1, math.ceil(fraction * len(totals)))
    return sum(totals[:top]) / sum(totals)


def trace_statistics(trace: Trace, days: float) -> dict[str, float]:
    """The GPU-job statistics the Helios summary publishes, plus user concentration and
    recurrence, for the GPU jobs of ``trace`` spanning ``days`` days.

    Keys: ``gpu_jobs_per_day``, ``avg_run_s``, ``median_run_s``, ``avg_gpus``,
    ``gpu_time_per_job_s``, ``share_<STATE>`` and ``gpu_time_share_<STATE>`` for COMPLETED,
    CANCELLED, FAILED, ``top10_users_gpu_time_share``, ``recurrence_same_name`` and
    ``recurrence_same_stem`` (same name up to the variant tag). Empty sets give NaN.
    """
    table = trace.table
    gpus_all = table.column("num_gpus").to_numpy().astype(np.float64)
    keep = gpus_all > 0
    gpus = gpus_all[keep]
    run = table.column("duration").to_numpy(zero_copy_only=False).astype(np.float64)[keep]
    states = np.asarray(table.column("state").to_pylist(), dtype=object)[keep]
    users = [u for u, k in zip(table.column("user").to_pylist(), keep, strict=True) if k]
    names = [n for n, k in zip(table.column("job_name").to_pylist(), keep, strict=True) if k]
    used = gpus * run
    n = gpus.size
    stats: dict[str, float] = {
        "gpu_jobs_per_day": n / days if days > 0 else math.nan,
        "avg_run_s": float(np.mean(run)) if n else math.nan,
        "median_run_s": float(np.median(run)) if n else math.nan,
        "avg_gpus": float(np.mean(gpus)) if n else math.nan,
        "gpu_time_per_job_s": float(np.mean(used)) if n else math.nan,
    }
    total = float(used.sum())
    for state in STATES:
        mask = states == state
        stats[f"share_{state}"] = float(np.mean(mask)) if n else math.nan
        stats[f"gpu_time_share_{state}"] = float(used[mask].sum()) / total if total else math.nan
    stats["top10_users_gpu_time_share"] = top_user_share(users, used, TOP_USER_FRACTION)
    stats["recurrence_same_name"] = recurrence(users, names)
    stats["recurrence_same_stem"] = recurrence(users, [name_stem(x) for x in names])
    return stats


def published_statistics(targets: ClusterTargets) -> dict[str, float | None]:
    """The published counterparts of :func:`trace_statistics` (None where none is published)."""
    published: dict[str, float | None] = {
        "gpu_jobs_per_day": targets.jobs_per_day,
        "avg_run_s": targets.avg_run_s,
        "median_run_s": targets.median_run_s,
        "avg_gpus": targets.avg_gpus,
        "gpu_time_per_job_s": targets.gpu_time_per_job,
    }
    for state in STATES:
        published[f"share_{state}"] = targets.state_shares[state]
        published[f"gpu_time_share_{state}"] = targets.gpu_time_shares[state]
    published["top10_users_gpu_time_share"] = None
    published["recurrence_same_name"] = None
    published["recurrence_same_stem"] = None
    return published


def comparison_rows(
    generated: dict[str, float], published: dict[str, float | None]
) -> list[dict[str, Any]]:
    """One row per statistic: ``name``, ``generated``, ``published`` and ``relative_error``
    ((generated - published) / published; None without a published value)."""
    rows: list[dict[str, Any]] = []
    for name, value in generated.items():
        target = published.get(name)
        error = None if target is None or target == 0 else (value - target) / target
        rows.append(
            {
                "name": name,
                "generated": _finite(value),
                "published": target,
                "relative_error": _finite(error),
            }
        )
    return rows


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)
