"""A job's mutable state inside the simulator; policies see it through ``JobView``."""

from __future__ import annotations

import math
from typing import Any

from dlsched.cluster.state import Demand, Placement, Split
from dlsched.scheduler.plan import JobConfig

PENDING, RUNNING, DONE = 0, 1, 2


class SimJob:
    """Progress bookkeeping of one job (a rigid trace job; :class:`KindJob` for the others).

    While running, progress accrues at ``rate`` from ``seg_start`` (the end of any restore stall,
    or the last rate change) on top of ``done``, up to ``boundary``: where the job's performance
    model changes its rate (an elastic job's next epoch) or ``work`` (the finish). ``seg_begin``
    is when the job got its current GPUs and ``run_start`` when it began to progress on them
    (its checkpoint clock); ``ckpt_time``/``ckpt_done`` remember the last checkpoint before the
    latest rate change. ``epoch`` changes on every start, stop and rate change so stale events
    can be recognised. ``kind`` is the job kind (a :mod:`dlsched.perf.model` constant), ``ext``
    the kind's own state, ``config`` and ``split`` how it runs on its placement, ``group`` the
    policy group that schedules it, ``held`` the GPUs it holds now. A rigid job is of kind 0 in
    group 0, holds what it asked for and has no kind state: class defaults, so the millions of
    jobs of a replay do not store them.
    """

    __slots__ = (
        "alloc_done",
        "attained_base",
        "boundary",
        "ckpt_done",
        "ckpt_time",
        "deadline",
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
        "run_start",
        "seg_begin",
        "seg_start",
        "seq",
        "status",
        "submit_time",
        "work",
    )

    kind: int = 0
    group: int = 0
    ext: Any = None
    config: JobConfig | None = None
    split: Split | None = None

    # Set on every start (the simulator's _run_on) and read only while the job runs.
    boundary: float
    run_start: float
    ckpt_time: float
    ckpt_done: float
    alloc_done: float

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
        self.deadline: float | None = None
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
        self.epoch = 0

    @property
    def held(self) -> int:
        """GPUs held now (while running; what it asked for, for a rigid job)."""
        return self.gpus

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

    def bank(self, now: float, interval: float) -> None:
        """Fold the progress since ``seg_start`` into ``done`` before the rate changes at
        ``now``, remembering the last checkpoint (every ``interval`` seconds from
        ``run_start``; 0: none) reached at the old rate."""
        if interval > 0 and now > self.seg_start:
            k = math.floor((now - self.run_start) / interval)
            at = self.run_start + k * interval
            if k > 0 and at >= self.seg_start:
                self.ckpt_time = at
                self.ckpt_done = self.done + (at - self.seg_start) * self.rate
        self.done = self.done_at(now)
        self.seg_start = max(self.seg_start, now)

    def checkpoint(self, now: float, interval: float) -> tuple[float, float]:
        """The last checkpoint's time and progress at ``now`` (every ``interval`` seconds of
        progress on the current GPUs); with none yet, ``(seg_begin, progress at allocation)``."""
        if interval > 0 and now > self.run_start:
            k = math.floor((now - self.run_start) / interval)
            at = self.run_start + k * interval
            if k > 0 and at >= self.seg_start:
                return at, self.done + (at - self.seg_start) * self.rate
            if k > 0 and self.ckpt_time == self.ckpt_time:
                return self.ckpt_time, self.ckpt_done
        return self.seg_begin, self.alloc_done


class KindJob(SimJob):
    """An elastic or parameter-server job: its kind, group, kind state (``ext``), config,
    CPU/memory split and held GPUs are its own (see :class:`SimJob`)."""

    __slots__ = ("config", "ext", "gpus_held", "group", "kind", "split")

    def __init__(
        self,
        row: int,
        job_id: str,
        submit_time: float,
        demand: Demand,
        work: float,
        pool: int,
        group: int,
        kind: int,
        ext: Any,
    ) -> None:
        super().__init__(row, job_id, submit_time, demand, work, None, pool)
        self.kind = kind
        self.group = group
        self.ext = ext
        self.config = None
        self.split = None
        self.gpus_held = demand.gpus

    @property
    def held(self) -> int:
        """GPUs held now (an allocation policy may give other than asked)."""
        return self.gpus_held

    def gpu_weight(self) -> float:
        return float(self.gpus_held)

    def attained_service(self, now: float) -> float:
        if self.status == RUNNING:
            return self.attained_base + (now - self.seg_begin) * self.gpus_held
        return self.attained_base
