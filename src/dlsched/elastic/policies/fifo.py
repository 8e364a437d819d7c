"""FIFO on elastic workloads: requested GPUs and batch, submit order, no preemption, and
head-of-line blocking (the first waiting job that does not fit stops the queue)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dlsched.elastic.policy import ElasticPolicy, fixed_allocation, free_gpus, place_consolidated
from dlsched.elastic.types import Allocation, JobInfo


@dataclass
class ElasticFifo(ElasticPolicy):
    name = "fifo"
    description = "elastic workloads: submit order at requested GPUs, no preemption, blocking"

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        out = {j.name: j.allocation for j in jobs if j.allocation is not None}
        free = free_gpus(self.cluster, out)
        for j in sorted(jobs, key=lambda j: (j.submit_time, j.index)):
            if j.allocation is not None:
                continue
            gpus = place_consolidated(free, j.requested_gpus)
            if gpus is None:
                break
            out[j.name] = fixed_allocation(self.perf, j, gpus)
        return out
