"""A job's mutable state inside the simulator; policies see it through ``JobView``."""

from __future__ import annotations

import math

from dlsched.cluster.state import Demand, Placement

PENDING, RUNNING, DONE = 0, 1, 2


class SimJob:
    """Progress bookkeeping of one job.

    While running, progress accrues at ``rate`` from ``seg_start`` (the end of any restore stall)
    on top of ``done``; ``seg_begin`` is when the job got its GPUs. ``epoch`` changes on every
    start and stop so stale finish events can be recognised.
    """

    __slots__ = (
        "attained_base",
        "demand",
        "done",
        "duration",
        "end",
        "epoch",
        "estimate",
        "first_start",
        "gpus",
        "held_gpu_s",
        "job_id",
        "lost_gpu_s",
        "placement",
        "pool",
        "preemptions",
        "rate",
        "restarts",
        "row",
        "seg_begin",
        "seg_start",
        "seq",
        "stall_next",
        "status",
        "submit_time",
        "work",
    )

    def __init__(
        self,
        row: int,
        job_id: str,
        submit_time: float,
        demand: Demand,
        work: float,
        duration: float | None,
        pool: int,
    ) -> None:
        self.row = row
        self.seq = row
        self.job_id = job_id
        self.submit_time = submit_time
        self.demand = demand
        self.gpus = demand.gpus
        self.work = work
        self.duration = duration
        self.estimate: float | None = None
        self.pool = pool
        self.status = PENDING
        self.done = 0.0
        self.rate = 0.0
        self.seg_begin = 0.0
        self.seg_start = 0.0
        self.placement: Placement | None = None
        self.first_start = math.nan
        self.end = math.nan
        self.preemptions = 0
        self.restarts = 0
        self.held_gpu_s = 0.0
        self.lost_gpu_s = 0.0
        self.attained_base = 0.0
        self.stall_next = 0.0
        self.epoch = 0

    def __repr__(self) -> str:
        return f"SimJob({self.job_id!r}, gpus={self.gpus}, status={self.status})"

    @property
    def running(self) -> bool:
        return self.status == RUNNING

    def gpu_weight(self) -> float:
        """GPUs held, counting shares as fractions."""
        return self.gpus * self.demand.milli / 1000

    def done_at(self, now: float) -> float:
        if self.status == RUNNING and now > self.seg_start:
            return min(self.work, self.done + (now - self.seg_start) * self.rate)
        return self.done

    def attained_service(self, now: float) -> float:
        if self.status == RUNNING:
            return self.attained_base + (now - self.seg_begin) * self.gpus
        return self.attained_base

    def remaining_time(self, now: float) -> float:
        left = self.work - self.done_at(now)
        if self.status == RUNNING:
            return max(0.0, self.seg_start - now) + left / self.rate
        return left
