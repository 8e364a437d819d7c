"""Earliest deadline first (preemptive, event-driven): the classic deadline baseline.

Jobs run at their requested size in order of their deadline; a job without one (best effort)
goes after every job with one, in submit order. An arriving job with an earlier deadline
preempts a running job with a later one. Jobs whose deadline has passed keep their place (EDF
does not drop late jobs; ElasticFlow's admission control, policy ``elasticflow``, does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlsched.policy.base import Key, Policy
from dlsched.scheduler.view import JobView


@dataclass(frozen=True)
class Edf(Policy):
    name = "edf"
    description = "earliest deadline first at requested sizes; preemptive; best effort last"
    preemptive = True

    def key(self, job: JobView, now: float) -> Key:
        d = job.deadline
        return (math.inf if d is None else d, job.submit_time, job.seq)
