"""Tiresias on elastic workloads: every job runs at its requested GPUs and batch.

The discretized two-dimensional least-attained-service order of
:class:`dlsched.policy.tiresias.Tiresias` (Gu et al., NSDI'19), with the same default queue
thresholds: jobs are admitted in (queue, submit time) order while their GPUs fit the cluster,
running admitted jobs keep their GPUs, the others are preempted, and admitted waiting jobs are
placed on as few nodes as possible.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dlsched.elastic.policy import (
    ElasticPolicy,
    fixed_allocation,
    free_gpus,
    place_consolidated,
)
from dlsched.elastic.types import Allocation, JobInfo
from dlsched.policy.tiresias import Tiresias


def _default_thresholds() -> tuple[float, ...]:
    return Tiresias().thresholds


@dataclass
class ElasticTiresias(ElasticPolicy):
    name = "tiresias"
    description = "elastic workloads: 2D-LAS at requested GPUs and batch (Tiresias thresholds)"
    thresholds: tuple[float, ...] = field(default_factory=_default_thresholds)

    def __post_init__(self) -> None:
        Tiresias(thresholds=self.thresholds)

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        def key(j: JobInfo) -> tuple[int, float, int]:
            return (bisect_right(self.thresholds, j.attained_service), j.submit_time, j.index)

        capacity = self.cluster.total_gpus
        admitted = []
        for j in sorted(jobs, key=key):
            if j.requested_gpus <= capacity:
                admitted.append(j)
                capacity -= j.requested_gpus
        out: dict[str, Allocation] = {
            j.name: j.allocation for j in admitted if j.allocation is not None
        }
        free = free_gpus(self.cluster, out)
        for j in admitted:
            if j.allocation is None:
                gpus = place_consolidated(free, j.requested_gpus)
                if gpus is not None:
                    out[j.name] = fixed_allocation(self.perf, j, gpus)
        return out
