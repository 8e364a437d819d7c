"""Optimus-style allocation (Peng et al., EuroSys'18) of workers and PS.

Each job's speed is predicted by Optimus's PS speed model ``f(p, w)``
(:mod:`dlsched.perf.optimus`), fitted to speeds of the job's network measured — here:
computed by the layered model — alone on empty machines at a few (p, w). Every decision:
jobs in arrival order get one worker and one PS while those fit; then, repeatedly, the job and
step (one more worker or one more PS) with the largest drop in predicted remaining time per
unit of resource added gets it, while it fits, until no step helps. Tasks are packed on the
machines with the most free GPUs. Preemptive: the allocation is rebuilt at every decision (a
job keeps its machines when its shape and placement still fit).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dlsched.perf.optimus import PsSpeedModel, fit_ps_speed
from dlsched.ps.job import PsJob
from dlsched.ps.machines import Machine
from dlsched.ps.objective import sample_time
from dlsched.ps.placement import FloatArray, Option, capacity, usage
from dlsched.ps.policy_base import JobState, first_fit

_PROFILE_SHAPES = ((1, 1), (1, 2), (2, 1), (2, 2), (1, 4), (4, 1), (2, 4), (4, 2), (4, 4))


@dataclass
class OptimusStyle:
    """The policy (module docstring). Holds the speed models it has fitted, one per network
    and batch."""

    description: ClassVar[str] = "Optimus-style marginal gain over workers and PS (PS speed model)"

    name: str = "optimus"
    interval: float | None = None
    _models: dict[tuple[str, int], PsSpeedModel] = field(default_factory=dict, repr=False)

    def speed_model(self, job: PsJob, machines: Sequence[Machine]) -> PsSpeedModel:
        """Optimus's ``f(p, w)`` for ``job``'s network and batch (fitted once)."""
        key = (job.network.name, job.batch)
        if key not in self._models:
            free = capacity(machines)
            samples = []
            for p, w in _PROFILE_SHAPES:
                option = first_fit(job, w, p, machines, free)
                if option is not None:
                    # A "step" of Optimus's model is one batch of ``job.batch`` samples.
                    seconds = sample_time(job, option, machines, option.tasks()) * job.batch
                    samples.append((p, w, 1.0 / seconds))
            self._models[key] = fit_ps_speed(samples, float(job.batch))
        return self._models[key]

    def decide(
        self,
        now: float,
        jobs: Sequence[JobState],
        machines: Sequence[Machine],
        free: FloatArray | None = None,
    ) -> Mapping[str, Option]:
        whole = capacity(machines)
        free = whole.copy() if free is None else np.array(free, dtype=float)
        total = whole.sum(axis=0)
        out: dict[str, Option] = {}
        shape: dict[str, tuple[int, int]] = {}
        by_id = {s.job.job_id: s for s in jobs}
        for state in sorted(jobs, key=lambda s: (s.job.arrival, s.job.job_id)):
            option = first_fit(state.job, 1, 1, machines, free, state.option)
            if option is not None:
                out[state.job.job_id] = option
                shape[state.job.job_id] = (1, 1)
                free -= usage(state.job, option)
        heap: list[tuple[float, str, int, int]] = []
        for job_id in out:
            self._push(heap, by_id[job_id], shape[job_id], machines, total)
        while heap:
            _, job_id, w, p = heapq.heappop(heap)
            state = by_id[job_id]
            if shape[job_id] not in ((w - 1, p), (w, p - 1)):
                continue  # stale: the job grew since this step was computed
            own = usage(state.job, out[job_id])
            option = first_fit(state.job, w, p, machines, free + own, state.option)
            if option is None:
                continue
            free += own - usage(state.job, option)
            out[job_id] = option
            shape[job_id] = (w, p)
            self._push(heap, state, (w, p), machines, total)
        return out

    def _push(
        self,
        heap: list[tuple[float, str, int, int]],
        state: JobState,
        current: tuple[int, int],
        machines: Sequence[Machine],
        total: np.ndarray,
    ) -> None:
        job = state.job
        model = self.speed_model(job, machines)
        w, p = current
        now_time = state.remaining / job.batch * model.step_time(p, w)
        for nw, np_ in ((w + 1, p), (w, p + 1)):
            if nw > job.max_workers or np_ > min(nw, job.max_servers):
                continue
            added = (
                job.worker.gpus / total[0] + job.worker.cpus / total[1]
                if nw > w
                else job.server(np_).cpus / total[1]
            )
            gain = (now_time - state.remaining / job.batch * model.step_time(np_, nw)) / added
            if gain > 0:
                heapq.heappush(heap, (-gain, job.job_id, nw, np_))
