"""Consolidated placement, as in the Helios evaluation (Hu et al., SC'21).

A job that fits on one node goes to the node with the fewest free GPUs that fits (best fit).
A larger job takes wholly free nodes, largest first, while what remains is at least a whole
node, and then one more node, chosen by best fit, for the remainder. Fractional GPU shares are
packed best fit onto partly used GPUs first.
"""

from __future__ import annotations

from dlsched.cluster.state import WHOLE, ClusterState, Demand, Placement
from dlsched.placement.base import (
    Placer,
    fits_node,
    place_cpu_only,
    place_fraction,
    whole_gpus,
)


def best_fit_node(
    state: ClusterState, pool: int, demand: Demand, k: int, exclude: frozenset[int] = frozenset()
) -> int:
    """The up node of ``pool`` with the fewest wholly free GPUs that has ``k`` of them (lowest
    index among equals) and suits the demand's type, CPUs and memory, or -1."""
    for free in range(k, len(state.buckets[pool])):
        node = state.first_in_bucket(pool, free)
        if node < 0:
            continue
        if node not in exclude and fits_node(state, node, demand, k):
            return node
        for node in state.bucket_nodes(pool, free):
            if node not in exclude and fits_node(state, node, demand, k):
                return node
    return -1


def fits_one_node(state: ClusterState, pool: int, demand: Demand) -> bool:
    """Whether a job of ``demand`` runs on one node: CPU-only, a share of one GPU, or no more
    GPUs than the largest node of its type in ``pool`` has."""
    return (
        demand.gpus == 0
        or demand.milli < WHOLE
        or demand.gpus <= state.max_node_gpus(pool, demand.gpu_type)
    )


def place_on_one_node(state: ClusterState, pool: int, demand: Demand) -> Placement | None:
    """Consolidate's placement of a job that :func:`fits_one_node`: best fit on CPUs, on a
    partly used GPU, or on the node with the fewest free GPUs that holds it; None if no node
    has room now."""
    if demand.gpus == 0:
        return place_cpu_only(state, pool, demand)
    if demand.milli < WHOLE:
        return place_fraction(state, pool, demand)
    node = best_fit_node(state, pool, demand, demand.gpus)
    return None if node < 0 else ((node, whole_gpus(state, node, demand.gpus)),)


class Consolidate(Placer):
    name = "consolidate"
    description = "best fit on one node; whole nodes plus one best-fit node beyond (Helios)"

    def place(self, state: ClusterState, pool: int, demand: Demand) -> Placement | None:
        if fits_one_node(state, pool, demand):
            return place_on_one_node(state, pool, demand)
        return self._multi_node(state, pool, demand)

    def _multi_node(self, state: ClusterState, pool: int, demand: Demand) -> Placement | None:
        empty = [
            node
            for free in range(len(state.buckets[pool]) - 1, 0, -1)
            for node in state.bucket_nodes(pool, free)
            if state.free_whole[node] == state.node_gpus[node]
        ]
        empty.sort(key=lambda n: -state.node_gpus[n])
        chosen: list[tuple[int, tuple[int, ...]]] = []
        remaining = demand.gpus
        for node in empty:
            cap = state.node_gpus[node]
            if remaining >= cap and fits_node(state, node, demand, cap):
                chosen.append((node, whole_gpus(state, node, cap)))
                remaining -= cap
                if remaining == 0:
                    break
        if remaining > 0:
            used = frozenset(n for n, _ in chosen)
            node = best_fit_node(state, pool, demand, remaining, used)
            if node < 0:
                return None
            chosen.append((node, whole_gpus(state, node, remaining)))
        return tuple(chosen)
