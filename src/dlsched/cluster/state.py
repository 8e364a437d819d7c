"""Mutable runtime state of a cluster: free GPU shares, CPUs and memory per node, node health.

Nodes are addressed by index (their order in the :class:`ClusterSpec`). Nodes are grouped into
*pools*: the scheduling domains (one per partition, or a single pool when partitions are off).
Each pool keeps an index of its up nodes by number of wholly free GPUs (lowest node index
first within a count), so best-fit and worst-fit lookups cost O(distinct free counts) rather
than O(nodes).

Contracts:
- :meth:`ClusterState.allocate` raises :class:`OverCommitError` rather than give any GPU share,
  CPU or memory twice; it never leaves the state half-changed.
- Inside :meth:`ClusterState.tentative` every change is undone on exit, so a scheduling cycle can
  try placements without changing what the driver sees afterwards.
- Time-sharing (co-location): :meth:`ClusterState.join` lets a second job run on GPUs that one job
  holds whole, never more than two jobs per GPU. Whichever of the two stops first calls
  :meth:`ClusterState.leave` (the GPUs stay held by the other); the last one releases them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from heapq import heappop, heappush

from dlsched.cluster.spec import ClusterSpec, gpu_type_matches

WHOLE = 1000
"""A GPU's full share in thousandths."""

Placement = tuple[tuple[int, tuple[int, ...]], ...]
"""Where a job runs: ``((node index, (GPU indices on that node...)), ...)``. A CPU-only job has
one entry with no GPU indices."""


Split = tuple[tuple[float, float], ...]
"""CPUs and memory (MiB) a job takes on each entry of its placement, when they are not in
proportion to its GPUs there (a parameter-server job's PS tasks hold CPUs and memory only)."""


# Operations of the undo log of a tentative block.
_RELEASE, _ALLOCATE, _JOIN, _LEAVE = 0, 1, 2, 3


class OverCommitError(RuntimeError):
    """An allocation asked for a share, CPU or memory that is not free: always a bug upstream."""


@dataclass(frozen=True, slots=True)
class Demand:
    """What a job asks of the cluster. ``milli`` is the share of each GPU (1000 = whole)."""

    gpus: int
    milli: int = WHOLE
    cpus: float = 0.0
    memory_mib: float = 0.0
    gpu_type: str | None = None


class ClusterState:
    """Free resources and health of every node, grouped into pools (see module docstring)."""

    def __init__(self, spec: ClusterSpec, use_partitions: bool = True) -> None:
        self.spec = spec
        self.use_partitions = use_partitions
        nodes = spec.nodes
        if use_partitions:
            self.pool_names: tuple[str, ...] = spec.partitions
        else:
            self.pool_names = ("*",)
        pool_index = {name: i for i, name in enumerate(self.pool_names)}
        self.node_pool: list[int] = [
            pool_index[n.partition] if use_partitions else 0 for n in nodes
        ]
        self.node_names: list[str] = [n.name for n in nodes]
        self.node_gpus: list[int] = [n.gpus for n in nodes]
        self.node_type: list[str] = [n.gpu_type for n in nodes]
        self.node_rack: list[str] = [n.rack for n in nodes]
        self.node_block: list[str] = [n.block for n in nodes]
        self.node_up: list[bool] = [True] * len(nodes)
        self.free_milli: list[list[int]] = [[WHOLE] * n.gpus for n in nodes]
        self.free_whole: list[int] = [n.gpus for n in nodes]
        inf = math.inf
        self.cpu_cap: list[float] = [inf if n.cpus is None else n.cpus for n in nodes]
        self.mem_cap: list[float] = [inf if n.memory_mib is None else n.memory_mib for n in nodes]
        self.free_cpus: list[float] = list(self.cpu_cap)
        self.free_mem: list[float] = list(self.mem_cap)
        npools = len(self.pool_names)
        self.pool_nodes: list[list[int]] = [[] for _ in range(npools)]
        for i, p in enumerate(self.node_pool):
            self.pool_nodes[p].append(i)
        self.pool_max_node_gpus: list[int] = [
            max((self.node_gpus[i] for i in members), default=0) for members in self.pool_nodes
        ]
        self.pool_total_gpus: list[int] = [
            sum(self.node_gpus[i] for i in members) for members in self.pool_nodes
        ]
        self.pool_up_gpus: list[int] = list(self.pool_total_gpus)
        self.pool_used_milli: list[int] = [0] * npools
        self.pool_types: list[frozenset[str]] = [
            frozenset(self.node_type[i] for i in members) for members in self.pool_nodes
        ]
        # buckets[p][k]: a min-heap of the indices of pool p's up nodes with exactly k wholly
        # free GPUs, with lazy deletion: an entry is valid while the node is up and still has k
        # free. Lowest index first is the Helios tie-break among equally free nodes.
        self.buckets: list[list[list[int]]] = [
            [[] for _ in range(self.pool_max_node_gpus[p] + 1)] for p in range(npools)
        ]
        for i, p in enumerate(self.node_pool):
            self.buckets[p][self.free_whole[i]].append(i)
        # A bucket holding more stale entries than this is rebuilt.
        self._bucket_limit = [2 * len(members) + 16 for members in self.pool_nodes]
        # Nodes with a GPU that is partly shared: candidates for fractional best fit.
        self.partial_nodes: list[dict[int, None]] = [{} for _ in range(npools)]
        # GPUs (node, index) two jobs time-share; the second job's CPUs and memory are its own.
        self.shared: set[tuple[int, int]] = set()
        # GPUs that fractional shares fill up: taken, but not by one job whole (none may join).
        self._filled_by_shares: set[tuple[int, int]] = set()
        self._undo: list[tuple[int, Placement, int, float, float, Split | None]] | None = None
        self._fit_cache: dict[tuple[int, Demand], str | None] = {}
        self._max_typed: dict[tuple[int, str], int] = {}

    # ---- queries -------------------------------------------------------------------------
    @property
    def num_pools(self) -> int:
        return len(self.pool_names)

    @property
    def total_gpus(self) -> int:
        return sum(self.pool_total_gpus)

    def pool_free_gpus(self, pool: int) -> float:
        """Free GPU capacity of a pool's up nodes, in GPUs (fractions count)."""
        return self.pool_up_gpus[pool] - self.pool_used_milli[pool] / WHOLE

    def node_idle(self, node: int) -> bool:
        """Whether ``node`` holds no GPU share, CPU or memory of any job."""
        return (
            self.free_whole[node] == self.node_gpus[node]
            and all(f == WHOLE for f in self.free_milli[node])
            and self.free_cpus[node] >= self.cpu_cap[node] - 1e-6
            and self.free_mem[node] >= self.mem_cap[node] - 1e-6
        )

    def node_fits_extras(self, node: int, cpus: float, memory_mib: float) -> bool:
        return self.free_cpus[node] >= cpus and self.free_mem[node] >= memory_mib

    def max_node_gpus(self, pool: int, gpu_type: str | None) -> int:
        """The most GPUs any node of ``pool`` of the requested type has (healthy or not)."""
        if gpu_type is None:
            return self.pool_max_node_gpus[pool]
        key = (pool, gpu_type)
        if key not in self._max_typed:
            self._max_typed[key] = max(
                (
                    self.node_gpus[i]
                    for i in self.pool_nodes[pool]
                    if gpu_type_matches(gpu_type, self.node_type[i])
                ),
                default=0,
            )
        return self._max_typed[key]

    def node_matches(self, node: int, demand: Demand) -> bool:
        return gpu_type_matches(demand.gpu_type, self.node_type[node])

    def can_ever_fit(self, pool: int, demand: Demand) -> str | None:
        """Why ``demand`` can never run in ``pool`` on a healthy, empty cluster, or None."""
        key = (pool, demand)
        if key not in self._fit_cache:
            self._fit_cache[key] = self._why_never_fits(pool, demand)
        return self._fit_cache[key]

    def _why_never_fits(self, pool: int, demand: Demand) -> str | None:
        members = self.pool_nodes[pool]
        typed = [i for i in members if gpu_type_matches(demand.gpu_type, self.node_type[i])]
        if demand.gpus > 0 and not typed:
            return f"no node of GPU type {demand.gpu_type!r} in pool {self.pool_names[pool]!r}"
        if demand.gpus > sum(self.node_gpus[i] for i in typed):
            return (
                f"needs {demand.gpus} GPUs but pool {self.pool_names[pool]!r} has "
                f"{sum(self.node_gpus[i] for i in typed)}"
            )
        nodes_needed = typed if demand.gpus > 0 else members
        per_gpu_cpu = demand.cpus / demand.gpus if demand.gpus else demand.cpus
        per_gpu_mem = demand.memory_mib / demand.gpus if demand.gpus else demand.memory_mib
        if demand.gpus == 0 or demand.gpus <= self.max_node_gpus(pool, demand.gpu_type):
            k = max(demand.gpus, 1)
            if not any(
                self.cpu_cap[i] >= per_gpu_cpu * k and self.mem_cap[i] >= per_gpu_mem * k
                for i in nodes_needed
            ):
                kind = "" if demand.gpu_type is None else f"of GPU type {demand.gpu_type!r} "
                return (
                    f"needs {demand.cpus:g} CPUs and {demand.memory_mib:g} MiB on one node; "
                    f"no node {kind}in pool {self.pool_names[pool]!r} has that much"
                )
        return None

    # ---- changes -------------------------------------------------------------------------
    def _move(self, node: int, new_whole: int) -> None:
        if self.free_whole[node] == new_whole:
            return
        self.free_whole[node] = new_whole
        if self.node_up[node]:
            self._push(node)

    def _push(self, node: int) -> None:
        pool = self.node_pool[node]
        heap = self.buckets[pool][self.free_whole[node]]
        heappush(heap, node)
        if len(heap) > self._bucket_limit[pool]:
            heap[:] = self.bucket_nodes(pool, self.free_whole[node])

    def first_in_bucket(self, pool: int, free: int) -> int:
        """The lowest-index up node of ``pool`` with exactly ``free`` wholly free GPUs, or -1."""
        heap = self.buckets[pool][free]
        fw, up = self.free_whole, self.node_up
        while heap:
            node = heap[0]
            if fw[node] == free and up[node]:
                return node
            heappop(heap)
        return -1

    def bucket_nodes(self, pool: int, free: int) -> list[int]:
        """All up nodes of ``pool`` with exactly ``free`` wholly free GPUs, by index."""
        fw, up = self.free_whole, self.node_up
        return sorted({n for n in self.buckets[pool][free] if fw[n] == free and up[n]})

    def _refresh_partial(self, node: int) -> None:
        partial = self.partial_nodes[self.node_pool[node]]
        if any(0 < f < WHOLE for f in self.free_milli[node]):
            partial[node] = None
        else:
            partial.pop(node, None)

    def allocate(
        self,
        placement: Placement,
        milli: int,
        cpus: float,
        memory_mib: float,
        split: Split | None = None,
    ) -> None:
        """Take ``milli`` of each listed GPU and the job's CPUs/memory, split over its nodes in
        proportion to its GPUs there, or as ``split`` gives per placement entry (``cpus`` and
        ``memory_mib`` are then ignored). Raises :class:`OverCommitError` (changing nothing) if
        any of it is not free or a node is down."""
        if split is not None:
            self._allocate_split(placement, milli, split)
            return
        if len(placement) > 1:
            total = sum(len(g) for _, g in placement)
            if len({node for node, _ in placement}) != len(placement):
                raise OverCommitError(f"a node listed twice in placement {placement}")
        else:
            total = len(placement[0][1])
        total = total or 1
        extras = cpus > 0 or memory_mib > 0
        free_milli, up = self.free_milli, self.node_up
        for node, gpu_ids in placement:
            if not up[node]:
                raise OverCommitError(f"node {self.node_names[node]} is down")
            fm = free_milli[node]
            for g in gpu_ids:
                if fm[g] < milli:
                    raise OverCommitError(
                        f"GPU {g} of node {self.node_names[node]} has {fm[g]} free, {milli} asked"
                    )
            if len(gpu_ids) > 1 and len(set(gpu_ids)) != len(gpu_ids):
                raise OverCommitError(f"GPU listed twice on node {self.node_names[node]}")
            if extras:
                share = (len(gpu_ids) or total) / total
                if self.free_cpus[node] < cpus * share - 1e-9 or (
                    self.free_mem[node] < memory_mib * share - 1e-9
                ):
                    raise OverCommitError(f"node {self.node_names[node]} lacks CPUs or memory")
        for node, gpu_ids in placement:
            fm = free_milli[node]
            whole_taken = 0
            for g in gpu_ids:
                if fm[g] == WHOLE:
                    whole_taken += 1
                fm[g] -= milli
                if milli != WHOLE and fm[g] == 0:
                    self._filled_by_shares.add((node, g))
            if extras:
                share = (len(gpu_ids) or total) / total
                self.free_cpus[node] -= cpus * share
                self.free_mem[node] -= memory_mib * share
            self.pool_used_milli[self.node_pool[node]] += milli * len(gpu_ids)
            if whole_taken:
                # As _move, inline on this hot path (the node is up).
                self.free_whole[node] -= whole_taken
                self._push(node)
            if milli != WHOLE:
                self._refresh_partial(node)
        if self._undo is not None:
            self._undo.append((_ALLOCATE, placement, milli, cpus, memory_mib, None))

    def release(
        self,
        placement: Placement,
        milli: int,
        cpus: float,
        memory_mib: float,
        split: Split | None = None,
    ) -> None:
        """Give back what :meth:`allocate` took with the same arguments."""
        if split is not None:
            self._release_split(placement, milli, split)
            return
        free_milli, up = self.free_milli, self.node_up
        shared = self.shared
        for node, gpu_ids in placement:
            fm = free_milli[node]
            for g in gpu_ids:
                if fm[g] + milli > WHOLE:
                    raise OverCommitError(f"GPU {g} of {self.node_names[node]} released twice")
                if shared and (node, g) in shared:
                    raise OverCommitError(
                        f"GPU {g} of {self.node_names[node]} is time-shared: leave() it first"
                    )
        if self._undo is not None:
            self._undo.append((_RELEASE, placement, milli, cpus, memory_mib, None))
        total = sum(len(g) for _, g in placement) if len(placement) > 1 else len(placement[0][1])
        total = total or 1
        extras = cpus > 0 or memory_mib > 0
        for node, gpu_ids in placement:
            fm = free_milli[node]
            whole_back = 0
            for g in gpu_ids:
                free = fm[g] = fm[g] + milli
                if free == WHOLE:
                    whole_back += 1
                if milli != WHOLE:
                    self._filled_by_shares.discard((node, g))
            if extras:
                share = (len(gpu_ids) or total) / total
                self.free_cpus[node] = min(self.cpu_cap[node], self.free_cpus[node] + cpus * share)
                self.free_mem[node] = min(
                    self.mem_cap[node], self.free_mem[node] + memory_mib * share
                )
            self.pool_used_milli[self.node_pool[node]] -= milli * len(gpu_ids)
            if whole_back:
                self.free_whole[node] += whole_back
                if up[node]:
                    self._push(node)
            if milli != WHOLE:
                self._refresh_partial(node)

    def can_join(self, placement: Placement, cpus: float, memory_mib: float) -> bool:
        """Whether a job of ``cpus`` and ``memory_mib`` may time-share the GPUs of
        ``placement``: each is held whole by one job and not shared yet, and the nodes are up
        with the job's CPUs and memory free (split over them in proportion to GPUs)."""
        if not placement or any(not g for _, g in placement):
            return False
        total = sum(len(g) for _, g in placement)
        for node, gpu_ids in placement:
            if not self.node_up[node]:
                return False
            fm = self.free_milli[node]
            if any(
                fm[g] != 0 or (node, g) in self.shared or (node, g) in self._filled_by_shares
                for g in gpu_ids
            ):
                return False
            part = len(gpu_ids) / total
            if self.free_cpus[node] < cpus * part - 1e-9 or (
                self.free_mem[node] < memory_mib * part - 1e-9
            ):
                return False
        return True

    def join(self, placement: Placement, cpus: float, memory_mib: float) -> None:
        """A second job time-shares the GPUs of ``placement`` (see :meth:`can_join`), taking
        its CPUs and memory. Raises :class:`OverCommitError` (changing nothing) otherwise."""
        if not self.can_join(placement, cpus, memory_mib):
            raise OverCommitError(f"GPUs {placement} cannot take a second job")
        total = sum(len(g) for _, g in placement)
        for node, gpu_ids in placement:
            self.shared.update((node, g) for g in gpu_ids)
            part = len(gpu_ids) / total
            self.free_cpus[node] -= cpus * part
            self.free_mem[node] -= memory_mib * part
        if self._undo is not None:
            self._undo.append((_JOIN, placement, WHOLE, cpus, memory_mib, None))

    def leave(self, placement: Placement, cpus: float, memory_mib: float) -> None:
        """The first of two jobs time-sharing ``placement`` stops: the GPUs stay held by the
        other; this job's CPUs and memory come back."""
        if any((node, g) not in self.shared for node, gpu_ids in placement for g in gpu_ids):
            raise OverCommitError(f"GPUs {placement} are not time-shared")
        total = sum(len(g) for _, g in placement)
        for node, gpu_ids in placement:
            self.shared.difference_update((node, g) for g in gpu_ids)
            part = len(gpu_ids) / total
            self.free_cpus[node] = min(self.cpu_cap[node], self.free_cpus[node] + cpus * part)
            self.free_mem[node] = min(self.mem_cap[node], self.free_mem[node] + memory_mib * part)
        if self._undo is not None:
            self._undo.append((_LEAVE, placement, WHOLE, cpus, memory_mib, None))

    def _allocate_split(self, placement: Placement, milli: int, split: Split) -> None:
        if len(split) != len(placement):
            raise ValueError(f"split has {len(split)} entries for {len(placement)} nodes")
        for (node, gpu_ids), (cpus, mem) in zip(placement, split, strict=True):
            if not self.node_up[node]:
                raise OverCommitError(f"node {self.node_names[node]} is down")
            fm = self.free_milli[node]
            if any(fm[g] < milli for g in gpu_ids) or len(set(gpu_ids)) != len(gpu_ids):
                raise OverCommitError(f"GPUs {gpu_ids} of node {self.node_names[node]} not free")
            if self.free_cpus[node] < cpus - 1e-9 or self.free_mem[node] < mem - 1e-9:
                raise OverCommitError(f"node {self.node_names[node]} lacks CPUs or memory")
        for (node, gpu_ids), (cpus, mem) in zip(placement, split, strict=True):
            self._take(node, gpu_ids, milli, cpus, mem)
        if self._undo is not None:
            self._undo.append((_ALLOCATE, placement, milli, 0.0, 0.0, split))

    def _release_split(self, placement: Placement, milli: int, split: Split) -> None:
        for node, gpu_ids in placement:
            if any(self.free_milli[node][g] + milli > WHOLE for g in gpu_ids):
                raise OverCommitError(f"GPUs of {self.node_names[node]} released twice")
            if any((node, g) in self.shared for g in gpu_ids):
                raise OverCommitError(
                    f"GPUs {gpu_ids} of {self.node_names[node]} are time-shared: leave() first"
                )
        if self._undo is not None:
            self._undo.append((_RELEASE, placement, milli, 0.0, 0.0, split))
        for (node, gpu_ids), (cpus, mem) in zip(placement, split, strict=True):
            self._take(node, gpu_ids, -milli, -cpus, -mem)

    def _take(
        self, node: int, gpu_ids: tuple[int, ...], milli: int, cpus: float, mem: float
    ) -> None:
        """Take (negative: give back) ``milli`` of each GPU and the CPUs and memory on ``node``."""
        fm = self.free_milli[node]
        before = sum(1 for g in gpu_ids if fm[g] == WHOLE)
        for g in gpu_ids:
            fm[g] -= milli
            if abs(milli) != WHOLE:
                if fm[g] == 0:
                    self._filled_by_shares.add((node, g))
                else:
                    self._filled_by_shares.discard((node, g))
        after = sum(1 for g in gpu_ids if fm[g] == WHOLE)
        self.free_cpus[node] = min(self.cpu_cap[node], self.free_cpus[node] - cpus)
        self.free_mem[node] = min(self.mem_cap[node], self.free_mem[node] - mem)
        self.pool_used_milli[self.node_pool[node]] += milli * len(gpu_ids)
        self._move(node, self.free_whole[node] - before + after)
        if abs(milli) != WHOLE:
            self._refresh_partial(node)

    def set_node_up(self, node: int, up: bool) -> None:
        """Mark a node failed or repaired. A failed node must hold no allocation."""
        if self.node_up[node] == up:
            return
        pool = self.node_pool[node]
        if not up and (
            self.free_whole[node] != self.node_gpus[node]
            or any(f != WHOLE for f in self.free_milli[node])
        ):
            raise OverCommitError(f"node {self.node_names[node]} failed while holding jobs")
        self.node_up[node] = up
        if up:
            self._push(node)
            self.pool_up_gpus[pool] += self.node_gpus[node]
        else:
            self.pool_up_gpus[pool] -= self.node_gpus[node]

    def begin_tentative(self) -> None:
        """Start recording changes so :meth:`rollback` can undo them (no nesting)."""
        if self._undo is not None:
            raise RuntimeError("tentative changes do not nest")
        self._undo = []

    def rollback(self) -> None:
        """Undo every allocate/release since :meth:`begin_tentative`, newest first."""
        undo, self._undo = self._undo, None
        if undo is None:
            raise RuntimeError("rollback() without begin_tentative()")
        for op, placement, milli, cpus, mem, split in reversed(undo):
            if op == _ALLOCATE:
                self.release(placement, milli, cpus, mem, split)
            elif op == _RELEASE:
                self.allocate(placement, milli, cpus, mem, split)
            elif op == _JOIN:
                self.leave(placement, cpus, mem)
            else:
                self.join(placement, cpus, mem)

    @contextmanager
    def tentative(self) -> Iterator[ClusterState]:
        """Allocations and releases made inside the block are undone when it exits (also on
        error), so the state afterwards equals the state before."""
        self.begin_tentative()
        try:
            yield self
        finally:
            self.rollback()

    def busy_gpus(self, pool: int) -> float:
        return self.pool_used_milli[pool] / WHOLE
