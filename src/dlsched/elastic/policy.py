"""The elastic policy interface.

Each round the simulator calls :meth:`ElasticPolicy.decide` with the time, the active jobs and
the cluster; the policy returns the allocation of every job that should hold GPUs (a job left
out holds none). The simulator validates the answer (:class:`AllocationError` names the policy)
and charges a restart whenever a job's GPUs change. Policies are dataclasses holding their
options and may keep state across rounds (one instance serves one run); every random choice
comes from ``seed``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar

from dlsched.elastic.types import Allocation, ClusterView, FinishedInfo, JobInfo
from dlsched.perf.perfbook import PerfBook
from dlsched.perf.throughput_tables import is_table_application


class AllocationError(ValueError):
    """A policy returned an allocation the cluster cannot hold."""


class ElasticPolicy(ABC):
    """Base of elastic policies (module docstring)."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    table_jobs: ClassVar[bool] = False
    """Whether the policy schedules jobs of the ElasticFlow throughput tables
    (:mod:`dlsched.perf.throughput_tables`); others refuse them at arrival."""
    interval_s: float = 60.0
    """Seconds between this policy's decisions; between them allocations are kept. A multiple
    of the simulator's round."""

    def bind(self, cluster: ClusterView, perf: PerfBook, seed: int) -> None:
        """Called once before the first round with every node at its full size."""
        self.cluster = cluster
        self.perf = perf
        self.seed = seed

    def observe(self, cluster: ClusterView) -> None:
        """Called before each :meth:`decide` with what the policy may use in that round (the
        bound cluster's nodes in the same order; a node's ``gpus`` is 0 when it is down or
        powered off, less than its ``size`` when other jobs hold some of it)."""
        self.cluster = cluster

    def never_fits(self, application: str, gpus: int, cluster: ClusterView) -> str | None:
        """Why a job of ``application`` asking for ``gpus`` GPUs can never run on ``cluster``
        under this policy (None if it can); such a job is set aside when it arrives."""
        if is_table_application(application) and not self.table_jobs:
            return (
                f"policy {self.name!r} models jobs by the Pollux profiles; {application} is "
                "described by an ElasticFlow throughput table (policies elasticflow, or an "
                "ordering policy, run it)"
            )
        total = sum(n.size for n in cluster.nodes)
        if gpus > total:
            return f"needs {gpus} GPUs; the cluster has {total}"
        return None

    @abstractmethod
    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        """Allocations by job name for the round starting at ``now``; ``jobs`` are the active
        (submitted, unfinished) jobs in submit order."""

    def take_declined(self) -> Mapping[str, str]:
        """Jobs (by name) the last :meth:`decide` refused for good, with the reason, each
        reported once: admission control. A declined job must not be allocated GPUs in that
        answer and leaves the run unfinished. None by default."""
        return {}

    def finished(self, done: Sequence[FinishedInfo]) -> None:  # noqa: B027 (optional hook)
        """Jobs that finished during the last round (before the next :meth:`decide`); a no-op
        unless a policy learns from them."""


def validate(
    policy: str, answer: Mapping[str, Allocation], jobs: Sequence[JobInfo], cluster: ClusterView
) -> None:
    """Raise :class:`AllocationError`, naming ``policy``, unless ``answer`` only allocates
    active jobs, on existing nodes, in positive counts and never more GPUs than a node has."""
    active = {j.name for j in jobs}
    used = [0] * len(cluster.nodes)
    for name, alloc in answer.items():
        if name not in active:
            raise AllocationError(
                f"policy {policy!r} allocated GPUs to {name!r}, not an active job"
            )
        if not alloc.gpus:
            raise AllocationError(f"policy {policy!r} gave job {name!r} an empty allocation")
        if alloc.local_bsz < 1 or alloc.accum_steps < 0:
            raise AllocationError(
                f"policy {policy!r} gave job {name!r} local batch {alloc.local_bsz} and "
                f"{alloc.accum_steps} accumulation steps; expected >= 1 and >= 0"
            )
        last = -1
        for node, count in alloc.gpus:
            if not 0 <= node < len(cluster.nodes) or node <= last:
                raise AllocationError(
                    f"policy {policy!r} gave job {name!r} node {node}; expected increasing "
                    f"node indices in 0..{len(cluster.nodes) - 1}"
                )
            if count < 1:
                raise AllocationError(
                    f"policy {policy!r} gave job {name!r} {count} GPUs on node {node}"
                )
            last = node
            used[node] += count
    for spec, total in zip(cluster.nodes, used, strict=True):
        if total > spec.gpus:
            raise AllocationError(
                f"policy {policy!r} over-commits node {spec.name!r}: {total} GPUs allocated, "
                f"it has {spec.gpus}"
            )


def free_gpus(cluster: ClusterView, kept: Mapping[str, Allocation]) -> list[int]:
    """GPUs per node not held by ``kept``."""
    free = [n.gpus for n in cluster.nodes]
    for alloc in kept.values():
        for node, count in alloc.gpus:
            free[node] -= count
    return free


def place_consolidated(
    free: list[int], count: int, nodes: Sequence[int] | None = None
) -> tuple[tuple[int, int], ...] | None:
    """Take ``count`` GPUs from ``free`` (mutated) on as few nodes as possible, among
    ``nodes`` (default: all): best fit on one node if one can hold them all, else the nodes
    with the most free GPUs first (lowest index on ties). None, and nothing taken, if they do
    not fit."""
    candidates = list(range(len(free))) if nodes is None else list(nodes)
    if count < 1 or sum(free[i] for i in candidates) < count:
        return None
    fits = [i for i in candidates if free[i] >= count]
    if fits:
        best = min(fits, key=lambda i: (free[i], i))
        free[best] -= count
        return ((best, count),)
    taken: dict[int, int] = {}
    need = count
    for i in sorted(candidates, key=lambda i: (-free[i], i)):
        if need == 0:
            break
        take = min(free[i], need)
        if take > 0:
            taken[i] = take
            need -= take
    for i, c in taken.items():
        free[i] -= c
    return tuple(sorted(taken.items()))


def same_gpus(a: Allocation | None, b: Allocation | None) -> bool:
    """Whether two allocations hold the same GPUs (a change of batch alone is no restart)."""
    return (a.gpus if a else ()) == (b.gpus if b else ())


def fixed_allocation(
    perf: PerfBook, job: JobInfo, gpus: tuple[tuple[int, int], ...], global_bsz: int | None = None
) -> Allocation:
    """``gpus`` for ``job`` at a fixed global batch (default: its requested one), split as
    :meth:`PerfBook.fixed_batch` does."""
    n = sum(c for _, c in gpus)
    config = perf.fixed_batch(
        job.application, n, job.requested_bsz if global_bsz is None else global_bsz
    )
    return Allocation(gpus, config.local_bsz, config.accum_steps)


def realloc_factor(age: float, restarts: int, delay: float, grace: bool = False) -> float:
    """Pollux's re-allocation factor ``max(T − R·δ, 0)/(T + δ)``: how much of a new
    allocation's value a job of age ``T`` with ``R`` re-allocations so far keeps when each costs
    ``δ`` seconds (Qiao et al., OSDI'21, §4.2). With ``grace`` a job younger than one delay keeps
    all of it (Sia's simulator: a job not yet placed pays no restart to be placed)."""
    if grace and age < delay:
        return 1.0
    return max(age - restarts * delay, 0.0) / (age + delay)
