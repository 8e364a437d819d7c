"""Tiresias: discretized two-dimensional least-attained-service (Gu et al., NSDI'19).

Attained service is GPUs × time held. Jobs sit in queues split at ``thresholds`` (GPU-seconds);
a lower queue always runs first. Decisions happen every ``round_s`` seconds and may preempt.
Defaults follow the Lucid simulation of Tiresias (two queues split at 18,000 GPU-seconds, 60-s
rounds). Tiresias's starvation guard (promoting jobs that waited too long) is not modelled.

Order inside a queue (``order``):

- ``running`` (default): running jobs first, then waiting ones, each in submit order. This is
  the rule of the Tiresias authors' simulator (SymbioticLab/Tiresias, ``simulator/run_sim.py``,
  ``dlas_sim_jobs``: after each decision every queue puts its running jobs ahead of its pending
  ones), so a waiting job never displaces a running job of its own queue: only a job of a lower
  queue can preempt.
- ``submit``: submit order alone, running or not, so an older waiting job displaces younger
  running jobs of its own queue when it does not fit otherwise (dlsched before 2026-11-25).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from dlsched.policy.base import Key, Policy
from dlsched.scheduler.view import JobView

ORDERS = ("running", "submit")


@dataclass(frozen=True)
class Tiresias(Policy):
    name = "tiresias"
    description = (
        "2D least-attained-service, discretized queues (default 2 at 18,000 GPU-s); "
        "order=running|submit inside a queue"
    )
    preemptive = True
    thresholds: tuple[float, ...] = (18_000.0,)
    round_s: float = 60.0
    order: str = "running"

    def __post_init__(self) -> None:
        if list(self.thresholds) != sorted(self.thresholds) or any(t <= 0 for t in self.thresholds):
            raise ValueError(f"thresholds must be positive and increasing: {self.thresholds}")
        if self.round_s <= 0:
            raise ValueError(f"round_s must be positive: {self.round_s}")
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}: got {self.order!r}")

    @property
    def interval(self) -> float | None:
        return self.round_s

    def key(self, job: JobView, now: float) -> Key:
        """(queue, submit time, seq) under ``order=submit``; (queue, 0 if running else 1,
        submit time, seq) under ``order=running``. A waiting job's key stays fixed while it
        waits (its attained service does not grow), as the scheduler requires."""
        queue = bisect_right(self.thresholds, job.attained_service(now))
        if self.order == "submit":
            return (queue, job.submit_time, job.seq)
        return (queue, 0 if job.running else 1, job.submit_time, job.seq)

    def next_change(self, job: JobView, now: float) -> float | None:
        attained = job.attained_service(now)
        thresholds = self.thresholds
        # Most running jobs of a long trace sit in the last queue: no bisection for them.
        if not thresholds or attained >= thresholds[-1] or job.gpus == 0:
            return None
        return now + (thresholds[bisect_right(thresholds, attained)] - attained) / job.gpus
