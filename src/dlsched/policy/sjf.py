"""Shortest job first with the oracle run time (non-preemptive). Jobs without a known run time
go last, in submit order."""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlsched.policy.base import Key, NonPreemptivePolicy
from dlsched.scheduler.view import JobView


@dataclass(frozen=True)
class Sjf(NonPreemptivePolicy):
    name = "sjf"
    description = "shortest (oracle) run time first; non-preemptive"
    needs_run_time = True

    def key(self, job: JobView, now: float) -> Key:
        d = job.duration
        return (math.inf if d is None else d, job.submit_time, job.seq)
