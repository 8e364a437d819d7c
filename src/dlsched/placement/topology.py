"""Topology-aware placement, after Kueue's topology-aware scheduling: a job goes into the
smallest tier that has room for it whole, one node, then one rack, then one block, then
anywhere (:mod:`dlsched.cluster.topology`).

A job that fits one node of its type runs on one node, placed exactly as
:mod:`dlsched.placement.consolidate` places it, and waits for one otherwise: spreading it would
only add communication. The tiers below apply to multi-node jobs.

Options (``--placement-opt``), at most one of:

``required=LEVEL``
    the job never spans beyond one LEVEL (node, rack or block) domain; it waits instead. A job
    larger than every such domain can never run and is set aside (``required=node``: every
    multi-node job).
``preferred=LEVEL`` (default ``preferred=node``)
    the smallest tier is tried first as always; when no domain up to LEVEL has room the job
    spans further rather than wait.

Within the chosen tier the domain with the fewest free GPUs that holds the job wins (best fit,
lowest node index among equals), and inside it the job takes the nodes with the most free GPUs
until the remainder fits one node, which is then chosen by best fit. Fractional and CPU-only
jobs are placed as every placer places them. A placement is the whole gang or None: never part
of a job.
"""

from __future__ import annotations

from collections.abc import Mapping

from dlsched.cluster.state import ClusterState, Demand, Placement
from dlsched.cluster.topology import CLUSTER, NODE, domain, parse_level
from dlsched.placement.base import Placer, fits_node, whole_gpus
from dlsched.placement.consolidate import fits_one_node, place_on_one_node


class Topology(Placer):
    name = "topology"
    description = "smallest of node, rack, block that fits the job (Kueue topology-aware)"
    option_keys = ("required", "preferred")
    topology_aware = True

    def __init__(self, seed: int = 0, options: Mapping[str, str] | None = None) -> None:
        super().__init__(seed, options)
        if len(self.options) > 1:
            raise ValueError(
                "--placement-opt: give either required=LEVEL or preferred=LEVEL, not both"
            )
        self.required = "required" in self.options
        key = "required" if self.required else "preferred"
        self.level = parse_level(self.options.get(key, "node"), f"--placement-opt {key}")

    @property
    def limit(self) -> int:
        """The largest tier a job may span: the required level, or the whole cluster."""
        return self.level if self.required else CLUSTER

    def place(self, state: ClusterState, pool: int, demand: Demand) -> Placement | None:
        if fits_one_node(state, pool, demand):
            return place_on_one_node(state, pool, demand)
        for tier in range(NODE + 1, self.limit + 1):
            placement = self._within_one(state, pool, demand, tier)
            if placement is not None:
                return placement
        return None

    def _within_one(
        self, state: ClusterState, pool: int, demand: Demand, tier: int
    ) -> Placement | None:
        """The job in one domain of ``tier``: best-fit domain first, or None."""
        members: dict[str | int, list[int]] = {}
        for node in state.pool_nodes[pool]:
            if state.node_up[node] and state.free_whole[node] and state.node_matches(node, demand):
                members.setdefault(domain(state, node, tier), []).append(node)
        free = {key: sum(state.free_whole[n] for n in nodes) for key, nodes in members.items()}
        fitting = sorted(
            (key for key in members if free[key] >= demand.gpus),
            key=lambda key: (free[key], members[key][0]),
        )
        for key in fitting:
            placement = fill(state, demand, members[key])
            if placement is not None:
                return placement
        return None


def fill(state: ClusterState, demand: Demand, nodes: list[int]) -> Placement | None:
    """``demand`` on ``nodes``: the most free first until the rest fits one node, which is
    chosen by best fit; None if they cannot hold it (CPUs or memory short)."""
    order = sorted(nodes, key=lambda n: (-state.free_whole[n], n))
    chosen: list[tuple[int, tuple[int, ...]]] = []
    remaining = demand.gpus
    while remaining > 0 and order:
        last = [
            n
            for n in order
            if state.free_whole[n] >= remaining and fits_node(state, n, demand, remaining)
        ]
        if last:
            node = min(last, key=lambda n: (state.free_whole[n], n))
            chosen.append((node, whole_gpus(state, node, remaining)))
            remaining = 0
            break
        node = order.pop(0)
        take = state.free_whole[node]
        if fits_node(state, node, demand, take):
            chosen.append((node, whole_gpus(state, node, take)))
            remaining -= take
    return tuple(sorted(chosen)) if remaining == 0 else None
