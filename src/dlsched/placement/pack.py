"""Packed placement, as the Pollux artifact places its non-adaptive baselines: as few nodes as
possible without needing wholly free ones.

A job that fits on one node goes to the node with the fewest free GPUs that fits (best fit, as
:mod:`dlsched.placement.consolidate`). A larger job takes the nodes with the most free GPUs
first (lowest index among equals), all of each but the last, whatever is left on them; unlike
consolidate it does not wait for whole free nodes.
"""

from __future__ import annotations

from dlsched.cluster.state import WHOLE, ClusterState, Demand, Placement
from dlsched.placement.base import Placer, fits_node, place_cpu_only, place_fraction, whole_gpus
from dlsched.placement.consolidate import best_fit_node


class Pack(Placer):
    name = "pack"
    description = "best fit on one node; beyond, the nodes with the most free GPUs (Pollux)"

    def place(self, state: ClusterState, pool: int, demand: Demand) -> Placement | None:
        if demand.gpus == 0:
            return place_cpu_only(state, pool, demand)
        if demand.milli < WHOLE:
            return place_fraction(state, pool, demand)
        if demand.gpus <= state.max_node_gpus(pool, demand.gpu_type):
            node = best_fit_node(state, pool, demand, demand.gpus)
            if node >= 0:
                return ((node, whole_gpus(state, node, demand.gpus)),)
        return self._most_free_first(state, pool, demand)

    def _most_free_first(self, state: ClusterState, pool: int, demand: Demand) -> Placement | None:
        nodes = [
            node
            for free in range(len(state.buckets[pool]) - 1, 0, -1)
            for node in state.bucket_nodes(pool, free)
            if state.node_matches(node, demand)
        ]
        chosen: list[tuple[int, tuple[int, ...]]] = []
        need = demand.gpus
        for node in nodes:
            take = min(state.free_whole[node], need)
            if not fits_node(state, node, demand, take):
                continue
            chosen.append((node, whole_gpus(state, node, take)))
            need -= take
            if need == 0:
                return tuple(sorted(chosen))
        return None
