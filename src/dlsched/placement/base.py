"""The placer interface: where on the cluster a job of a given demand runs.

A placer is asked for one job at a time, inside a scheduling cycle, against the cluster state as
the cycle has tentatively changed it so far. It returns a :data:`Placement` that fits the free
resources of ``pool`` right now, or None when the job cannot be placed now. It must not change
the state (the cycle applies placements), and for a fixed seed it is deterministic.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import ClassVar

from dlsched.cluster.state import WHOLE, ClusterState, Demand, Placement


class Placer(ABC):
    """Chooses nodes and GPUs for one job. Subclasses set ``name`` and implement :meth:`place`.

    ``options`` are the placer's text options (``--placement-opt KEY=VALUE``); a key not in
    ``option_keys`` raises ``ValueError`` naming it. ``topology_aware`` placers keep jobs
    inside network tiers, so a job can wait with enough GPUs free (fragmentation is counted).
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    option_keys: ClassVar[tuple[str, ...]] = ()
    topology_aware: ClassVar[bool] = False

    def __init__(self, seed: int = 0, options: Mapping[str, str] | None = None) -> None:
        self.seed = seed
        self.options = dict(options or {})
        for key in self.options:
            if key not in self.option_keys:
                takes = ", ".join(self.option_keys) if self.option_keys else "no options"
                raise ValueError(f"--placement-opt {key}: placement {self.name!r} takes {takes}")

    def clone(self) -> Placer:
        """A fresh placer of the same kind, seed and options."""
        return type(self)(seed=self.seed, options=self.options)

    @abstractmethod
    def place(self, state: ClusterState, pool: int, demand: Demand) -> Placement | None:
        """A placement of ``demand`` on free resources of ``pool``, or None if none exists now."""


def whole_gpus(state: ClusterState, node: int, k: int) -> tuple[int, ...]:
    """The first ``k`` wholly free GPU indices of ``node`` (caller checked there are k)."""
    free = state.free_milli[node]
    out: list[int] = []
    g = -1
    for _ in range(k):
        g = free.index(WHOLE, g + 1)
        out.append(g)
    return tuple(out)


def fits_node(state: ClusterState, node: int, demand: Demand, gpus_here: int) -> bool:
    """Whether ``node`` has the type, CPUs and memory for ``gpus_here`` of the job's GPUs."""
    if demand.gpu_type is not None and not state.node_matches(node, demand):
        return False
    if demand.cpus == 0 and demand.memory_mib == 0:
        return True
    share = gpus_here / demand.gpus if demand.gpus else 1.0
    return state.node_fits_extras(node, demand.cpus * share, demand.memory_mib * share)


def place_cpu_only(state: ClusterState, pool: int, demand: Demand) -> Placement | None:
    """Best fit on CPUs for a job with no GPU: the up node with the fewest free CPUs that fits."""
    best, best_free = -1, float("inf")
    for node in state.pool_nodes[pool]:
        if state.node_up[node] and state.node_fits_extras(node, demand.cpus, demand.memory_mib):
            free = state.free_cpus[node]
            # Untracked CPUs are infinite: the first node that fits then wins the tie.
            if best < 0 or free < best_free:
                best, best_free = node, free
    return ((best, ()),) if best >= 0 else None


def place_fraction(state: ClusterState, pool: int, demand: Demand) -> Placement | None:
    """Best fit for a share of one GPU: the partly used GPU with the least share left that fits;
    failing that, a whole GPU on the node with the fewest wholly free GPUs."""
    best: tuple[int, int] | None = None
    best_left = WHOLE + 1
    for node in state.partial_nodes[pool]:
        if not state.node_up[node] or not fits_node(state, node, demand, 1):
            continue
        for g, free in enumerate(state.free_milli[node]):
            if demand.milli <= free < WHOLE and free < best_left:
                best, best_left = (node, g), free
    if best is not None:
        return ((best[0], (best[1],)),)
    for k in range(1, len(state.buckets[pool])):
        for node in state.bucket_nodes(pool, k):
            if fits_node(state, node, demand, 1):
                return ((node, whole_gpus(state, node, 1)),)
    return None


def fragmented(state: ClusterState, pool: int, demand: Demand) -> bool:
    """Whether the up nodes of ``pool`` of the job's GPU type have as many wholly free GPUs as
    a whole-GPU ``demand`` asks in total (so only their layout keeps it from starting)."""
    if demand.gpus == 0 or demand.milli < WHOLE:
        return False
    free = 0
    for node in state.pool_nodes[pool]:
        if state.node_up[node] and state.node_matches(node, demand):
            free += state.free_whole[node]
            if free >= demand.gpus:
                return True
    return False
