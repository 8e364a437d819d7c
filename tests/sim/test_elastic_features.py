"""Every simulator feature applies to elastic jobs: node faults, power management and energy,
VC partitions (the bundled Pollux workload 6, first jobs, on the Pollux testbed)."""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa
import pytest

from dlsched.cluster.builtin import builtin_cluster
from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.sim.config import FaultConfig, PowerConfig, SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from dlsched.trace.schema import Trace
from tests.sim.conftest import assert_no_overcommit, check_outage_safety, check_power_safety


def workload(jobs: int = 40) -> Trace:
    trace = read_trace(bundled_trace_path("pollux_workload-6")).trace
    return Trace(trace.table.slice(0, jobs), trace.source)


@pytest.mark.parametrize("policy", ["tiresias", "pollux"])
def test_node_failures_cost_elastic_jobs_progress(policy: str) -> None:
    trace, cluster = workload(), builtin_cluster("pollux")
    calm = simulate(trace, cluster, SimConfig(policy=policy))
    config = SimConfig(policy=policy, faults=FaultConfig(mtbf_s=20_000.0, mttr_s=600.0))
    faulty = simulate(trace, cluster, config, record_segments=True)
    assert calm.summary["failures"] is None and calm.summary["lost_gpu_seconds"] is None
    assert faulty.summary["failures"] > 0
    assert faulty.summary["jobs"] == len(trace)
    assert sum(faulty.jobs.column("lost_gpu_seconds").to_pylist()) > 0
    assert faulty.segments is not None and faulty.outages
    check_outage_safety(faulty.segments, faulty.outages)
    assert_no_overcommit(faulty.segments)


def test_energy_is_accounted_and_power_management_saves_some() -> None:
    trace, cluster = workload(), builtin_cluster("pollux")
    always_on = simulate(trace, cluster, SimConfig(policy="pollux"))
    assert always_on.summary["energy_kwh"] > 0
    power = PowerConfig(
        manager="ces",
        manager_options={"buffer": "1", "forecaster": "persistence"},
        compare_baseline=False,
    )
    managed = simulate(
        trace, cluster, SimConfig(policy="pollux", power=power), record_segments=True
    )
    s = managed.summary
    assert s["jobs"] == len(trace)
    assert s["energy_saved_fraction"] > 0.05
    assert s["energy_kwh"] < always_on.summary["energy_kwh"]
    assert managed.segments is not None and managed.power_transitions is not None
    check_power_safety(managed.segments, managed.power_transitions, len(cluster.nodes))


def test_elastic_jobs_stay_inside_their_partition() -> None:
    base = workload(24)
    vcs = ["a" if i % 3 else "b" for i in range(len(base))]
    trace = Trace(
        base.table.set_column(
            base.table.schema.get_field_index("vc"), "vc", pa.array(vcs, pa.string())
        ),
        base.source,
    )
    nodes = tuple(
        NodeSpec(f"n{i}", 4, gpu_type="t4", partition="a" if i < 6 else "b") for i in range(8)
    )
    cluster = ClusterSpec("two-vcs", nodes)
    size = {"a": 24, "b": 8}
    for policy in ("pollux", "tiresias"):
        result = simulate(trace, cluster, SimConfig(policy=policy), record_segments=True)
        jobs = result.jobs.to_pydict()
        for i, (vc, gpus) in enumerate(zip(vcs, jobs["gpus"], strict=True)):
            if gpus > size[vc]:
                assert jobs["status"][i] == "set_aside"
                assert f"needs {gpus} GPUs but pool {vc!r} has {size[vc]}" in jobs["reason"][i]
            else:
                assert jobs["status"][i] == "finished" and jobs["partition"][i] == vc
        assert result.segments is not None
        nodes_of: dict[int, set[str]] = defaultdict(set)
        for seg in result.segments:
            nodes_of[seg.row].add(nodes[seg.node].partition)
        for row, parts in nodes_of.items():
            assert parts == {vcs[row]}, (row, parts)
