"""Shortest remaining time first with the oracle run time (preemptive, event-driven)."""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.policy.base import Key, Policy
from dlsched.scheduler.view import JobView


@dataclass(frozen=True)
class Srtf(Policy):
    name = "srtf"
    description = "shortest (oracle) remaining time first; preemptive at every event"
    needs_run_time = True
    preemptive = True

    def key(self, job: JobView, now: float) -> Key:
        return (job.remaining_time(now), job.submit_time, job.seq)
