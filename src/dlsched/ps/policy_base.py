"""What a PS scheduling policy sees and returns, and helpers the policies share.

A policy's ``decide(now, jobs, machines, free)`` returns the option (workers, PS and their
machines) of every job that should run from ``now`` on; jobs left out wait (a running job left
out is preempted). ``machines`` describe the machines whole (what profiles and estimates use),
``free`` what the policy may hold on each now (rows: machines, columns: GPUs, CPUs, memory GiB;
its own running jobs' share included; None: all of it). It must not take more than ``free``:
the simulator checks and raises if it does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dlsched.ps.job import PsJob
from dlsched.ps.machines import Machine
from dlsched.ps.placement import FloatArray, Option, capacity, place, usage


@dataclass(frozen=True, slots=True)
class JobState:
    """A job as a policy sees it: iterations still to run, GPU-seconds attained so far, and
    the option it holds now (None while it waits)."""

    job: PsJob
    remaining: float
    attained: float
    option: Option | None


class PsPolicy(Protocol):
    """A scheduling policy for PS jobs (module docstring). ``interval``: seconds between
    decisions when nothing arrives or completes (None: decide only then)."""

    @property
    def name(self) -> str: ...

    @property
    def interval(self) -> float | None: ...

    def decide(
        self,
        now: float,
        jobs: Sequence[JobState],
        machines: Sequence[Machine],
        free: FloatArray | None = None,
    ) -> Mapping[str, Option]: ...


def first_fit(
    job: PsJob,
    workers: int,
    servers: int,
    machines: Sequence[Machine],
    free: FloatArray,
    prefer: Option | None = None,
) -> Option | None:
    """``prefer`` if it has this shape and fits ``free``; otherwise the tasks packed onto the
    machines with the most free GPUs first (fewest machines). ``free`` is not modified."""
    if (
        prefer is not None
        and (prefer.w, prefer.p) == (workers, servers)
        and np.all(usage(job, prefer) <= free + 1e-9)
    ):
        return prefer
    order = sorted(range(len(machines)), key=lambda m: (-free[m, 0], m))
    return place(job, workers, servers, machines, free, order)


def fits_somewhere(job: PsJob, workers: int, servers: int, machines: Sequence[Machine]) -> bool:
    """Whether that shape fits the empty machines."""
    return first_fit(job, workers, servers, machines, capacity(machines)) is not None
