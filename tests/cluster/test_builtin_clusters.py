"""Built-in clusters against the data they are built from."""

from __future__ import annotations

import csv
import io
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from dlsched.cluster.builtin import (
    ALIBABA_2023_NODES_FILE,
    CPU_ONLY_GPU_TYPE,
    PHILLY_MACHINES_FILE,
    PHILLY_VC_FILE,
    builtin_cluster,
    list_builtin_clusters,
)
from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.toml_io import format_cluster_toml, parse_cluster_toml

SHARED_TRACES = Path("/work/shared/traces")


def _bundled_rows(filename: str) -> list[dict[str, str]]:
    text = resources.files("dlsched").joinpath("data", "clusters", filename).read_text("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    header = [h.strip() for h in rows[0]]
    return [{h: v.strip() for h, v in zip(header, r, strict=True)} for r in rows[1:] if r]


def test_list_has_one_line_descriptions() -> None:
    listed = list_builtin_clusters()
    assert set(listed) == {"philly-vcs", "philly-machines", "pollux", "alibaba-2023"}
    for description in listed.values():
        assert description and "\n" not in description


@pytest.mark.parametrize("name", sorted(list_builtin_clusters()))
def test_builtin_named_as_listed_and_writable(name: str) -> None:
    spec = builtin_cluster(name)
    assert spec.name == name
    assert spec.source.startswith(f"builtin:{name}")
    back = parse_cluster_toml(format_cluster_toml(spec))
    assert back.nodes == spec.nodes


def test_lookup_is_case_insensitive_and_unknown_names_are_listed() -> None:
    assert builtin_cluster(" Pollux ").name == "pollux"
    with pytest.raises(ClusterFormatError, match="philly-vcs, philly-machines, pollux"):
        builtin_cluster("helios")


def test_philly_vcs_matches_vc_file() -> None:
    rows = _bundled_rows(PHILLY_VC_FILE)
    expected = {r["vc"]: int(r["node num"]) for r in rows}
    spec = builtin_cluster("philly-vcs")
    assert len(expected) == 11
    assert spec.partitions == tuple(expected)
    assert Counter(n.partition for n in spec.nodes) == expected
    assert all(n.gpus == 8 for n in spec.nodes)
    assert spec.total_gpus == 8 * sum(expected.values()) == 2816
    assert spec.partition_gpus() == {vc: 8 * count for vc, count in expected.items()}
    assert spec.nodes[0].name == "6214e9-000"
    # Racks of 16 never straddle two VCs.
    racks: dict[str, set[str]] = {}
    for node in spec.nodes:
        racks.setdefault(node.rack, set()).add(node.partition)
    assert all(len(vcs) == 1 for vcs in racks.values())
    assert max(Counter(n.rack for n in spec.nodes).values()) == 16


def test_pollux_testbed() -> None:
    spec = builtin_cluster("pollux")
    assert len(spec.nodes) == 16
    assert spec.total_gpus == 64
    assert spec.gpu_types == ("T4",)
    assert {(n.cpus, n.memory_mib) for n in spec.nodes} == {(48.0, 192 * 1024.0)}
    assert [n.name for n in spec.nodes[:2]] == ["t4-000", "t4-001"]


def test_alibaba_2023_matches_node_file() -> None:
    rows = _bundled_rows(ALIBABA_2023_NODES_FILE)
    spec = builtin_cluster("alibaba-2023")
    assert len(spec.nodes) == len(rows) == 1523
    assert spec.total_gpus == sum(int(r["gpu"]) for r in rows) == 6212
    assert sum(1 for n in spec.nodes if n.gpus > 0) == 1213
    assert sum(1 for n in spec.nodes if n.gpus == 0) == 310
    for node, row in zip(spec.nodes, rows, strict=True):
        assert node.name == row["sn"]
        assert node.cpus == int(row["cpu_milli"]) / 1000
        assert node.memory_mib == int(row["memory_mib"])
        assert node.gpus == int(row["gpu"])
        assert node.gpu_type == (row["model"] or CPU_ONLY_GPU_TYPE)
    assert spec.gpus_matching("V100M16|V100M32") == sum(
        int(r["gpu"]) for r in rows if r["model"] in ("V100M16", "V100M32")
    )
    assert max(Counter(n.rack for n in spec.nodes).values()) == 16


def test_philly_machines_matches_machine_list() -> None:
    rows = _bundled_rows(PHILLY_MACHINES_FILE)
    spec = builtin_cluster("philly-machines")
    assert [n.name for n in spec.nodes] == [r["machineId"] for r in rows]
    assert spec.total_gpus == sum(int(r["number of GPUs"]) for r in rows) == 2490
    assert Counter(n.gpu_type for n in spec.nodes) == {"gpu-12gb": 321, "gpu-24gb": 231}
    racks: dict[str, set[str]] = {}
    for node in spec.nodes:
        racks.setdefault(node.rack, set()).add(node.gpu_type)
    assert all(len(types) == 1 for types in racks.values())


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="shared traces not available")
@pytest.mark.parametrize(
    ("bundled", "original"),
    [
        (PHILLY_VC_FILE, "philly/philly_vc.csv"),
        (PHILLY_MACHINES_FILE, "philly/cluster_machine_list.csv"),
        (ALIBABA_2023_NODES_FILE, "alibaba-gpu-2023/openb_node_list_all_node.csv"),
    ],
)
def test_bundled_files_are_unchanged_copies(bundled: str, original: str) -> None:
    data = resources.files("dlsched").joinpath("data", "clusters", bundled).read_bytes()
    assert data == (SHARED_TRACES / original).read_bytes()


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="shared traces not available")
def test_alibaba_gpu_node_file_is_the_gpu_subset_of_all_nodes() -> None:
    # The reason only the all-node file is bundled: nothing is lost.
    path = SHARED_TRACES / "alibaba-gpu-2023" / "openb_node_list_gpu_node.csv"
    with path.open(encoding="utf-8") as handle:
        gpu_rows = list(csv.DictReader(handle))
    spec = builtin_cluster("alibaba-2023")
    gpu_nodes = [n for n in spec.nodes if n.gpus > 0]
    assert [(n.cpus, n.memory_mib, n.gpus, n.gpu_type) for n in gpu_nodes] == [
        (int(r["cpu_milli"]) / 1000, float(r["memory_mib"]), int(r["gpu"]), r["model"])
        for r in gpu_rows
    ]
