"""The largest cluster a description may ask for, checked when it is parsed (before any node
is built): a typo such as ``10000000000x8`` or ``count = 1e12`` in a file is an error naming
the limit, never a MemoryError later. Documented in ``docs/cluster-format.md``."""

from __future__ import annotations

from collections.abc import Sequence

from dlsched.cluster.layout import NodeGroup

MAX_NODES = 100_000
"""Nodes in one cluster."""
MAX_GPUS_PER_NODE = 1024
"""GPUs in one node."""
MAX_TOTAL_GPUS = 1_000_000
"""GPUs in one cluster."""
MAX_GROUPS = 10_000
"""``[[nodes]]`` groups in one cluster file, counted in its text before it is parsed (a
file of a million groups would take a minute and gigabytes to parse before any other limit
could refuse it)."""
MAX_FILE_BYTES = 8 * 2**20
"""Bytes of one cluster file: room for 100,000 nodes with explicit names."""


def size_problem(groups: Sequence[NodeGroup]) -> tuple[str, str] | None:
    """``(field, why)`` when ``groups`` describe a cluster over the limits above (``field``
    as a cluster file names it: ``nodes[i].count``, ``nodes[i].gpus`` or ``nodes``), else
    None. Each group's own counts are checked first, so the totals stay cheap."""
    for i, group in enumerate(groups):
        if group.count > MAX_NODES:
            return f"nodes[{i}].count", f"{group.count} nodes is more than the limit of {MAX_NODES}"
        if group.gpus > MAX_GPUS_PER_NODE:
            return (
                f"nodes[{i}].gpus",
                f"{group.gpus} GPUs per node is more than the limit of {MAX_GPUS_PER_NODE}",
            )
    nodes = sum(g.count for g in groups)
    if nodes > MAX_NODES:
        return "nodes", f"{nodes} nodes in all is more than the limit of {MAX_NODES}"
    gpus = sum(g.count * g.gpus for g in groups)
    if gpus > MAX_TOTAL_GPUS:
        return "nodes", f"{gpus} GPUs in all is more than the limit of {MAX_TOTAL_GPUS}"
    return None
