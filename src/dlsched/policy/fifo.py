"""First in, first out: jobs start in submit order (non-preemptive)."""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.policy.base import Key, NonPreemptivePolicy
from dlsched.scheduler.view import JobView


@dataclass(frozen=True)
class Fifo(NonPreemptivePolicy):
    name = "fifo"
    description = "first in, first out; non-preemptive; head-of-line blocking unless backfill"

    def key(self, job: JobView, now: float) -> Key:
        return (job.submit_time, job.seq)
