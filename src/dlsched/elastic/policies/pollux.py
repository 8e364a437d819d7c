"""Pollux: goodput-maximizing GPUs and batch size per job, chosen cluster-wide.

After Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep
Learning", OSDI 2021. A job's speedup on ``n`` GPUs is its best goodput there (over batch
sizes, :meth:`dlsched.perf.goodput.GoodputModel.best_batch`) over its best goodput on a fair
share of the cluster, ``ceil(GPUs / jobs)`` GPUs (the paper's definition and the artifact's;
``base=one``: over one GPU). The policy maximizes the generalized mean of speedups with ``p``
(-1 by default: the harmonic mean, so no job is left with nothing while another gains little).
A job whose GPUs would change has its speedup scaled by the paper's re-allocation factor
``(T − R·δ)/(T + δ)`` (age ``T``, ``R`` re-allocations so far, delay ``δ``). As in the Pollux
artifact a job may at most double the most GPUs it has held (it grows as it is profiled).

Speedups use the gradient statistics of the job's current epoch, as the artifact's do (it reads
the statistics the job measured in its last step). ``epoch_buckets=k`` instead uses those of
the start of the job's current k-th of training (fewer distinct goodput searches), which
treats a job whose gradient noise grows during that stretch as less scalable than it is: with
``epoch_buckets=10 base=one``, dlsched's choices before 2026-11-25, average JCTs on the Pollux
workloads at load 0.5 ran 15% above the artifact's, 3% with the defaults (bench/RESULTS.md).

Other differences from the artifact, kept: our search is not its genetic algorithm: the
objective is separable over jobs in GPU counts, so counts are chosen greedily
(:mod:`dlsched.elastic.greedy`) and then placed on as few nodes as possible, jobs keeping their
GPUs when their count is unchanged. Speedups use the cluster's main GPU type and the
profiles' step times and statistics at every batch size (the artifact fits a throughput model
to the configurations the job has run and holds the statistics measured at its current batch;
its fair share sits on one node, ours on as few nodes as hold it). A job without GPUs costs
without bound (the artifact's bounded 1/10⁻³). Batches are re-optimized for the exact epoch at
every epoch boundary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dlsched.elastic.greedy import greedy_counts
from dlsched.elastic.policy import ElasticPolicy, free_gpus, place_consolidated, realloc_factor
from dlsched.elastic.types import Allocation, JobInfo

_NO_GPU_COST = 1e12


@dataclass
class Pollux(ElasticPolicy):
    name = "pollux"
    description = "goodput-optimal GPUs and batch per job; p=-1 mean of speedups, restart-aware"
    p: float = -1.0
    restart_delay_s: float = 30.0
    explore: bool = True
    epoch_buckets: int = 0
    """0: speedups from the job's current epoch; k ≥ 1: from the start of its current k-th of
    training (module docstring)."""
    base: str = "fair"
    """What a speedup is relative to: ``fair`` (a fair share of the GPUs) or ``one`` (one
    GPU)."""

    def __post_init__(self) -> None:
        if self.epoch_buckets < 0:
            raise ValueError(f"epoch_buckets must be >= 0, got {self.epoch_buckets}")
        if self.p >= 0:
            raise ValueError(f"p must be negative (a fairness-leaning mean), got {self.p}")
        if self.base not in ("fair", "one"):
            raise ValueError(f"base: expected 'fair' or 'one', got {self.base!r}")

    def _gpn(self, variant: str) -> int:
        return self.cluster.gpus_per_node(variant)

    def stats_epoch(self, job: JobInfo) -> int:
        """The epoch whose gradient statistics ``job``'s speedups use (``epoch_buckets``)."""
        if self.epoch_buckets == 0:
            return job.epoch
        width = -(-job.num_epochs // self.epoch_buckets)
        return job.epoch - job.epoch % width

    def speedups(self, job: JobInfo, cap: int, share: int = 1) -> list[float]:
        """Speedup at 0..cap GPUs (consolidated) on the main GPU type, relative to ``share``
        GPUs (the fair share; one GPU with ``base=one``)."""
        variant = self.cluster.main_variant
        gpn = self._gpn(variant)
        epoch = self.stats_epoch(job)
        r = share if self.base == "fair" else 1
        base = self.perf.best_batch(job.application, variant, epoch, -(-r // gpn), r).goodput
        out = [0.0]
        for n in range(1, cap + 1):
            g = self.perf.best_batch(job.application, variant, epoch, -(-n // gpn), n)
            out.append(g.goodput / base)
        return out

    def cap(self, job: JobInfo) -> int:
        lim = self.perf.limits(job.application)
        cap = min(self.cluster.total_gpus, max(lim.max_global_bsz // lim.min_local_bsz, 1))
        if self.explore:
            cap = min(cap, max(2 * job.max_gpus_seen, 1))
        return cap

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        costs = []
        share = max(-(-self.cluster.total_gpus // max(len(jobs), 1)), 1)
        for j in jobs:
            cap = self.cap(j)
            speed = self.speedups(j, cap, share)
            age = max(now - j.submit_time, 0.0)
            factor = realloc_factor(age, j.restarts, self.restart_delay_s)
            current = j.gpus
            row = []
            for n, s in enumerate(speed):
                value = s if n == current else s * factor
                row.append(_NO_GPU_COST if value <= 0 else math.pow(value, self.p))
            costs.append(row)
        counts = greedy_counts(costs, self.cluster.total_gpus)
        kept: dict[str, Allocation] = {}
        for j, n in zip(jobs, counts, strict=True):
            if j.allocation is not None and n == j.gpus:
                kept[j.name] = j.allocation
        free = free_gpus(self.cluster, kept)
        out = dict(kept)
        todo = [(n, j) for j, n in zip(jobs, counts, strict=True) if n > 0 and j.name not in kept]
        for n, j in sorted(todo, key=lambda t: (-t[0], t[1].index)):
            gpus = place_consolidated(free, n)
            if gpus is None:
                continue
            best = self.perf.best_batch(
                j.application, self.cluster.main_variant, j.epoch, len(gpus), n
            ).config
            out[j.name] = Allocation(gpus, best.local_bsz, best.accum_steps, adaptive=True)
        return out
