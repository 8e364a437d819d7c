"""Spread placement: each GPU of a job goes to the node with the most free GPUs at that moment,
so jobs spread over as many nodes as they can (load balancing, at the price of locality)."""

from __future__ import annotations

from dlsched.cluster.state import WHOLE, ClusterState, Demand, Placement
from dlsched.placement.base import Placer, fits_node, place_cpu_only, place_fraction


class Spread(Placer):
    name = "spread"
    description = "one GPU at a time on the node with the most free GPUs (worst fit)"

    def place(self, state: ClusterState, pool: int, demand: Demand) -> Placement | None:
        if demand.gpus == 0:
            return place_cpu_only(state, pool, demand)
        if demand.milli < WHOLE:
            return place_fraction(state, pool, demand)
        free = {
            node: state.free_whole[node]
            for k in range(len(state.buckets[pool]) - 1, 0, -1)
            for node in state.bucket_nodes(pool, k)
            if state.node_matches(node, demand)
        }
        taken: dict[int, int] = {}
        for _ in range(demand.gpus):
            node = max(free, key=lambda n: (free[n], -n), default=-1)
            if node < 0 or free[node] == 0:
                return None
            taken[node] = taken.get(node, 0) + 1
            free[node] -= 1
        placement: list[tuple[int, tuple[int, ...]]] = []
        for node, k in taken.items():
            if not fits_node(state, node, demand, k):
                return None
            gpus = [g for g, f in enumerate(state.free_milli[node]) if f == WHOLE][:k]
            placement.append((node, tuple(gpus)))
        return tuple(sorted(placement))
