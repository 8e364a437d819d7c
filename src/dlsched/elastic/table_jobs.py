"""What the policies of ElasticFlow throughput-table jobs share (``elasticflow``, ``chronus``):
one GPU class per pool, a job's curve by its model and global batch on that class, its local
batch from a GPU count, and buddy placement of power-of-two sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlsched.elastic.policy import place_consolidated
from dlsched.elastic.types import Allocation, ClusterView, JobInfo
from dlsched.perf.throughput_tables import (
    TableError,
    ThroughputCurve,
    is_table_application,
    table_class,
    throughput_curve,
)


def table_pool_problem(policy: str, application: str, cluster: ClusterView) -> str | None:
    """Why ``policy`` cannot run a job of ``application`` on ``cluster`` (None if it can): the
    job must be of the throughput tables and the pool of one table GPU class."""
    if not is_table_application(application):
        return (
            f"policy {policy!r} runs jobs of the ElasticFlow throughput tables "
            f"(elasticflow/<model>); {application!r} is not one"
        )
    classes = {table_class(v) for v in cluster.variants}
    if len(classes) != 1 or None in classes:
        return (
            f"policy {policy!r} plans one GPU class (A100 or T4) per pool; this pool has "
            f"variants {', '.join(cluster.variants)}"
        )
    return None


@dataclass
class TableCurves:
    """Throughput curves of table jobs on the GPU class of a pool, read once per (model,
    batch)."""

    _curves: dict[tuple[str, int], ThroughputCurve] = field(default_factory=dict)

    def of(self, job: JobInfo, cluster: ClusterView) -> ThroughputCurve:
        """``job``'s curve on ``cluster``'s GPU class (:class:`TableError` without one)."""
        key = (job.application, job.requested_bsz)
        curve = self._curves.get(key)
        if curve is None:
            gpu_class = table_class(cluster.nodes[0].variant)
            if gpu_class is None:
                raise TableError(f"no throughput table for {cluster.nodes[0].variant}")
            curve = self._curves[key] = throughput_curve(
                job.application, job.requested_bsz, gpu_class
            )
        return curve


def table_allocation(job: JobInfo, gpus: tuple[tuple[int, int], ...]) -> Allocation:
    """``gpus`` for ``job`` at its global batch split evenly (at least one example each)."""
    n = sum(c for _, c in gpus)
    return Allocation(gpus, max(1, -(-job.requested_bsz // n)))


def buddy_place(
    cluster: ClusterView, free: list[int], size: int
) -> tuple[tuple[int, int], ...] | None:
    """``size`` GPUs from ``free`` (per node, updated): best fit on one node, else whole free
    nodes, else consolidated on the fewest nodes; None if the free GPUs are too few."""
    sizes = [n.size for n in cluster.nodes]
    fits = [i for i, f in enumerate(free) if f >= size and f > 0]
    if fits and size <= max(sizes):
        best = min(fits, key=lambda i: (free[i], i))
        free[best] -= size
        return ((best, size),)
    whole = [i for i, f in enumerate(free) if f == sizes[i] and f > 0]
    taken: list[tuple[int, int]] = []
    need = size
    for i in whole:
        if need == 0:
            break
        take = min(free[i], need)
        taken.append((i, take))
        need -= take
    if need == 0:
        for i, take in taken:
            free[i] -= take
        return tuple(taken)
    return place_consolidated(free, size)
