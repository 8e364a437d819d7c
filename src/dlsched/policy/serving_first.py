"""Serving first: inference replicas before training jobs, preempting training when needed.

Jobs whose id starts with ``serving_prefix`` are serving replicas (``dlsched.serving.colocated``
names them so); they are ordered before every other job, so a replica that does not fit
preempts training jobs through the same Plan as any preemption (restart costs included), and
training takes the GPUs back when replicas end. Inside each class running jobs come first and
then submit order, so training jobs never preempt one another.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.policy.base import Key, Policy
from dlsched.scheduler.view import JobView

SERVING_PREFIX = "serve:"


@dataclass(frozen=True)
class ServingFirst(Policy):
    name = "serving-first"
    description = (
        "serving replicas (job ids serve:...) before training, preempting it; FIFO otherwise"
    )
    preemptive = True
    serving_prefix: str = SERVING_PREFIX

    def __post_init__(self) -> None:
        if not self.serving_prefix:
            raise ValueError("serving_prefix must not be empty")

    def key(self, job: JobView, now: float) -> Key:
        serving = 0.0 if job.job_id.startswith(self.serving_prefix) else 1.0
        return (serving, 0.0 if job.running else 1.0, job.submit_time, float(job.seq))
