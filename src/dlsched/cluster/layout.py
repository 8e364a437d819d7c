"""Expanding groups of identical machines into named, racked nodes.

Shorthand, TOML files and built-ins all describe a cluster as an ordered list of
:class:`NodeGroup`; :func:`expand_groups` turns it into nodes with these deterministic rules:

Names
    A group with explicit ``names`` uses them. Otherwise node names are ``<prefix>-<index>``,
    the index zero-padded to at least three digits (``v100-000``, ``v100-001``, ...). The prefix
    is the group's ``name_prefix`` if given, else its GPU type in lower case, else ``node`` for
    the untyped default type ``gpu``. Indices count per prefix across the whole cluster in group
    order, so two groups of the same type never collide (``v100:2x8,v100:2x4`` gives
    ``v100-000`` .. ``v100-003``). Groups with explicit names do not advance any counter.

Racks
    A group with an explicit ``rack`` puts all its nodes there. Otherwise the group is cut into
    racks of ``rack_size`` nodes (16 unless stated) and every such group starts a new rack, so
    racks never mix groups. Automatic racks are named ``rack0``, ``rack1``, ... by one counter
    over the whole cluster in group order (an explicit rack of the same name is the same rack).

Blocks
    A group's nodes all lie in its ``block`` (``block0`` unless stated). Callers that read
    files check that no rack lies in two blocks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dlsched.cluster.spec import DEFAULT_BLOCK, DEFAULT_GPU_TYPE, DEFAULT_PARTITION, NodeSpec

DEFAULT_RACK_SIZE = 16
UNTYPED_NAME_PREFIX = "node"
AUTO_RACK_PREFIX = "rack"


def default_name_prefix(gpu_type: str) -> str:
    """The node-name prefix of a group of ``gpu_type`` that gives no names or prefix."""
    folded = gpu_type.casefold()
    return UNTYPED_NAME_PREFIX if folded == DEFAULT_GPU_TYPE else folded


def node_name(prefix: str, index: int) -> str:
    """``<prefix>-<index>`` with the index zero-padded to at least three digits."""
    return f"{prefix}-{index:03d}"


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """``count`` identical machines. Parsers validate fields before building one.

    ``rack`` (one rack for the group) takes precedence over ``rack_size``; ``names`` (exactly
    ``count`` of them) over ``name_prefix``.
    """

    count: int
    gpus: int
    gpu_type: str = DEFAULT_GPU_TYPE
    partition: str = DEFAULT_PARTITION
    rack: str | None = None
    rack_size: int = DEFAULT_RACK_SIZE
    cpus: float | None = None
    memory_mib: float | None = None
    names: tuple[str, ...] | None = None
    name_prefix: str | None = None
    block: str = DEFAULT_BLOCK

    @property
    def prefix(self) -> str:
        """The prefix of generated names (meaningless when ``names`` is given)."""
        return self.name_prefix or default_name_prefix(self.gpu_type)


@dataclass
class Layout:
    """The naming and rack counters while one cluster's groups are laid out in order."""

    next_index: dict[str, int] = field(default_factory=dict)
    next_rack: int = 0

    def next_name(self, prefix: str) -> str:
        """The name the next generated node of ``prefix`` would get."""
        return node_name(prefix, self.next_index.get(prefix, 0))

    def peek_names(self, prefix: str, count: int) -> list[str]:
        """The names the next ``count`` generated nodes of ``prefix`` would get."""
        start = self.next_index.get(prefix, 0)
        return [node_name(prefix, i) for i in range(start, start + count)]

    def take_names(self, prefix: str, count: int) -> list[str]:
        """Generate the next ``count`` names of ``prefix`` and advance its counter."""
        names = self.peek_names(prefix, count)
        self.next_index[prefix] = self.next_index.get(prefix, 0) + count
        return names

    def take_racks(self, count: int, rack_size: int) -> list[str]:
        """Rack names for ``count`` nodes filling fresh racks of ``rack_size`` in order."""
        if rack_size < 1:
            raise ValueError(f"rack_size must be >= 1, got {rack_size}")
        racks = [f"{AUTO_RACK_PREFIX}{self.next_rack + i // rack_size}" for i in range(count)]
        self.next_rack += -(-count // rack_size)
        return racks


def expand_group(group: NodeGroup, layout: Layout) -> list[NodeSpec]:
    """The nodes of one group, advancing ``layout`` as the module rules say."""
    if group.names is not None:
        if len(group.names) != group.count:
            raise ValueError(f"{len(group.names)} names given for {group.count} nodes")
        names = list(group.names)
    else:
        names = layout.take_names(group.prefix, group.count)
    if group.rack is not None:
        racks = [group.rack] * group.count
    else:
        racks = layout.take_racks(group.count, group.rack_size)
    return [
        NodeSpec(
            name=name,
            gpus=group.gpus,
            gpu_type=group.gpu_type,
            partition=group.partition,
            rack=rack,
            cpus=group.cpus,
            memory_mib=group.memory_mib,
            block=group.block,
        )
        for name, rack in zip(names, racks, strict=True)
    ]


def expand_groups(groups: Iterable[NodeGroup]) -> list[NodeSpec]:
    """All nodes of ``groups`` in order, named and racked by the module rules."""
    layout = Layout()
    nodes: list[NodeSpec] = []
    for group in groups:
        nodes.extend(expand_group(group, layout))
    return nodes
