"""Policies that give every job the (workers, PS) it asked for: FIFO and Tiresias."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dlsched.policy.tiresias import Tiresias
from dlsched.ps.machines import Machine
from dlsched.ps.placement import Option, capacity, usage
from dlsched.ps.policy_base import JobState, first_fit


@dataclass(frozen=True)
class FixedFifo:
    """First come, first served at the requested shape; non-preemptive, strict head-of-line
    (the first waiting job that does not fit blocks those behind it)."""

    name: str = "fifo"
    interval: float | None = None

    def decide(
        self, now: float, jobs: Sequence[JobState], machines: Sequence[Machine]
    ) -> Mapping[str, Option]:
        free = capacity(machines)
        out: dict[str, Option] = {}
        for state in jobs:
            if state.option is not None:
                out[state.job.job_id] = state.option
                free -= usage(state.job, state.option)
        waiting = sorted(
            (s for s in jobs if s.option is None), key=lambda s: (s.job.arrival, s.job.job_id)
        )
        for state in waiting:
            job = state.job
            option = first_fit(job, job.requested_workers, job.requested_servers, machines, free)
            if option is None:
                break
            out[job.job_id] = option
            free -= usage(job, option)
        return out


@dataclass(frozen=True)
class FixedTiresias:
    """Tiresias (Gu et al., NSDI'19) at the requested shape: discretized least attained
    service (GPU-seconds; queues split at ``thresholds``, FIFO inside a queue), preemptive,
    deciding every ``interval`` seconds. Jobs are admitted in that order wherever they fit;
    a job keeps its machines when it stays. Defaults are those of
    :class:`dlsched.policy.tiresias.Tiresias`."""

    name: str = "tiresias"
    interval: float | None = Tiresias.round_s
    thresholds: tuple[float, ...] = Tiresias.thresholds

    def decide(
        self, now: float, jobs: Sequence[JobState], machines: Sequence[Machine]
    ) -> Mapping[str, Option]:
        def key(s: JobState) -> tuple[int, float, str]:
            return (bisect_right(self.thresholds, s.attained), s.job.arrival, s.job.job_id)

        free = capacity(machines)
        out: dict[str, Option] = {}
        for state in sorted(jobs, key=key):
            job = state.job
            option = first_fit(
                job, job.requested_workers, job.requested_servers, machines, free, state.option
            )
            if option is not None:
                out[job.job_id] = option
                free -= usage(job, option)
        return out
