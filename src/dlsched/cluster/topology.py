"""Network tiers of a cluster, smallest first: node, rack, block, then the whole cluster.

A placement *lies in* the smallest tier holding all its nodes: ``NODE`` (one node), ``RACK``
(several nodes of one rack), ``BLOCK`` (several racks of one block) or ``CLUSTER`` (several
blocks). Rack names are unique across blocks (the cluster file refuses a rack in two blocks),
so a rack's name is its domain.
"""

from __future__ import annotations

from dlsched.cluster.state import ClusterState, Placement

NODE, RACK, BLOCK, CLUSTER = 0, 1, 2, 3
TIER_NAMES = ("node", "rack", "block", "cluster")
LEVEL_NAMES = TIER_NAMES[:CLUSTER]
"""The tiers a job can ask to stay in (the whole cluster is no constraint)."""


def parse_level(text: str, what: str) -> int:
    """The tier named ``text`` (node, rack or block); ``ValueError`` naming ``what`` otherwise."""
    name = text.strip().casefold()
    if name not in LEVEL_NAMES:
        raise ValueError(f"{what}: expected one of {', '.join(LEVEL_NAMES)}, got {text!r}")
    return LEVEL_NAMES.index(name)


def domain(state: ClusterState, node: int, tier: int) -> str | int:
    """The domain of ``node`` at ``tier``: its index, rack name, block name, or one cluster."""
    if tier == NODE:
        return node
    if tier == RACK:
        return state.node_rack[node]
    if tier == BLOCK:
        return state.node_block[node]
    return ""


def placement_tier(state: ClusterState, placement: Placement) -> int:
    """The smallest tier whose one domain holds every node of ``placement``."""
    nodes = {node for node, _ in placement}
    for tier in (NODE, RACK, BLOCK):
        if len({domain(state, n, tier) for n in nodes}) <= 1:
            return tier
    return CLUSTER
