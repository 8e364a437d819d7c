"""Gavel: heterogeneity-aware allocation as linear programs over GPU types, realized in rounds.

After Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads", OSDI 2020. Every ``interval_s`` (6 minutes, Gavel's round) the policy computes a
throughput matrix ``X[j, t]`` — examples per second of job ``j`` at its requested GPUs and batch,
consolidated on type ``t`` — and solves the chosen LP (:mod:`dlsched.elastic.gavel_lp`):
``max_min`` fairness or ``min_jct``. The time fractions are realized by giving each job, in
order of how far it is behind, the type it is most behind on (fraction × time active minus time
received), while that type has the job's GPUs free; GPUs left over go to the remaining jobs in
the same order. A job that stays on its type keeps its GPUs. ``aware=false`` is the agnostic
variant: every type counts as the same (each job's throughput averaged over types).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dlsched.elastic.gavel_lp import max_min_fairness, min_jct
from dlsched.elastic.policy import ElasticPolicy, fixed_allocation, place_consolidated
from dlsched.elastic.types import Allocation, ClusterView, JobInfo
from dlsched.perf.perfbook import consolidated_counts

OBJECTIVES = ("max_min", "min_jct")


@dataclass
class Gavel(ElasticPolicy):
    name = "gavel"
    description = (
        "heterogeneity-aware LP (max-min fairness or min-JCT) over GPU types, 6-min rounds"
    )
    objective: str = "max_min"
    aware: bool = True
    interval_s: float = 360.0
    _received: dict[int, dict[str, float]] = field(default_factory=dict, init=False)
    _since: dict[int, float] = field(default_factory=dict, init=False)
    _last: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")

    def never_fits(self, application: str, gpus: int, cluster: ClusterView) -> str | None:
        """A job runs on one GPU type at a time: it must fit the largest type."""
        reason = super().never_fits(application, gpus, cluster)
        if reason is not None:
            return reason
        sizes = {v: cluster.size_of_variant(v) for v in cluster.variants}
        best = max(sizes, key=lambda v: sizes[v])
        if gpus > sizes[best]:
            return (
                f"policy 'gavel' runs a job on one GPU type; it needs {gpus} GPUs and the "
                f"largest type ({best}) has {sizes[best]}"
            )
        return None

    def _variant_of(self, alloc: Allocation) -> str:
        return self.cluster.nodes[alloc.gpus[0][0]].variant

    def throughput(self, job: JobInfo, variant: str) -> float:
        """Examples per second at the requested GPUs and batch on ``variant`` (0 if the type has
        too few GPUs)."""
        if job.requested_gpus > self.cluster.size_of_variant(variant):
            return 0.0
        gpn = self.cluster.gpus_per_node(variant)
        config = self.perf.fixed_batch(job.application, job.requested_gpus, job.requested_bsz)
        t = self.perf.iteration_time(
            job.application,
            variant,
            consolidated_counts(job.requested_gpus, gpn),
            config.local_bsz,
            config.accum_steps,
        )
        return config.global_bsz(job.requested_gpus) / t

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        variants = self.cluster.variants
        if self._last is not None:
            for j in jobs:
                if j.allocation is not None:
                    got = self._received.setdefault(j.index, {})
                    v = self._variant_of(j.allocation)
                    got[v] = got.get(v, 0.0) + now - self._last
        self._last = now
        for j in jobs:
            self._since.setdefault(j.index, now)
        x = np.array([[self.throughput(j, v) for v in variants] for j in jobs])
        if not self.aware:
            mean = x.mean(axis=1, keepdims=True)
            x = np.where(x > 0, mean, 0.0)
        gpus = np.array([float(j.requested_gpus) for j in jobs])
        capacity = np.array([float(self.cluster.gpus_of_variant(v)) for v in variants])
        if self.objective == "max_min":
            frac = max_min_fairness(x, gpus, capacity)
        else:
            best = np.maximum(x.max(axis=1), 1e-12)
            remaining = (
                np.array([j.epoch_size * max(j.num_epochs - j.epoch, 0) for j in jobs]) / best
            )
            frac = min_jct(x, gpus, capacity, remaining)
        pairs = []
        for i, j in enumerate(jobs):
            horizon = now - self._since[j.index] + self.interval_s
            got = self._received.get(j.index, {})
            for t, v in enumerate(variants):
                if x[i, t] > 0:
                    deficit = frac[i, t] * horizon - got.get(v, 0.0)
                    pairs.append((-deficit, frac[i, t] <= 1e-9, j.index, t, i))
        pairs.sort()
        free = {v: self.cluster.gpus_of_variant(v) for v in variants}
        chosen: dict[int, str] = {}
        for want_share in (True, False):
            for _, no_share, _, t, i in pairs:
                j = jobs[i]
                v = variants[t]
                if j.index in chosen or (want_share and no_share) or free[v] < j.requested_gpus:
                    continue
                chosen[j.index] = v
                free[v] -= j.requested_gpus
        return self._place(jobs, chosen)

    def _place(self, jobs: Sequence[JobInfo], chosen: dict[int, str]) -> dict[str, Allocation]:
        out: dict[str, Allocation] = {}
        free = [n.gpus for n in self.cluster.nodes]
        for j in jobs:
            a = j.allocation
            if a is not None and chosen.get(j.index) == self._variant_of(a):
                out[j.name] = a
                for node, c in a.gpus:
                    free[node] -= c
        for j in sorted(jobs, key=lambda j: (-j.requested_gpus, j.index)):
            if j.index not in chosen or j.name in out:
                continue
            nodes = [n.index for n in self.cluster.nodes if n.variant == chosen[j.index]]
            gpus = place_consolidated(free, j.requested_gpus, nodes)
            if gpus is not None:
                out[j.name] = fixed_allocation(self.perf, j, gpus)
        return out
