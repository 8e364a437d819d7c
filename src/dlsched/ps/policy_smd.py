"""The ``smd`` policy: admission in weighted-shortest-first order, then SMD's allocation step
(:func:`dlsched.ps.smd.solve`) over the admitted jobs.

Admission: jobs in decreasing ``weight / (remaining · seconds per sample alone at one worker
and one PS)`` (Smith's rule) get one worker and one PS wherever those fit. The allocation step
then chooses every admitted job's (workers, PS) and machines; its candidates are each shape
packed or spread from the job's admission machine and from the machines with the most room
left (all machines on small clusters), plus the job's current placement when it still fits.
Shapes are powers of two (workers 1, 2, 4, 8, ...; PS 1, 2, 4, ...) to keep the candidates few.
Preemptive: everything is re-decided on every arrival and completion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dlsched.ps.job import PsJob
from dlsched.ps.machines import Machine
from dlsched.ps.objective import sample_time
from dlsched.ps.placement import FloatArray, Option, candidate_options, capacity, usage
from dlsched.ps.policy_base import JobState, first_fit
from dlsched.ps.smd import SmdConfig, solve


@dataclass(frozen=True)
class SmdPolicy:
    """The policy (module docstring); ``all_starts_up_to``: clusters of at most that many
    machines try placements from every machine, larger ones from ``starts`` machines."""

    description: ClassVar[str] = (
        "SMD sum-of-ratios knapsack decomposition over workers, PS and machines"
    )

    name: str = "smd"
    interval: float | None = None
    config: SmdConfig = field(default_factory=SmdConfig)
    starts: int = 1
    all_starts_up_to: int = 4
    _alone: _AloneTimes = field(default_factory=lambda: _AloneTimes(), repr=False, compare=False)

    def decide(
        self,
        now: float,
        jobs: Sequence[JobState],
        machines: Sequence[Machine],
        free: FloatArray | None = None,
    ) -> Mapping[str, Option]:
        free_given = free
        free = capacity(machines) if free is None else np.array(free, dtype=float)
        admitted: list[JobState] = []
        base: list[Option] = []
        alone = self._alone.on(machines)

        def priority(state: JobState) -> float:
            return state.job.weight / (state.remaining * alone.seconds(state.job))

        for state in sorted(jobs, key=lambda s: (-priority(s), s.job.job_id)):
            if not np.any(free[:, 0] >= state.job.worker.gpus):
                continue  # no machine has a GPU left for its worker
            option = first_fit(state.job, 1, 1, machines, free, state.option)
            if option is not None:
                admitted.append(state)
                base.append(option)
                free -= usage(state.job, option)
        candidates = []
        for state, own in zip(admitted, base, strict=True):
            room = free + usage(state.job, own)
            starts = self._starts(own, free)
            shapes = _power_shapes(state.job)
            options = list(candidate_options(state.job, machines, room, starts, shapes))
            for extra in (own, state.option):
                fits = extra is not None and np.all(usage(state.job, extra) <= room + 1e-9)
                if extra is not None and fits and extra not in options:
                    options.append(extra)
            candidates.append(options)
        result = solve(
            [s.job for s in admitted],
            [s.remaining for s in admitted],
            machines,
            candidates,
            base,
            self.config,
            None if free_given is None else free_given,
        )
        return {s.job.job_id: o for s, o in zip(admitted, result.options, strict=True)}

    def _starts(self, own: Option, free: np.ndarray) -> list[int]:
        n = len(own.workers)
        if n <= self.all_starts_up_to:
            return list(range(n))
        home = next(m for m, k in enumerate(own.workers) if k)
        roomiest = sorted(range(n), key=lambda m: (-free[m, 0], m))[: self.starts]
        return list(dict.fromkeys([home, *roomiest]))


def _power_shapes(job: PsJob) -> list[tuple[int, int]]:
    return [(w, p) for w, p in job.shapes() if w & (w - 1) == 0 and p & (p - 1) == 0]


class _AloneTimes:
    """Seconds per sample of each job alone at one worker and one PS on the empty machines
    (infinite if that does not fit), kept across decisions while the machines stay the same."""

    def __init__(self) -> None:
        self._machines: tuple[Machine, ...] = ()
        self._seconds: dict[tuple[str, str, int], float] = {}

    def on(self, machines: Sequence[Machine]) -> _AloneTimes:
        """This cache, emptied first if ``machines`` differ from the last call's."""
        if tuple(machines) != self._machines:
            self._machines = tuple(machines)
            self._seconds = {}
        return self

    def seconds(self, job: PsJob) -> float:
        key = (job.job_id, job.network.name, job.batch)
        value = self._seconds.get(key)
        if value is None:
            machines = self._machines
            option = first_fit(job, 1, 1, machines, capacity(machines))
            value = np.inf if option is None else sample_time(job, option, machines, option.tasks())
            self._seconds[key] = value
        return value
