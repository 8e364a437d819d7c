"""First in, first out: jobs start in submit order (non-preemptive)."""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.policy.base import Key, Policy
from dlsched.scheduler.view import JobView


@dataclass(frozen=True)
class Fifo(Policy):
    """``backfill``: let later jobs start when the head of the queue does not fit (default off:
    strict head-of-line blocking, as in the Helios evaluation)."""

    name = "fifo"
    description = "first in, first out; non-preemptive; head-of-line blocking unless backfill"
    allow_backfill: bool = False

    @property
    def backfill(self) -> bool:
        return self.allow_backfill

    def key(self, job: JobView, now: float) -> Key:
        return (job.submit_time, job.seq)
