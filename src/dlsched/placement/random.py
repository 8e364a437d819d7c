"""Random placement (seeded): a uniformly random node among those that fit the whole job, or,
for a job larger than any node, a random order of nodes filled until the job is placed."""

from __future__ import annotations

import random
from collections.abc import Mapping

from dlsched.cluster.state import WHOLE, ClusterState, Demand, Placement
from dlsched.placement.base import Placer, fits_node, place_cpu_only, place_fraction, whole_gpus


class RandomPlacer(Placer):
    name = "random"
    description = "a random node that fits (seeded); random nodes filled for larger jobs"

    def __init__(self, seed: int = 0, options: Mapping[str, str] | None = None) -> None:
        super().__init__(seed, options)
        self._rng = random.Random(seed)

    def place(self, state: ClusterState, pool: int, demand: Demand) -> Placement | None:
        if demand.gpus == 0:
            return place_cpu_only(state, pool, demand)
        if demand.milli < WHOLE:
            return place_fraction(state, pool, demand)
        levels = len(state.buckets[pool])
        fitting = [
            node
            for k in range(min(demand.gpus, levels), levels)
            for node in state.bucket_nodes(pool, k)
            if fits_node(state, node, demand, demand.gpus)
        ]
        if fitting:
            fitting.sort()
            node = self._rng.choice(fitting)
            return ((node, whole_gpus(state, node, demand.gpus)),)
        if demand.gpus <= state.max_node_gpus(pool, demand.gpu_type):
            return None
        nodes = sorted(n for k in range(1, levels) for n in state.bucket_nodes(pool, k))
        self._rng.shuffle(nodes)
        chosen: list[tuple[int, tuple[int, ...]]] = []
        remaining = demand.gpus
        for node in nodes:
            k = min(remaining, state.free_whole[node])
            if k and fits_node(state, node, demand, k):
                chosen.append((node, whole_gpus(state, node, k)))
                remaining -= k
                if remaining == 0:
                    return tuple(sorted(chosen))
        return None
