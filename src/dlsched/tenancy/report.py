"""What a run with queues reports per tenant (ClusterQueue), in ``summary.json``.

- ``tenants``: per ClusterQueue, its finished jobs' average JCT, queueing and slowdown (JCT ÷
  run time), its nominal GPU quota, the GPUs it held and borrowed on average over the run
  (admission to finish or eviction, time-weighted), the GPUs it lent (the cohort tree's average
  borrowing, at most its queues' average unused nominal quota, split in proportion to each
  queue's average unused nominal quota — an attribution, as quota lent is not tied to one
  lender), and its evictions by cause;
- ``preemptions_by_cause``: evictions by admission (of running jobs, counted in
  ``preemptions`` too, and of admitted jobs that had not started yet), by cause
  (``priority``: within a queue, ``reclaim``: quota taken back by its owner, ``fair_share``:
  fair-sharing preemption);
- ``tenant_fairness_jain``: Jain's index over the tenants' dominant shares (their average GPU
  share of the cluster) each divided by its fair share (its nominal quota's share of all
  nominal quota): 1 when every tenant got its entitlement in proportion;
- ``tenant_fair_share_max_deviation``: the largest ``|share - fair share|``.

All of them are null in a run without queues.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dlsched.tenancy.admission import CAUSES
from dlsched.tenancy.stage import AdmissionStage


def _mean(totals: np.ndarray, counts: np.ndarray, i: int) -> float | None:
    """Entry ``i`` of ``totals / counts``, None (not 0) for no values."""
    return float(totals[i] / counts[i]) if counts[i] else None


def jain(values: list[float]) -> float | None:
    """Jain's fairness index ``(Σx)² / (n Σx²)`` (None for no values or all zero)."""
    total = sum(v * v for v in values)
    if not values or total == 0:
        return None
    return sum(values) ** 2 / (len(values) * total)


def tenant_summary(
    jobs: pa.Table, stage: AdmissionStage, end: float, cluster_gpus: float
) -> dict[str, Any]:
    """The tenant figures of a run (module docstring); ``jobs`` is jobs.parquet's table, in
    trace row order."""
    per_queue = stage.report(end)
    row_cq = np.array(stage.row_cq, dtype=np.int64)
    finished = pc.equal(jobs.column("status"), "finished").to_numpy(zero_copy_only=False)
    jct = jobs.column("jct_s").to_numpy(zero_copy_only=False).astype(float)
    queue = jobs.column("queue_s").to_numpy(zero_copy_only=False).astype(float)
    run = jobs.column("run_time_s").to_numpy(zero_copy_only=False).astype(float)
    n = len(stage.names)
    mine = finished & (row_cq >= 0)
    ran = mine & (run > 0)
    count = np.bincount(row_cq[mine], minlength=n)
    jct_sum = np.bincount(row_cq[mine], weights=jct[mine], minlength=n)
    queue_sum = np.bincount(row_cq[mine], weights=queue[mine], minlength=n)
    ran_count = np.bincount(row_cq[ran], minlength=n)
    slowdown_sum = np.bincount(row_cq[ran], weights=jct[ran] / run[ran], minlength=n)
    for cq, name in enumerate(stage.names):
        per_queue[name].update(
            jobs=int(count[cq]),
            avg_jct_s=_mean(jct_sum, count, cq),
            avg_queue_s=_mean(queue_sum, count, cq),
            avg_slowdown=_mean(slowdown_sum, ran_count, cq),
        )
    _lent(stage, per_queue)
    nominal_total = sum(q["nominal_gpus"] for q in per_queue.values())
    shares: list[float] = []
    deviations: list[float] = []
    for q in per_queue.values():
        used = q["used_gpus_avg"]
        if used is None or not nominal_total or not cluster_gpus or not q["nominal_gpus"]:
            continue
        share = used / cluster_gpus
        fair = q["nominal_gpus"] / nominal_total
        q["dominant_share"] = share
        q["fair_share"] = fair
        shares.append(share / fair)
        deviations.append(abs(share - fair))
    by_cause = {c: sum(q["preemptions"][c] for q in per_queue.values()) for c in CAUSES}
    return {
        "tenants": per_queue,
        "preemptions_by_cause": by_cause,
        "tenant_fairness_jain": jain(shares),
        "tenant_fair_share_max_deviation": max(deviations) if deviations else None,
    }


def _lent(stage: AdmissionStage, per_queue: dict[str, dict[str, Any]]) -> None:
    """Attribute each cohort tree's average borrowing to its queues (module docstring)."""
    quota = stage.admission.quota
    trees: dict[int, list[str]] = {}
    for cq, name in enumerate(stage.names):
        trees.setdefault(quota.root[cq], []).append(name)
    for names in trees.values():
        qs = [per_queue[n] for n in names]
        if any(q["used_gpus_avg"] is None for q in qs):
            for q in qs:
                q["lent_gpus_avg"] = None
            continue
        borrowed = sum(q["borrowed_gpus_avg"] for q in qs)
        unused = [
            max(0.0, q["nominal_gpus"] - (q["used_gpus_avg"] - q["borrowed_gpus_avg"])) for q in qs
        ]
        total = sum(unused)
        for q, u in zip(qs, unused, strict=True):
            q["lent_gpus_avg"] = min(borrowed, total) * u / total if total > 0 else 0.0
