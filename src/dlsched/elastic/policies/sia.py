"""Sia: heterogeneity-aware, goodput-optimized allocation as an ILP per round.

After Jayaram Subramanya et al., "Sia: Heterogeneity-aware, goodput-optimized ML-cluster
scheduling", SOSP 2023, and the semantics of its simulator (siasosp23/artifacts,
``sia-simulator/sia.py``; our own code). Every ``interval_s`` (60 s) each job gets a row of
configurations per GPU type: 1, 2, 4, ... GPUs inside one node up to a whole node, then 2, 3, ...
whole nodes of that type, up to the job's cap (twice the most GPUs it has held on any type, at
least 1, within the batch limits). A configuration's value is the job's goodput there
(best batch for its current epoch, :meth:`dlsched.perf.perfbook.PerfBook.best_batch`):

- on a type the job has run on, from that type's profile;
- on a type it has not, *projected* from the type it has run the most GPUs on, scaled by the
  ratio of the two types' one-GPU throughputs (examples per second at the largest profiled
  local batch on one GPU: the cheap per-type profile Sia bootstraps every job with);
- for a job that has not run yet, only one GPU of each type, valued by those one-GPU
  throughputs (the paper profiles a new job on one GPU of each type; the artifact's default
  values every type alike until the job first runs).

Values are divided by the job's smallest one (so its slowest one-GPU choice is 1) and a
configuration other than the job's current one (its type and GPU count) is scaled by Pollux's
re-allocation factor ``(T − R·δ)/(T + δ)`` (age ``T``, restarts ``R``, the restart penalty
``δ``; 1 while ``T < δ``), ``δ`` the per-application penalties Sia measured (cifar10 30 s,
deepspeech2 25 s, bert 120 s, yolov3 45 s, imagenet 250 s, others 30 s) unless ``restart_s``
is set. The ILP (:mod:`dlsched.elastic.sia_ilp`) minimizes ``Σ x·min(v^p, 3000) +
λ_n·(jobs without GPUs)`` with ``p = −0.5`` and ``λ_n = 1.1`` (the artifact's settings): every
job that can gain is served, faster configurations preferred with diminishing weight.

Placement: a job keeping its type and count keeps its GPUs; multi-node configurations take
whole free nodes of their type (single-node jobs on a node it needs move, as Sia's placer
evicts them); the rest go best-fit by size. Batches are re-optimized at every epoch boundary.

Differences from the artifact, kept: goodput comes from the profiles on the types a job has
run on (the artifact fits Pollux's throughput model to the configurations it ran, as dlsched's
``pollux`` also does not); costs are rounded to 6 decimals (the artifact rounds to 2), which
only absorbs last-bit differences of ``pow`` between machines; NCF jobs are not pinned to one
GPU; a job mid-restart is not pinned to its GPUs; rigid Sia jobs (fixed GPUs and batch) are not
modelled (this policy schedules elastic jobs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dlsched.elastic.policy import ElasticPolicy, place_consolidated, realloc_factor
from dlsched.elastic.sia_ilp import Option, choose
from dlsched.elastic.types import Allocation, JobInfo
from dlsched.perf.profiles import load_profile

RESTART_PENALTY_S: Mapping[str, float] = {
    "cifar10": 30.0,
    "deepspeech2": 25.0,
    "bert": 120.0,
    "yolov3": 45.0,
    "imagenet": 250.0,
}
"""Seconds a restart costs each application, as measured on Sia's physical cluster
(``sia-simulator/sia.py``, ``get_restart_penalty``); others 30 s."""
DEFAULT_PENALTY_S = 30.0
VALUE_CLIP = 3000.0
"""Largest objective term of one configuration (the artifact's ``sia_goodput_clip_val``)."""


@dataclass(frozen=True, slots=True)
class Config:
    """``gpus`` GPUs of ``variant`` on ``nodes`` nodes (whole nodes when more than one)."""

    variant: str
    nodes: int
    gpus: int


@dataclass
class Sia(ElasticPolicy):
    name = "sia"
    description = (
        "heterogeneity-aware goodput per GPU type from one-GPU profiles; an ILP per round over "
        "(job, GPU type, count), restart-aware"
    )
    p: float = -0.5
    lambda_n: float = 1.1
    """Cost of a job left without GPUs (> 1: more than the least any allocation gains)."""
    interval_s: float = 60.0
    restart_s: float = 0.0
    """Restart penalty of every job in seconds; 0: Sia's per-application ones."""
    project: bool = True
    """Project goodput to types a job has not run on (else only one GPU there, valued 1)."""
    _held: dict[int, dict[str, int]] = field(default_factory=dict, init=False, repr=False)
    _one_gpu: dict[tuple[str, str], float] = field(default_factory=dict, init=False, repr=False)
    # Configurations depend only on the cluster's nodes: kept while the view is the same object.
    _configs: tuple[object, dict[str, list[Config]]] | None = field(
        default=None, init=False, repr=False
    )

    def __post_init__(self) -> None:
        if not self.p < 0:
            raise ValueError(f"p must be negative (Sia's fairness exponent), got {self.p}")
        if not self.lambda_n > 1:
            raise ValueError(
                f"lambda_n must exceed 1 (leaving a job idle costs more than any allocation "
                f"gains), got {self.lambda_n}"
            )
        if not (self.interval_s > 0 and math.isfinite(self.interval_s)):
            raise ValueError(f"interval_s must be a positive number, got {self.interval_s}")
        if not (self.restart_s >= 0 and math.isfinite(self.restart_s)):
            raise ValueError(f"restart_s must be >= 0 seconds, got {self.restart_s}")

    def configs(self, variant: str) -> list[Config]:
        """Sia's configurations on ``variant``: powers of two inside a node, a whole node,
        then every count of whole nodes the type has."""
        if self._configs is None or self._configs[0] is not self.cluster:
            self._configs = (self.cluster, {})
        known = self._configs[1].get(variant)
        if known is not None:
            return known
        gpn = self.cluster.gpus_per_node(variant)
        nodes = sum(1 for n in self.cluster.nodes if n.variant == variant and n.size > 0)
        out = [Config(variant, 1, c) for c in _powers_below(gpn)]
        out.append(Config(variant, 1, gpn))
        out += [Config(variant, k, k * gpn) for k in range(2, nodes + 1)]
        self._configs[1][variant] = out
        return out

    def one_gpu_throughput(self, app: str, variant: str) -> float:
        """Examples per second of ``app`` on one GPU of ``variant`` at its largest profiled
        local batch: the per-type profile every job is bootstrapped with."""
        key = (app, variant)
        found = self._one_gpu.get(key)
        if found is None:
            rows = [s for s in load_profile(app, variant).placements if s.replicas == 1]
            if not rows:
                rows = [s for s in load_profile(app, variant).samples if s.replicas == 1]
            best = max(rows, key=lambda s: (s.local_bsz, -s.step_time))
            found = best.local_bsz / best.step_time
            self._one_gpu[key] = found
        return found

    def penalty(self, job: JobInfo) -> float:
        return self.restart_s or RESTART_PENALTY_S.get(job.application, DEFAULT_PENALTY_S)

    def cap(self, job: JobInfo) -> int:
        """Most GPUs ``job`` may get: twice the most it held on any type (at least 1), within
        its batch limits (the artifact's ``max_replicas`` with shared maxima)."""
        lim = self.perf.limits(job.application)
        held = max(self._held.get(job.index, {}).values(), default=0)
        return max(min(max(2 * held, 1), max(lim.max_global_bsz // lim.min_local_bsz, 1)), 1)

    def values(self, job: JobInfo) -> dict[Config, float]:
        """Each configuration's value for ``job``, normalized so its smallest is 1 (module
        docstring), before the re-allocation factor."""
        held = self._held.get(job.index, {})
        cap = self.cap(job)
        raw: dict[Config, float] = {}
        variants = self.cluster.variants
        ran = [v for v in variants if v in held]
        reference = max(ran, key=lambda v: (held[v], -variants.index(v))) if ran else None
        for v in variants:
            size = self.cluster.size_of_variant(v)
            for c in self.configs(v):
                if c.gpus > min(cap, size):
                    continue
                if reference is None:
                    if c.gpus == 1:
                        raw[c] = self.one_gpu_throughput(job.application, v)
                elif v in held:
                    raw[c] = self._goodput(job, v, c.nodes, c.gpus)
                elif self.project:
                    gpn = self.cluster.gpus_per_node(reference)
                    ratio = self.one_gpu_throughput(job.application, v) / self.one_gpu_throughput(
                        job.application, reference
                    )
                    raw[c] = self._goodput(job, reference, -(-c.gpus // gpn), c.gpus) * ratio
                elif c.gpus == 1:
                    raw[c] = -1.0  # the artifact's placeholder: valued as the smallest
        known = [g for g in raw.values() if g > 0]
        base = min(known) if known else 1.0
        return {c: (g / base if g > 0 else 1.0) for c, g in raw.items()}

    def _goodput(self, job: JobInfo, variant: str, nodes: int, gpus: int) -> float:
        return self.perf.best_batch(job.application, variant, job.epoch, nodes, gpus).goodput

    def _current(self, job: JobInfo) -> tuple[str, int] | None:
        a = job.allocation
        if a is None:
            return None
        return self.cluster.nodes[a.gpus[0][0]].variant, a.num_gpus

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        for j in jobs:
            current = self._current(j)
            if current is not None:
                held = self._held.setdefault(j.index, {})
                held[current[0]] = max(held.get(current[0], 0), current[1])
        active = {j.index for j in jobs}
        self._held = {k: v for k, v in self._held.items() if k in active}
        variants = self.cluster.variants
        options: list[Option] = []
        configs: list[Config] = []
        for row, j in enumerate(jobs):
            current = self._current(j)
            age = max(now - j.submit_time, 0.0)
            factor = realloc_factor(age, j.restarts, self.penalty(j), grace=True)
            for c, value in self.values(j).items():
                if current != (c.variant, c.gpus):
                    value *= factor
                term = VALUE_CLIP if value <= 0 else min(math.pow(value, self.p), VALUE_CLIP)
                options.append(
                    Option(
                        row,
                        variants.index(c.variant),
                        c.gpus,
                        c.nodes if c.nodes > 1 else 0,
                        round(term - self.lambda_n, 6),
                    )
                )
                configs.append(c)
        free_gpus = [self.cluster.gpus_of_variant(v) for v in variants]
        free_nodes = [
            sum(1 for n in self.cluster.nodes if n.variant == v and n.gpus == n.size > 0)
            for v in variants
        ]
        picked = choose(options, len(jobs), free_gpus, free_nodes)
        chosen = {jobs[row].index: configs[i] for row, i in enumerate(picked) if i is not None}
        return self._place(jobs, chosen)

    def _place(
        self, jobs: Sequence[JobInfo], chosen: Mapping[int, Config]
    ) -> dict[str, Allocation]:
        """GPUs for every chosen configuration (module docstring: keep, whole nodes, best fit)."""
        nodes = self.cluster.nodes
        free = [n.gpus for n in nodes]
        kept: dict[str, Allocation] = {}
        moving: list[JobInfo] = []
        for j in jobs:
            c = chosen.get(j.index)
            if c is None:
                continue
            a = j.allocation
            if (
                a is not None
                and self._current(j) == (c.variant, c.gpus)
                and all(nodes[i].variant == c.variant and free[i] >= k for i, k in a.gpus)
            ):
                kept[j.name] = a
                for i, k in a.gpus:
                    free[i] -= k
            else:
                moving.append(j)
        by_name = {j.name: j for j in jobs}
        placed: dict[str, tuple[tuple[int, int], ...]] = {}
        single = [j for j in moving if chosen[j.index].nodes == 1]
        multi = [j for j in moving if chosen[j.index].nodes > 1]
        for j in sorted(multi, key=lambda j: (-chosen[j.index].gpus, j.index)):
            c = chosen[j.index]
            whole = self._whole_nodes(c, free, kept)
            for name in [n for n, a in kept.items() if a.num_nodes == 1 and a.gpus[0][0] in whole]:
                a = kept.pop(name)
                free[a.gpus[0][0]] += a.num_gpus
                single.append(by_name[name])
            if len(whole) == c.nodes:
                for i in whole:
                    free[i] -= nodes[i].size
                placed[j.name] = tuple((i, nodes[i].size) for i in whole)
            else:
                mine = [n.index for n in nodes if n.variant == c.variant]
                got = place_consolidated(free, c.gpus, mine)
                if got is not None:
                    placed[j.name] = got
        for j in sorted(single, key=lambda j: (-chosen[j.index].gpus, j.index)):
            c = chosen[j.index]
            mine = [n.index for n in nodes if n.variant == c.variant]
            got = place_consolidated(free, c.gpus, mine)
            if got is not None:
                placed[j.name] = got
        out: dict[str, Allocation] = dict(kept)
        for j in jobs:
            gpus = placed.get(j.name)
            if gpus is not None:
                c = chosen[j.index]
                best = self.perf.best_batch(j.application, c.variant, j.epoch, len(gpus), c.gpus)
                out[j.name] = Allocation(
                    gpus, best.config.local_bsz, best.config.accum_steps, adaptive=True
                )
        return out

    def _whole_nodes(
        self, c: Config, free: Sequence[int], kept: Mapping[str, Allocation]
    ) -> list[int]:
        """``c.nodes`` fully available nodes of ``c.variant`` for a multi-node configuration,
        in index order: free ones first, then those only single-node kept jobs hold (fewest
        of their GPUs first; the caller moves those jobs). Fewer if the type has no more."""
        nodes = self.cluster.nodes
        up = [n.index for n in nodes if n.variant == c.variant and n.gpus == n.size > 0]
        whole = [i for i in up if free[i] == nodes[i].size]
        if len(whole) < c.nodes:
            spanned = {i for a in kept.values() if a.num_nodes > 1 for i, _ in a.gpus}
            singles = [0] * len(nodes)
            for a in kept.values():
                if a.num_nodes == 1:
                    singles[a.gpus[0][0]] += a.num_gpus
            spare = [
                i
                for i in up
                if i not in spanned and i not in whole and free[i] + singles[i] == nodes[i].size
            ]
            whole += sorted(spare, key=lambda i: (singles[i], i))[: c.nodes - len(whole)]
        return sorted(whole[: c.nodes])


def _powers_below(n: int) -> list[int]:
    """1, 2, 4, ... below ``n``."""
    out, c = [], 1
    while c < n:
        out.append(c)
        c *= 2
    return out
