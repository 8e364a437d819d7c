"""Replaying the Alibaba GPU-sharing trace (cluster-trace-gpu-v2023) on its own cluster.

Pods ask for a share of each GPU (``gpu_milli``), optionally a set of GPU models (``gpu_spec``),
and CPUs and memory. The checks here recompute every resource from the recorded allocation
segments, independently of ``ClusterState``:

- no GPU holds more than 1000 milli at any instant (``assert_no_overcommit``);
- no node's CPUs or memory are over-committed at any instant, with each job's CPUs and memory
  split over its nodes in proportion to its GPUs there (the ``ClusterState.allocate`` contract);
- every allocation has the pod's GPU count and share, on nodes of an accepted GPU model;
- pending pods (never scheduled in the real cluster, so no run time) are set aside with a reason
  and counted, never dropped: every row of the file is in the jobs table.
"""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from dlsched.cluster.builtin import builtin_cluster
from dlsched.cluster.spec import ClusterSpec
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import RunResult, Segment, simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from dlsched.trace.schema import Trace
from dlsched.trace.transforms import scale_time
from tests.sim.conftest import assert_no_overcommit
from tests.trace.helpers import TRACES, requires_traces

ALIBABA = TRACES / "alibaba-gpu-2023"
BUNDLED_SLICE = "openb_pod_list_default_500"
WHOLE = 1000
# Shares of CPUs and memory are float products; a sum may exceed the capacity by rounding only.
SLACK = 1e-6


@pytest.fixture(scope="module")
def cluster() -> ClusterSpec:
    return builtin_cluster("alibaba-2023")


@dataclass(frozen=True)
class Allocation:
    """One interval in which a job held resources: its GPUs per node (none for a CPU pod)."""

    row: int
    begin: float
    end: float
    milli: int
    gpus_on: dict[int, list[int]]


def allocations(segments: Iterable[Segment]) -> list[Allocation]:
    """Group the per-GPU segments of one job and one interval into its allocation."""
    grouped: dict[tuple[int, float, float], list[Segment]] = defaultdict(list)
    for s in segments:
        grouped[(s.row, s.begin, s.end)].append(s)
    result = []
    for (row, begin, end), parts in grouped.items():
        gpus_on: dict[int, list[int]] = defaultdict(list)
        for s in parts:
            gpus_on.setdefault(s.node, [])  # a CPU-only pod's node holds no GPU (gpu -1)
            if s.gpu >= 0:
                gpus_on[s.node].append(s.gpu)
        milli = {s.milli for s in parts}
        assert len(milli) == 1, f"row {row}: one allocation with shares {milli}"
        result.append(Allocation(row, begin, end, milli.pop(), dict(gpus_on)))
    return result


def node_usage_peaks(
    allocs: list[Allocation], trace: Trace, cluster: ClusterSpec
) -> dict[int, tuple[float, float]]:
    """Per node, the peak CPUs and memory held at any instant (releases before acquisitions at
    the same instant). Asserts that neither ever exceeds the node's capacity."""
    cpus = trace.column("num_cpus").to_pylist()
    memory = trace.column("memory_mib").to_pylist()
    events: dict[int, list[tuple[float, float, float]]] = defaultdict(list)
    for a in allocs:
        if a.end <= a.begin:
            continue
        total = sum(len(g) for g in a.gpus_on.values())
        for node, gpus in a.gpus_on.items():
            share = len(gpus) / total if total else 1.0
            c = (cpus[a.row] or 0.0) * share
            m = (memory[a.row] or 0.0) * share
            events[node].append((a.begin, c, m))
            events[node].append((a.end, -c, -m))
    peaks: dict[int, tuple[float, float]] = {}
    for node, points in events.items():
        spec = cluster.nodes[node]
        assert spec.cpus is not None and spec.memory_mib is not None
        points.sort(key=lambda p: (p[0], p[1]))
        held_c = held_m = peak_c = peak_m = 0.0
        for t, dc, dm in points:
            held_c += dc
            held_m += dm
            assert held_c <= spec.cpus * (1 + SLACK) + SLACK, (
                f"node {spec.name}: {held_c} CPUs held at t={t}, capacity {spec.cpus}"
            )
            assert held_m <= spec.memory_mib * (1 + SLACK) + SLACK, (
                f"node {spec.name}: {held_m} MiB held at t={t}, capacity {spec.memory_mib}"
            )
            peak_c, peak_m = max(peak_c, held_c), max(peak_m, held_m)
        peaks[node] = (peak_c, peak_m)
    return peaks


def max_concurrent_holders(segments: Iterable[Segment]) -> int:
    """The most jobs that held one GPU at the same instant, over all GPUs."""
    per_gpu: dict[tuple[int, int], list[tuple[float, int]]] = defaultdict(list)
    for s in segments:
        if s.gpu >= 0 and s.end > s.begin:
            per_gpu[(s.node, s.gpu)] += [(s.begin, 1), (s.end, -1)]
    best = 0
    for points in per_gpu.values():
        points.sort()
        held = 0
        for _, delta in points:
            held += delta
            best = max(best, held)
    return best


def accepted_models(gpu_spec: str | None) -> set[str] | None:
    """The GPU models a pod accepts (``gpu_spec`` alternatives split on '|'), None for any."""
    if gpu_spec is None or not gpu_spec.strip():
        return None
    return {part.strip().casefold() for part in gpu_spec.split("|") if part.strip()}


def check_replay(trace: Trace, cluster: ClusterSpec, result: RunResult) -> list[Allocation]:
    """Every resource invariant of a replay (see the module docstring); returns the allocations."""
    assert result.segments is not None
    assert_no_overcommit(result.segments)
    allocs = allocations(result.segments)
    node_usage_peaks(allocs, trace, cluster)

    t = trace.table.to_pydict()
    jobs = result.jobs.to_pydict()
    assert jobs["job_id"] == t["job_id"], "the jobs table must keep every trace row, in order"
    for a in allocs:
        gpus = t["num_gpus"][a.row]
        held = sum(len(g) for g in a.gpus_on.values())
        assert held == gpus, f"{t['job_id'][a.row]}: holds {held} GPUs, asked {gpus}"
        if gpus == 0:
            assert len(a.gpus_on) == 1, "a CPU pod runs on one node"
            continue
        expected = t["gpu_milli"][a.row] or WHOLE
        assert a.milli == expected, f"{t['job_id'][a.row]}: share {a.milli}, asked {expected}"
        models = accepted_models(t["gpu_type"][a.row])
        for node in a.gpus_on:
            spec = cluster.nodes[node]
            assert spec.gpus > 0
            if models is not None:
                assert spec.gpu_type.casefold() in models, (
                    f"{t['job_id'][a.row]} wants {t['gpu_type'][a.row]}, ran on {spec.gpu_type}"
                )
    ran = {a.row for a in allocs}
    for i, status in enumerate(jobs["status"]):
        if status == "finished":
            assert i in ran
            # Replay: a pod runs exactly as long as it did in the real cluster (no preemption).
            assert math.isclose(jobs["run_time_s"][i], t["duration"][i])
            assert math.isclose(
                jobs["jct_s"][i], jobs["queue_s"][i] + t["duration"][i], abs_tol=1e-6
            )
        else:
            assert status == "set_aside" and jobs["reason"][i], f"row {i} dropped without reason"
            assert i not in ran
    return allocs


def check_pending_set_aside(trace: Trace, result: RunResult) -> int:
    """Pending pods are set aside with a reason and counted; returns how many there were."""
    t = trace.table.to_pydict()
    jobs = result.jobs.to_pydict()
    s = result.summary
    pending = [i for i, state in enumerate(t["state"]) if state == "PENDING"]
    for i in pending:
        assert t["duration"][i] is None
        assert jobs["status"][i] == "set_aside"
        assert "duration" in jobs["reason"][i], jobs["reason"][i]
    reasons = Counter(r for st, r in zip(jobs["status"], jobs["reason"], strict=True) if r)
    assert s["set_aside_reasons"] == dict(reasons)
    assert s["jobs_set_aside"] == sum(reasons.values()) >= len(pending)
    assert s["jobs"] + s["jobs_set_aside"] == s["jobs_in_trace"] == len(trace)
    return len(pending)


def csv_phases(path: Path) -> Counter[str]:
    with path.open(newline="") as f:
        return Counter(row["pod_phase"] for row in csv.DictReader(f))


# ---- the bundled 500-pod slice (always available) -------------------------------------------


def test_bundled_slice_replays_within_every_capacity(cluster: ClusterSpec) -> None:
    path = bundled_trace_path(BUNDLED_SLICE)
    read = read_trace(path)
    assert read.format == "alibaba-2023" and read.rows_read == len(read.trace) == 500
    result = simulate(read.trace, cluster, SimConfig(), record_segments=True)

    check_replay(read.trace, cluster, result)
    pending = check_pending_set_aside(read.trace, result)
    assert pending == csv_phases(path)["Pending"] == 35
    assert result.summary["jobs"] == 465
    assert result.summary["jobs_set_aside"] == 35
    # Fractional pods really shared GPUs, so the share sweep checked something.
    assert max_concurrent_holders(result.segments or []) >= 2


def test_compressed_slice_fills_nodes_without_overcommit(cluster: ClusterSpec) -> None:
    """Arrivals 1000x denser: pods overlap far more, CPUs/memory become the binding limit."""
    read = read_trace(bundled_trace_path(BUNDLED_SLICE))
    trace = scale_time(read.trace, submit_factor=0.001)
    result = simulate(trace, cluster, SimConfig(), record_segments=True)

    allocs = check_replay(trace, cluster, result)
    check_pending_set_aside(trace, result)
    peaks = node_usage_peaks(allocs, trace, cluster)
    fullest = max(
        max(c / (cluster.nodes[n].cpus or math.inf), m / (cluster.nodes[n].memory_mib or math.inf))
        for n, (c, m) in peaks.items()
    )
    # The scenario must push some node to (nearly) full CPUs or memory, or it tests nothing.
    assert fullest > 0.9
    assert max_concurrent_holders(result.segments or []) >= 3


def with_gpu_constraints(trace: Trace) -> Trace:
    """The slice with GPU-model requests: shared pods on the 2 single-GPU A10 nodes only (so
    they must queue and pack), whole 1-GPU pods on T4 or V100M32, 8-GPU pods on G3."""
    t = trace.table
    gpus = t.column("num_gpus").to_pylist()
    milli = t.column("gpu_milli").to_pylist()
    wanted: list[str | None] = []
    for g, m in zip(gpus, milli, strict=True):
        if g == 0:
            wanted.append(None)
        elif m is not None and m < WHOLE:
            wanted.append("A10")
        elif g == 1:
            wanted.append("T4|V100M32")
        else:
            wanted.append("G3")
    index = t.schema.get_field_index("gpu_type")
    table = t.set_column(index, t.schema.field(index), pa.array(wanted, pa.string()))
    return Trace(table, trace.source, trace.origin_unix)


def test_gpu_type_constraints_are_honoured(cluster: ClusterSpec) -> None:
    read = read_trace(bundled_trace_path(BUNDLED_SLICE))
    trace = with_gpu_constraints(scale_time(read.trace, submit_factor=0.01))
    result = simulate(trace, cluster, SimConfig(), record_segments=True)

    allocs = check_replay(trace, cluster, result)
    check_pending_set_aside(trace, result)
    a10 = {i for i, n in enumerate(cluster.nodes) if n.gpu_type == "A10"}
    assert len(a10) == 2
    shared_rows = {a.row for a in allocs if a.milli < WHOLE}
    assert shared_rows
    assert all(set(a.gpus_on) <= a10 for a in allocs if a.row in shared_rows)
    # Two GPUs for all shared pods: they packed (several per GPU) and some had to wait.
    assert max_concurrent_holders(result.segments or []) >= 2
    queued = [
        q
        for q, status, row in zip(
            result.jobs.column("queue_s").to_pylist(),
            result.jobs.column("status").to_pylist(),
            range(len(trace)),
            strict=True,
        )
        if status == "finished" and row in shared_rows and q > 0
    ]
    assert queued, "with 2 GPUs for every shared pod, some must have waited"


# ---- the full trace files (need ../shared/traces) -------------------------------------------


@requires_traces
def test_full_default_pod_list_replays(cluster: ClusterSpec) -> None:
    path = ALIBABA / "openb_pod_list_default.csv"
    read = read_trace(path)
    assert read.rows_read == len(read.trace) == 8152 and not read.errors
    result = simulate(read.trace, cluster, SimConfig(), record_segments=True)

    check_replay(read.trace, cluster, result)
    pending = check_pending_set_aside(read.trace, result)
    assert pending == csv_phases(path)["Pending"] == 897
    s = result.summary
    # Every non-pending pod fits the cluster: only the pending ones are set aside.
    assert s["jobs"] == 8152 - 897 and s["jobs_set_aside"] == 897
    assert len(s["set_aside_reasons"]) == 1
    assert max_concurrent_holders(result.segments or []) >= 2


@requires_traces
def test_full_gpuspec_variant_honours_gpu_models(cluster: ClusterSpec) -> None:
    """The publishers' gpuspec33 variant: the same pods, a third with GPU-model requests."""
    path = ALIBABA / "openb_pod_list_gpuspec33.csv"
    read = read_trace(path)
    assert read.rows_read == len(read.trace) == 8152
    typed = sum(1 for v in read.trace.column("gpu_type").to_pylist() if v)
    assert typed > 2000
    result = simulate(read.trace, cluster, SimConfig(), record_segments=True)

    check_replay(read.trace, cluster, result)
    pending = check_pending_set_aside(read.trace, result)
    assert pending == 897
    t = read.trace.table.to_pydict()
    jobs = result.jobs.to_pydict()
    others = [
        i for i, r in enumerate(jobs["reason"]) if r is not None and t["state"][i] != "PENDING"
    ]
    # One pod (openb-pod-1639: 8 GPUs, 120 CPUs, 720 GiB) asks for G2 nodes here, and no G2 node
    # has 120 CPUs: it can never run. Whatever is set aside must truly fit no node of its models
    # (all these pods ask for at most one node's GPUs, so the whole pod must fit one node).
    assert [t["job_id"][i] for i in others] == ["openb-pod-1639"]
    for i in others:
        models = accepted_models(t["gpu_type"][i])
        fits = [
            n.name
            for n in cluster.nodes
            if (models is None or n.gpu_type.casefold() in models)
            and n.gpus >= t["num_gpus"][i]
            and (n.cpus or 0.0) >= t["num_cpus"][i]
            and (n.memory_mib or 0.0) >= t["memory_mib"][i]
        ]
        assert not fits, f"{t['job_id'][i]} set aside ({jobs['reason'][i]}) but fits {fits}"
