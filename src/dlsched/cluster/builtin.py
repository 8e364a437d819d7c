"""Built-in clusters of published traces and testbeds, by name.

``philly-vcs``
    The 11 Philly virtual clusters as sized in the Helios evaluation (bundled
    ``philly_vc.csv``: ``vc,node num``): 352 nodes of 8 GPUs, one partition per VC named by the
    VC id, nodes named ``<vc>-000`` onwards, racks of 16 starting afresh in each VC.
``philly-machines``
    Every Philly machine of the bundled ``cluster_machine_list.csv`` (552 machines: 321 with
    2 GPUs of 12 GB, then 231 with 8 GPUs of 24 GB; 2,490 GPUs), one partition, named by
    machine id, in file order.
    The list gives GPU memory, not the model, so the types are ``gpu-12gb`` and ``gpu-24gb``.
``pollux``
    The Pollux (OSDI'21) testbed: 16 AWS g4dn.12xlarge instances, each with 4 NVIDIA T4 GPUs,
    48 vCPUs and 192 GiB memory; GPU type ``T4``, nodes ``t4-000`` .. ``t4-015``, one rack.
``alibaba-2023``
    The 1,523 nodes of Alibaba's cluster-trace-gpu-v2023 (bundled
    ``openb_node_list_all_node.csv``), CPU-only nodes included, named by ``sn``: cpus =
    ``cpu_milli`` / 1000, ``memory_mib`` as given, GPU type = ``model`` (``none`` for the 310
    nodes without GPUs), one partition.

Racks: no source records racks. ``philly-vcs``, ``pollux`` and ``philly-machines`` are built
from groups (a VC; the whole testbed; a run of identical machines in file order) and follow
:mod:`dlsched.cluster.layout`: 16 nodes per rack, each group starting a new rack.
``alibaba-2023``, whose GPU models interleave in the file, puts 16 consecutive nodes of the
file per rack. Racks are named ``rack0``, ``rack1``, ...

Data files are read with :mod:`importlib.resources`, so built-ins work from an installed wheel.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from itertools import groupby
from types import MappingProxyType

from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.layout import DEFAULT_RACK_SIZE, Layout, NodeGroup, expand_groups
from dlsched.cluster.spec import ClusterSpec, NodeSpec

CPU_ONLY_GPU_TYPE = "none"
PHILLY_GPUS_PER_NODE = 8
POLLUX_NODES = 16
POLLUX_GPUS_PER_NODE = 4
POLLUX_GPU_TYPE = "T4"
POLLUX_CPUS = 48.0
POLLUX_MEMORY_MIB = 192.0 * 1024

PHILLY_VC_FILE = "philly_vc.csv"
PHILLY_MACHINES_FILE = "cluster_machine_list.csv"
ALIBABA_2023_NODES_FILE = "openb_node_list_all_node.csv"


def _rows(filename: str, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of a bundled CSV with blank-stripped headers and values."""
    text = resources.files("dlsched").joinpath("data", "clusters", filename).read_text("utf-8")
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader)]
    missing = [c for c in columns if c not in header]
    if missing:
        raise ClusterFormatError(f"bundled {filename}: missing columns {missing}, has {header}")
    for row in reader:
        if row:
            yield reader.line_num, {h: v.strip() for h, v in zip(header, row, strict=True)}


def _int(filename: str, line: int, column: str, value: str) -> int:
    try:
        return int(value)
    except ValueError as exc:
        raise ClusterFormatError(
            f"bundled {filename}, line {line}: {column} {value!r} is not an integer"
        ) from exc


def philly_vcs() -> ClusterSpec:
    """The 11 Philly VCs of the Helios evaluation, one partition each, 8 GPUs per node."""
    groups = [
        NodeGroup(
            count=_int(PHILLY_VC_FILE, line, "node num", row["node num"]),
            gpus=PHILLY_GPUS_PER_NODE,
            partition=row["vc"],
            name_prefix=row["vc"],
        )
        for line, row in _rows(PHILLY_VC_FILE, ("vc", "node num"))
    ]
    nodes = tuple(expand_groups(groups))
    return ClusterSpec(
        name="philly-vcs",
        nodes=nodes,
        description=(
            f"Philly, {len(groups)} VCs as in the Helios evaluation: "
            f"{len(nodes)} nodes x {PHILLY_GPUS_PER_NODE} GPUs"
        ),
        source=f"builtin:philly-vcs ({PHILLY_VC_FILE}, S-Lab-System-Group/HeliosArtifact)",
    )


def _racked(nodes: list[NodeSpec]) -> tuple[NodeSpec, ...]:
    """``nodes`` with racks of 16 consecutive nodes in list order."""
    racks = Layout().take_racks(len(nodes), DEFAULT_RACK_SIZE)
    return tuple(
        NodeSpec(n.name, n.gpus, n.gpu_type, n.partition, rack, n.cpus, n.memory_mib)
        for n, rack in zip(nodes, racks, strict=True)
    )


def philly_machines() -> ClusterSpec:
    """Every machine of the Philly machine list as one partition; types by GPU memory.

    Each run of consecutive identical machines in the file is one group (the file lists the
    2-GPU machines, then the 8-GPU ones), so no rack mixes the two kinds.
    """
    columns = ("machineId", "number of GPUs", "single GPU mem")
    machines = [
        (
            row["machineId"],
            _int(PHILLY_MACHINES_FILE, line, "number of GPUs", row["number of GPUs"]),
            f"gpu-{row['single GPU mem'].lower()}",
        )
        for line, row in _rows(PHILLY_MACHINES_FILE, columns)
    ]
    groups = []
    for (gpus, gpu_type), run in groupby(machines, key=lambda m: (m[1], m[2])):
        names = tuple(m[0] for m in run)
        groups.append(NodeGroup(count=len(names), gpus=gpus, gpu_type=gpu_type, names=names))
    nodes = tuple(expand_groups(groups))
    gpus_total = sum(n.gpus for n in nodes)
    return ClusterSpec(
        name="philly-machines",
        nodes=nodes,
        description=f"Philly, all {len(nodes)} machines ({gpus_total} GPUs), no VCs",
        source=f"builtin:philly-machines ({PHILLY_MACHINES_FILE}, msr-fiddle/philly-traces)",
    )


def pollux() -> ClusterSpec:
    """The Pollux testbed: 16 x g4dn.12xlarge (4 T4 GPUs, 48 vCPUs, 192 GiB each)."""
    group = NodeGroup(
        count=POLLUX_NODES,
        gpus=POLLUX_GPUS_PER_NODE,
        gpu_type=POLLUX_GPU_TYPE,
        cpus=POLLUX_CPUS,
        memory_mib=POLLUX_MEMORY_MIB,
    )
    return ClusterSpec(
        name="pollux",
        nodes=tuple(expand_groups([group])),
        description="Pollux (OSDI'21) testbed: 16 x AWS g4dn.12xlarge, 4 T4 GPUs each",
        source="builtin:pollux (Qiao et al., OSDI'21, section 5.1)",
    )


def alibaba_2023() -> ClusterSpec:
    """All nodes of Alibaba cluster-trace-gpu-v2023, CPU-only ones included."""
    columns = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
    f = ALIBABA_2023_NODES_FILE
    nodes = [
        NodeSpec(
            name=row["sn"],
            gpus=_int(f, line, "gpu", row["gpu"]),
            gpu_type=row["model"] or CPU_ONLY_GPU_TYPE,
            cpus=_int(f, line, "cpu_milli", row["cpu_milli"]) / 1000,
            memory_mib=float(_int(f, line, "memory_mib", row["memory_mib"])),
        )
        for line, row in _rows(f, columns)
    ]
    spec_nodes = _racked(nodes)
    gpu_nodes = sum(1 for n in spec_nodes if n.gpus > 0)
    gpus = sum(n.gpus for n in spec_nodes)
    models = {n.gpu_type for n in spec_nodes if n.gpus > 0}
    return ClusterSpec(
        name="alibaba-2023",
        nodes=spec_nodes,
        description=(
            f"Alibaba GPU cluster 2023: {len(spec_nodes)} nodes ({gpu_nodes} with GPUs, "
            f"{gpus} GPUs, {len(models)} models)"
        ),
        source=f"builtin:alibaba-2023 ({f}, alibaba/clusterdata cluster-trace-gpu-v2023)",
    )


@dataclass(frozen=True, slots=True)
class _Builtin:
    description: str
    build: Callable[[], ClusterSpec]


BUILTIN_CLUSTERS: Mapping[str, _Builtin] = MappingProxyType(
    {
        "philly-vcs": _Builtin(
            "Philly's 11 VCs sized as in the Helios evaluation (352 nodes x 8 GPUs)", philly_vcs
        ),
        "philly-machines": _Builtin(
            "all 552 Philly machines, 2,490 GPUs (2 x 12 GB or 8 x 24 GB), one partition",
            philly_machines,
        ),
        "pollux": _Builtin("Pollux testbed: 16 nodes x 4 T4 GPUs (AWS g4dn.12xlarge)", pollux),
        "alibaba-2023": _Builtin(
            "Alibaba GPU cluster 2023: 1,523 nodes (1,213 with GPUs, 6,212 GPUs), CPUs and memory",
            alibaba_2023,
        ),
    }
)


def list_builtin_clusters() -> dict[str, str]:
    """Built-in cluster name -> one-line description, in a stable order."""
    return {name: entry.description for name, entry in BUILTIN_CLUSTERS.items()}


def builtin_cluster(name: str) -> ClusterSpec:
    """The built-in cluster called ``name`` (case-insensitive), freshly built.

    Raises :class:`ClusterFormatError` (a ValueError) listing the built-in names otherwise.
    """
    entry = BUILTIN_CLUSTERS.get(name.strip().lower())
    if entry is None:
        raise ClusterFormatError(
            f"no built-in cluster {name!r}; built-ins: {', '.join(BUILTIN_CLUSTERS)}"
        )
    return entry.build()
