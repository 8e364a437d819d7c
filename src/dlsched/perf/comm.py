"""The communication model of rigid jobs (``--comm-model tiers``): a job whose GPUs span
nodes, racks or blocks runs slower than on one node.

A rigid job's trace duration is taken as its run time on one node. Its rate is
``1 / factor[tier]`` of the smallest tier holding its placement
(:func:`dlsched.cluster.topology.placement_tier`), so a job spanning several nodes runs
``factor[tier]`` times its trace duration.

Measured, per application: a job whose ``application`` is one of the Pollux profiles
(:data:`dlsched.perf.profiles.APPLICATIONS`) uses :func:`measured_node_factor`, the mean ratio
of the step time measured on several nodes to the step time at the same replicas and local
batch on one node (Pollux artifact, T4 nodes of 4 GPUs; Qiao et al., OSDI'21), as its rack
factor. The profiles have no rack or block dimension, so its block and cluster factors scale
that by the assumed ratios below (``TIER_SLOWDOWN[2] / TIER_SLOWDOWN[1]`` and
``TIER_SLOWDOWN[3] / TIER_SLOWDOWN[1]``). Every other job uses ``TIER_SLOWDOWN``.

The factors are an **assumption**, not a measurement: 1.0 inside a node (NVLink/PCIe), +5 %
across nodes of one rack (one top-of-rack switch), +15 % across racks of one block (one more
hop, shared spine uplinks) and +40 % across blocks (oversubscribed core links). They only
order the tiers plausibly; pass ``TierComm(factors=...)`` for a measured network.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from statistics import mean

from dlsched.cluster.state import ClusterState, Placement
from dlsched.cluster.topology import RACK, TIER_NAMES, placement_tier
from dlsched.perf.profiles import APPLICATIONS, load_profile

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

    def rate(self, placement: Placement, application: str | None = None) -> float:
        """Progress per second of a rigid job of ``application`` on ``placement`` (1 on one
        node): measured factors for a profiled application, the tier factors otherwise."""
        tier = placement_tier(self.state, placement)
        if application in APPLICATIONS:
            assert application is not None
            measured = measured_node_factor(application)
            return 1.0 / (1.0 if tier == 0 else measured * self.factors[tier] / self.factors[RACK])
        return 1.0 / self.factors[tier]


@functools.cache
def measured_node_factor(app: str) -> float:
    """Mean over the Pollux T4 placements of ``app`` spanning several nodes of their step time
    over the step time at the same replicas and local batch size on one node."""
    profile = load_profile(app, "t4")
    one = {(s.replicas, s.local_bsz): s.step_time for s in profile.placements if s.nodes == 1}
    ratios = [
        s.step_time / one[(s.replicas, s.local_bsz)]
        for s in profile.placements
        if s.nodes > 1 and (s.replicas, s.local_bsz) in one
    ]
    if not ratios:
        raise ValueError(f"profile {app!r}: no multi-node placement matches a one-node one")
    return mean(ratios)


def check_comm_model(name: str | None) -> None:
    """``ValueError`` naming ``--comm-model`` unless ``name`` is None or a known model."""
    if name is not None and name not in COMM_MODELS:
        raise ValueError(f"--comm-model: expected one of {', '.join(COMM_MODELS)}, got {name!r}")
