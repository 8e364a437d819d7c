"""The communication model of rigid jobs (``--comm-model tiers``): a job whose GPUs span
nodes, racks or blocks runs slower than on one node.

A rigid job's trace duration is taken as its run time on one node. Its rate is
``1 / TIER_SLOWDOWN[tier]`` of the smallest tier holding its placement
(:func:`dlsched.cluster.topology.placement_tier`), so a job spanning several nodes runs
``TIER_SLOWDOWN[tier]`` times its trace duration.

The factors are an **assumption**, not a measurement: 1.0 inside a node (NVLink/PCIe), +5 %
across nodes of one rack (one top-of-rack switch), +15 % across racks of one block (one more
hop, shared spine uplinks) and +40 % across blocks (oversubscribed core links). They only
order the tiers plausibly; pass ``TierComm(factors=...)`` for a measured network.
"""

from __future__ import annotations

from collections.abc import Sequence

from dlsched.cluster.state import ClusterState, Placement
from dlsched.cluster.topology import TIER_NAMES, placement_tier

TIER_SLOWDOWN = (1.0, 1.05, 1.15, 1.4)
"""Run-time factor by tier: node, rack, block, cluster (assumed, see the module docstring)."""

COMM_MODELS = ("tiers",)


class TierComm:
    """Rates of rigid jobs by the tier their placement spans (module docstring)."""

    def __init__(self, state: ClusterState, factors: Sequence[float] = TIER_SLOWDOWN) -> None:
        if len(factors) != len(TIER_NAMES) or any(not f >= 1.0 for f in factors):
            raise ValueError(
                f"comm model factors: expected {len(TIER_NAMES)} numbers >= 1 "
                f"({', '.join(TIER_NAMES)}), got {list(factors)}"
            )
        self.state = state
        self.factors = tuple(factors)

    def rate(self, placement: Placement) -> float:
        """Progress per second of a rigid job on ``placement`` (1 on one node)."""
        return 1.0 / self.factors[placement_tier(self.state, placement)]


def check_comm_model(name: str | None) -> None:
    """``ValueError`` naming ``--comm-model`` unless ``name`` is None or a known model."""
    if name is not None and name not in COMM_MODELS:
        raise ValueError(f"--comm-model: expected one of {', '.join(COMM_MODELS)}, got {name!r}")
