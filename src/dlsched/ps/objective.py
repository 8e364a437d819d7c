"""Iteration times of jobs placed together, and the scheduling objective.

Co-located tasks share a machine's NIC: every task (worker or PS, of any job) on machine m gets
``B_m / n_m`` with ``n_m`` the tasks on m. A job's workers run at the slowest worker GPU's rate
and its transfers at its slowest worker's and slowest PS's bandwidth (synchronous training).

A job's work is counted in training samples; with w workers an iteration processes
``w · batch`` of them, so its rate is ``w · batch / iteration time`` samples per second. The
objective of a decision is the sum of ratios ``Σ_i weight_i · remaining_i / rate_i``: each
job's weighted remaining time if its allocation were kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dlsched.ps.job import PsJob
from dlsched.ps.machines import Machine
from dlsched.ps.placement import Option


def task_counts(options: Sequence[Option], machines: int) -> list[int]:
    """Tasks per machine over all ``options``."""
    if not options:
        return [0] * machines
    workers = np.array([o.workers for o in options], dtype=np.int64).sum(axis=0)
    servers = np.array([o.servers for o in options], dtype=np.int64).sum(axis=0)
    counts: list[int] = (workers + servers).tolist()
    return counts


def iteration_time(
    job: PsJob, option: Option, machines: Sequence[Machine], counts: Sequence[float]
) -> float:
    """Seconds per iteration of ``job`` placed as ``option`` when machine m holds ``counts[m]``
    tasks in all (``option``'s own included)."""
    worker_bw = min(
        machines[m].bytes_per_second / counts[m] for m, k in enumerate(option.workers) if k
    )
    server_bw = min(
        machines[m].bytes_per_second / counts[m] for m, k in enumerate(option.servers) if k
    )
    tflops = min(machines[m].gpu_tflops for m, k in enumerate(option.workers) if k)
    return job.model.time(option.w, option.p, tflops, worker_bw, server_bw)


def sample_time(
    job: PsJob, option: Option, machines: Sequence[Machine], counts: Sequence[float]
) -> float:
    """Seconds per training sample (the inverse rate) of ``job`` placed as ``option``."""
    return iteration_time(job, option, machines, counts) / (option.w * job.batch)


def iteration_times(
    allocation: Mapping[str, tuple[PsJob, Option]], machines: Sequence[Machine]
) -> dict[str, float]:
    """Seconds per iteration of every job of ``allocation`` (job id → job and its option)."""
    counts = task_counts([o for _, o in allocation.values()], len(machines))
    return {
        job_id: iteration_time(job, option, machines, counts)
        for job_id, (job, option) in allocation.items()
    }


def objective(
    jobs: Sequence[PsJob],
    remaining: Sequence[float],
    options: Sequence[Option],
    machines: Sequence[Machine],
) -> float:
    """``Σ weight · remaining / rate`` of jobs placed as ``options`` together (remaining in
    samples)."""
    counts = task_counts(options, len(machines))
    return sum(
        job.weight * left * sample_time(job, option, machines, counts)
        for job, left, option in zip(jobs, remaining, options, strict=True)
    )


class Evaluator:
    """``weight · remaining / rate`` of given jobs, memoized: options on identical machines
    under equal loads cost the same and are computed once. Holds its memo, so keep one per
    decision."""

    def __init__(
        self, jobs: Sequence[PsJob], remaining: Sequence[float], machines: Sequence[Machine]
    ) -> None:
        self.jobs = tuple(jobs)
        self.remaining = tuple(remaining)
        self.machines = tuple(machines)
        self._memo: dict[tuple[object, ...], float] = {}

    def cost(self, i: int, option: Option, counts: Sequence[float]) -> float:
        """Job i's ratio placed as ``option`` with ``counts[m]`` tasks on machine m."""
        machines = self.machines
        key = (
            i,
            option.w,
            option.p,
            min(machines[m].gpu_tflops for m, k in enumerate(option.workers) if k),
            min(
                machines[m].bytes_per_second / counts[m] for m, k in enumerate(option.workers) if k
            ),
            min(
                machines[m].bytes_per_second / counts[m] for m, k in enumerate(option.servers) if k
            ),
        )
        value = self._memo.get(key)
        if value is None:
            job = self.jobs[i]
            value = job.weight * self.remaining[i] * sample_time(job, option, machines, counts)
            self._memo[key] = value
        return value

    def total(self, options: Sequence[Option]) -> float:
        """The objective of all jobs placed as ``options`` (one per job, in order)."""
        counts = task_counts(options, len(self.machines))
        return sum(self.cost(i, o, counts) for i, o in enumerate(options))
