"""QSSF, Quasi-Shortest-Service-First (Hu et al., SC'21): smallest estimated service first,
where service = estimated duration × GPUs (predicted GPU-time). Non-preemptive; the estimate
is made once per job when it queues, by the run's duration estimator (``--estimator``)."""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.policy.base import Key, NonPreemptivePolicy
from dlsched.scheduler.view import JobView


@dataclass(frozen=True)
class Qssf(NonPreemptivePolicy):
    name = "qssf"
    description = "smallest estimated GPU-time (duration estimate × GPUs) first; non-preemptive"
    needs_estimate = True

    def key(self, job: JobView, now: float) -> Key:
        if job.estimate is None:
            raise ValueError(f"qssf needs a duration estimate for job {job.job_id!r}")
        return (job.estimate * max(job.gpus, 1), job.submit_time, job.seq)
