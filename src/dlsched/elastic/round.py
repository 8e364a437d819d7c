"""One decision round of an elastic policy, as every driver runs it (the simulator and the live
service): show the policy what it may use, ask it, check the answer.

A policy is bound once to its cluster at full size (:meth:`ElasticPolicy.bind`); each round it
is told, through :meth:`ElasticPolicy.observe`, the same nodes in the same order with the GPUs it
may hold now (:func:`round_view`), then asked for its allocations (:func:`decide_round`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dlsched.elastic.policy import ElasticPolicy, validate
from dlsched.elastic.types import Allocation, ClusterView, JobInfo, NodeView


def round_view(bound: ClusterView, usable: Sequence[int]) -> ClusterView:
    """``bound``'s nodes with ``usable[i]`` GPUs the policy may hold on the i-th (0 for a node
    that is down or powered off), each keeping its full ``size``. ValueError unless there is
    one count per node, none negative or above the node's size."""
    if len(usable) != len(bound.nodes):
        raise ValueError(f"usable: {len(usable)} counts for {len(bound.nodes)} nodes")
    nodes = []
    for node, gpus in zip(bound.nodes, usable, strict=True):
        if not 0 <= gpus <= node.size:
            raise ValueError(f"usable: {gpus} GPUs on node {node.name!r} of {node.size}")
        nodes.append(NodeView(node.index, node.name, gpus, node.gpu_type, node.variant, node.size))
    return ClusterView(tuple(nodes))


def decide_round(
    policy: ElasticPolicy, now: float, jobs: Sequence[JobInfo], view: ClusterView
) -> Mapping[str, Allocation]:
    """``policy``'s allocations for the round at ``now`` over ``jobs`` (the active jobs in
    submit order), after telling it ``view``; :class:`~dlsched.elastic.policy.AllocationError`
    naming the policy unless the answer fits ``view``."""
    policy.observe(view)
    answer = policy.decide(now, jobs)
    validate(policy.name, answer, jobs, view)
    return answer
