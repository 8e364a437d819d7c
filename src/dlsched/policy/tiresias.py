"""Tiresias: discretized two-dimensional least-attained-service (Gu et al., NSDI'19).

Attained service is GPUs × time held. Jobs sit in queues split at ``thresholds`` (GPU-seconds);
a lower queue always runs first, and jobs inside a queue run in submit order. Decisions happen
every ``round_s`` seconds and may preempt. Defaults follow the Lucid simulation of Tiresias (two
queues split at 18,000 GPU-seconds, 60-s rounds). Tiresias's starvation guard (promoting jobs that
waited too long) is not modelled.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from dlsched.policy.base import Key, Policy
from dlsched.scheduler.view import JobView


@dataclass(frozen=True)
class Tiresias(Policy):
    name = "tiresias"
    description = "2D least-attained-service, discretized queues (default 2 at 18,000 GPU-s)"
    preemptive = True
    thresholds: tuple[float, ...] = (18_000.0,)
    round_s: float = 60.0

    def __post_init__(self) -> None:
        if list(self.thresholds) != sorted(self.thresholds) or any(t <= 0 for t in self.thresholds):
            raise ValueError(f"thresholds must be positive and increasing: {self.thresholds}")
        if self.round_s <= 0:
            raise ValueError(f"round_s must be positive: {self.round_s}")

    @property
    def interval(self) -> float | None:
        return self.round_s

    def key(self, job: JobView, now: float) -> Key:
        return (bisect_right(self.thresholds, job.attained_service(now)), job.submit_time, job.seq)

    def next_change(self, job: JobView, now: float) -> float | None:
        attained = job.attained_service(now)
        thresholds = self.thresholds
        # Most running jobs of a long trace sit in the last queue: no bisection for them.
        if not thresholds or attained >= thresholds[-1] or job.gpus == 0:
            return None
        return now + (thresholds[bisect_right(thresholds, attained)] - attained) / job.gpus
