"""Themis: finish-time fairness with leases (Mahajan et al., NSDI 2020).

A job's finish-time fairness is ``rho = T_shared / T_isolated``: its estimated completion time in
the shared cluster (time since submission plus its remaining work at its requested GPUs) over
its run time alone on them. GPUs are granted for a lease of ``lease_s``; when leases end, the
free GPUs are auctioned. Our simplification of the partial-allocation auction: the
``1 − fairness_knob`` fraction of the jobs without a lease that have the worst rho are offered
GPUs first, worst first, each winning its requested GPUs (its previous ones when still free);
then GPUs still free go to the other jobs in the same order. Requested GPUs and batch are fixed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dlsched.elastic.policy import (
    ElasticPolicy,
    fixed_allocation,
    free_gpus,
    place_consolidated,
)
from dlsched.elastic.types import Allocation, JobInfo
from dlsched.perf.perfbook import consolidated_counts


@dataclass
class Themis(ElasticPolicy):
    name = "themis"
    description = "finish-time fairness: leases, free GPUs auctioned to the worst rho"
    lease_s: float = 600.0
    fairness_knob: float = 0.8
    _lease_end: dict[int, float] = field(default_factory=dict, init=False)
    _isolated: dict[int, float] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.lease_s <= 0 or not 0 <= self.fairness_knob < 1:
            raise ValueError(
                f"need lease_s > 0 and 0 <= fairness_knob < 1, got {self.lease_s}, "
                f"{self.fairness_knob}"
            )

    def _rate(self, job: JobInfo) -> float:
        """Progress per second at the requested GPUs on the main type, current epoch."""
        variant = self.cluster.main_variant
        gpn = self.cluster.gpus_per_node(variant)
        config = self.perf.fixed_batch(job.application, job.requested_gpus, job.requested_bsz)
        t = self.perf.iteration_time(
            job.application,
            variant,
            consolidated_counts(job.requested_gpus, gpn),
            config.local_bsz,
            config.accum_steps,
        )
        eff = self.perf.efficiency(job.application)
        return eff.gain(job.epoch, config.global_bsz(job.requested_gpus)) / t

    def rho(self, job: JobInfo, now: float) -> float:
        """Estimated finish-time fairness of ``job`` at ``now``."""
        isolated = self._isolated.get(job.index)
        if isolated is None:
            variant = self.cluster.main_variant
            gpn = self.cluster.gpus_per_node(variant)
            isolated = self.perf.isolated_time(
                job.application, variant, job.requested_gpus, job.requested_bsz, gpn
            )
            self._isolated[job.index] = isolated
        shared = now - job.submit_time + job.remaining_progress / self._rate(job)
        return shared / max(isolated, 1e-9)

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        out = {
            j.name: j.allocation
            for j in jobs
            if j.allocation is not None and self._lease_end.get(j.index, 0.0) > now
        }
        free = free_gpus(self.cluster, out)
        bidders = sorted(
            (j for j in jobs if j.name not in out), key=lambda j: (-self.rho(j, now), j.index)
        )
        first = max(1, math.ceil((1 - self.fairness_knob) * len(bidders)))
        for group in (bidders[:first], bidders[first:]):
            for j in group:
                gpus = self._own_if_free(j, free) or place_consolidated(free, j.requested_gpus)
                if gpus is None:
                    continue
                same = j.allocation is not None and j.allocation.gpus == gpus
                out[j.name] = (
                    j.allocation if same and j.allocation else fixed_allocation(self.perf, j, gpus)
                )
                self._lease_end[j.index] = now + self.lease_s
        return out

    @staticmethod
    def _own_if_free(job: JobInfo, free: list[int]) -> tuple[tuple[int, int], ...] | None:
        a = job.allocation
        if a is None or any(free[node] < c for node, c in a.gpus):
            return None
        for node, c in a.gpus:
            free[node] -= c
        return a.gpus
