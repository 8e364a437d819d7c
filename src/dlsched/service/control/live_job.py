"""The live service's :class:`~dlsched.scheduler.view.JobView`: a stored job as policies see it.

One view per active job, built from its store row and updated in place when the job starts or
stops (the scheduler keeps views in its queues). ``duration`` is the submitter's expected run time
(None when not given: SJF and SRTF then order such jobs last); ``estimate`` is that figure or,
failing it, the service's history estimate (for QSSF).
"""

from __future__ import annotations

import math

from dlsched.cluster.state import Demand, Placement
from dlsched.perf.model import RIGID


class LiveJob:
    """A read-only view of one active job at one cycle (see the module docstring): of job kind
    ``kind`` (:data:`dlsched.perf.model.KIND_NAMES`), with no CPU/memory split."""

    split = None

    __slots__ = (
        "attained_base",
        "deadline",
        "demand",
        "duration",
        "estimate",
        "gpus",
        "job_id",
        "kind",
        "placement",
        "pool",
        "run_start",
        "running",
        "seq",
        "submit_time",
    )

    def __init__(
        self,
        seq: int,
        job_id: str,
        submit_time: float,
        demand: Demand,
        duration: float | None,
        estimate: float | None,
        placement: Placement | None,
        run_start: float | None,
        attained_base: float,
        kind: int = RIGID,
        deadline: float | None = None,
    ) -> None:
        self.seq = seq
        self.deadline = deadline
        self.kind = kind
        self.job_id = job_id
        self.submit_time = submit_time
        self.demand = demand
        self.gpus = demand.gpus
        self.duration = duration
        self.estimate = estimate
        self.pool = 0
        self.placement = placement
        self.running = placement is not None
        self.run_start = run_start
        self.attained_base = attained_base

    def start(self, placement: Placement, run_start: float | None) -> None:
        """The job was started on ``placement`` (the driver's notification, as in the
        simulator: a view is updated in place, so the scheduler's queues stay valid)."""
        self.placement = placement
        self.running = True
        self.run_start = run_start

    def stop(self, attained_base: float) -> None:
        """The job stopped running and waits again, with ``attained_base`` GPU-seconds."""
        self.placement = None
        self.running = False
        self.run_start = None
        self.attained_base = attained_base

    def __repr__(self) -> str:
        return f"LiveJob({self.job_id})"

    def __lt__(self, other: LiveJob) -> bool:
        return self.seq < other.seq

    def attained_service(self, now: float) -> float:
        """GPU-seconds of earlier runs plus the current one."""
        current = 0.0
        if self.running and self.run_start is not None:
            current = max(0.0, now - self.run_start) * self.gpus
        return self.attained_base + current

    def remaining_time(self, now: float) -> float:
        """Expected run time minus time already run at the requested GPUs; inf if unknown."""
        if self.duration is None:
            return math.inf
        done = self.attained_service(now) / self.gpus if self.gpus else 0.0
        return max(0.0, self.duration - done)
