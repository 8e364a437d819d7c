"""Static description of a GPU cluster: nodes grouped into partitions (VCs), racks and blocks
(a block is a group of racks under one network spine; every rack lies in one block).

A :class:`ClusterSpec` is immutable and cheap to hash. The simulator builds a mutable
``ClusterState`` from it; policies and placers only ever see read-only views of that state.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

DEFAULT_PARTITION = "default"
DEFAULT_GPU_TYPE = "gpu"
DEFAULT_BLOCK = "block0"
GPU_TYPE_SEPARATOR = "|"


def gpu_type_alternatives(requested: str | None) -> tuple[str, ...]:
    """The case-folded GPU types a request accepts, in request order without repeats.

    An empty tuple means "any type": the request is None, empty, or only separators and blanks
    (the Alibaba trace writes no constraint as an empty ``gpu_spec``).
    """
    if requested is None:
        return ()
    parts = (p.strip().casefold() for p in requested.split(GPU_TYPE_SEPARATOR))
    return tuple(dict.fromkeys(p for p in parts if p))


def gpu_type_matches(requested: str | None, node_type: str) -> bool:
    """Whether a node of GPU type ``node_type`` satisfies a job's GPU-type request.

    ``requested`` None or blank matches every node. Otherwise it is one type or several
    alternatives joined by ``|`` (``"V100M16|V100M32"``); blanks around alternatives are ignored
    and the comparison is case-insensitive. The node type is compared whole, never as a prefix.
    """
    if requested is None:
        return True
    node = node_type.strip().casefold()
    # The common single-type request is checked without building a tuple: this runs per node
    # in every placement.
    if GPU_TYPE_SEPARATOR not in requested:
        wanted = requested.strip().casefold()
        return not wanted or wanted == node
    alternatives = gpu_type_alternatives(requested)
    return not alternatives or node in alternatives


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One machine. ``cpus`` and ``memory_mib`` of None mean "not tracked" (never a limit)."""

    name: str
    gpus: int
    gpu_type: str = "gpu"
    partition: str = DEFAULT_PARTITION
    rack: str = "rack0"
    cpus: float | None = None
    memory_mib: float | None = None
    block: str = DEFAULT_BLOCK

    def __post_init__(self) -> None:
        if self.gpus < 0:
            raise ValueError(f"node {self.name!r}: gpus must be >= 0, got {self.gpus}")


@dataclass(frozen=True)
class ClusterSpec:
    """A named set of nodes. Node order is significant: it is the tie-break of every placer."""

    name: str
    nodes: tuple[NodeSpec, ...]
    description: str = ""
    source: str = ""
    _names: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [n.name for n in self.nodes]
        dup = [n for n, c in Counter(names).items() if c > 1]
        if dup:
            raise ValueError(f"cluster {self.name!r}: duplicate node names {dup[:5]}")
        object.__setattr__(self, "_names", frozenset(names))

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    @property
    def partitions(self) -> tuple[str, ...]:
        """Partition names in first-seen node order."""
        return tuple(dict.fromkeys(n.partition for n in self.nodes))

    @property
    def gpu_types(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n.gpu_type for n in self.nodes))

    def gpus_matching(self, requested: str | None) -> int:
        """Total GPUs on nodes whose type satisfies ``requested`` (see :func:`gpu_type_matches`)."""
        return sum(n.gpus for n in self.nodes if gpu_type_matches(requested, n.gpu_type))

    def partition_gpus(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.partition] = out.get(n.partition, 0) + n.gpus
        return out

    def without_partitions(self) -> ClusterSpec:
        """The same machines as one shared partition (``--no-partitions``)."""
        nodes = tuple(replace(n, partition=DEFAULT_PARTITION) for n in self.nodes)
        return ClusterSpec(self.name, nodes, self.description, self.source)
