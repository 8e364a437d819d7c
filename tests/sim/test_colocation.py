"""Jobs time-sharing GPUs in the simulator: Lucid's packing, the measured interference slowing
both jobs, re-rating when a partner starts or stops, and the invariants of co-located runs (no
GPU holds more than two jobs, co-located jobs never run faster than alone, every job finishes,
progress is conserved, runs are deterministic)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.cluster.shorthand import parse_shorthand
from dlsched.cluster.spec import ClusterSpec
from dlsched.perf.interference import Workload, lucid_interference
from dlsched.sim.config import CheckpointConfig, FaultConfig, RestartCost, SimConfig
from dlsched.sim.sharing import SharedSegment
from dlsched.sim.simulator import Simulator, simulate
from dlsched.trace.schema import Trace
from tests.sim.conftest import assert_no_overcommit

FREE = CheckpointConfig(costs=RestartCost(one_gpu_s=0.0, node_s=0.0, multi_node_s=0.0))
WORKLOADS = sorted(lucid_interference().profiles)


def trace_of(rows: list[tuple[float, int, float, Workload | None]]) -> Trace:
    return Trace.from_columns(
        {
            "job_id": [f"j{i}" for i in range(len(rows))],
            "submit_time": [r[0] for r in rows],
            "num_gpus": [r[1] for r in rows],
            "duration": [r[2] for r in rows],
            "application": [None if r[3] is None else r[3].model for r in rows],
            "batch_size": [None if r[3] is None else r[3].batch_size for r in rows],
            "amp": [None if r[3] is None else r[3].amp for r in rows],
        },
        "colocation-test",
    )


def lucid(**options: str) -> SimConfig:
    """Lucid packing whenever its rule allows (no forecast switch, no priority ratio)."""
    opts = {"adaptive": "false", "priority_ratio": "1e9", **options}
    return SimConfig(policy="lucid", policy_options=opts, estimator="noisy-oracle", checkpoint=FREE)


def run(trace: Trace, cluster: ClusterSpec, config: SimConfig) -> tuple[Any, Simulator]:
    sim = Simulator(trace, cluster, config, record_segments=True)
    return sim.run(), sim


def test_a_pair_runs_at_its_measured_speeds_until_one_finishes() -> None:
    # Lucid's colocate_info.csv row 0: MobileNetV3 bs32 runs at 0.983 beside ResNet18 bs32,
    # which runs at 1.034 (noise: taken as 1).
    mobilenet, resnet = Workload("MobileNetV3", 32, False), Workload("ResNet18", 32, False)
    trace = trace_of([(0.0, 1, 1000.0, mobilenet), (0.0, 1, 1000.0, resnet)])
    result, sim = run(trace, parse_shorthand("1x1"), lucid())
    jobs = {r["job_id"]: r for r in result.jobs.to_pylist()}
    a, b = jobs["j0"], jobs["j1"]
    assert a["first_start_s"] == b["first_start_s"] == 0.0
    # ResNet18 finishes at 1000 s; MobileNetV3 has done 983 s of work then, 17 s are left.
    assert b["end_s"] == pytest.approx(1000.0)
    assert a["end_s"] == pytest.approx(1017.0)
    assert a["interference_s"] == pytest.approx(17.0)
    assert b["interference_s"] == pytest.approx(0.0)
    assert a["colocated_s"] == b["colocated_s"] == pytest.approx(1000.0)
    # The shared GPU is charged half to each while shared.
    assert a["gpu_seconds"] + b["gpu_seconds"] == pytest.approx(1017.0)
    assert result.summary["colocation"]["pairs"] == 1
    assert result.summary["colocation"]["jobs_colocated"] == 2
    assert sim.sharing is not None and sim.sharing.segments == [
        SharedSegment((1, 0), ((0, (0,)),), 0.0, 1000.0)
    ]


def test_sensitive_pairs_are_not_packed_and_wait() -> None:
    # Two sharing score 2 workloads: over Lucid's budget of 2, the second waits for the GPU.
    heavy = Workload("ResNet18", 128, False)
    trace = trace_of([(0.0, 1, 100.0, heavy), (0.0, 1, 100.0, heavy)])
    result, _ = run(trace, parse_shorthand("1x1"), lucid())
    ends = sorted(result.jobs.column("end_s").to_pylist())
    assert ends == [pytest.approx(100.0), pytest.approx(200.0)]
    assert result.summary["colocation"]["pairs"] == 0


def test_unknown_workloads_and_other_sizes_are_never_packed() -> None:
    light = Workload("PointNet", 32, False)
    trace = trace_of([(0.0, 1, 100.0, None), (0.0, 1, 100.0, light), (0.0, 2, 100.0, light)])
    result, _ = run(trace, parse_shorthand("1x1,1x2"), lucid())
    assert result.summary["colocation"]["pairs"] == 0


def test_a_policy_that_does_not_colocate_reports_null_figures() -> None:
    trace = trace_of([(0.0, 1, 100.0, WORKLOADS[0])])
    result = simulate(trace, parse_shorthand("1x1"), SimConfig(policy="fifo"))
    assert set(result.summary["colocation"].values()) == {None}
    assert result.jobs.column("colocated_s").null_count == 1


@st.composite
def colocation_runs(draw: st.DrawFn) -> tuple[Trace, ClusterSpec]:
    nodes = draw(st.sampled_from(["1x1", "1x2", "2x2", "1x4", "2x4"]))
    n = draw(st.integers(1, 20))
    rows = [
        (
            float(draw(st.integers(0, 400))),
            draw(st.sampled_from([1, 1, 1, 2, 4])),
            float(draw(st.integers(1, 500))),
            draw(st.one_of(st.none(), st.sampled_from(WORKLOADS))),
        )
        for _ in range(n)
    ]
    return trace_of(rows), parse_shorthand(nodes)


def test_gandiva_time_slices_when_full_and_migrates_when_gpus_free() -> None:
    # Two 1-GPU nodes. j0 and j1 take one each; j2 (no known workload: time-sliced, 0.5 each)
    # shares j0's GPU from 20 s; j1 ends at 110 s and j2 moves to its GPU (a restart).
    heavy = Workload("ResNet18", 128, False)
    trace = trace_of([(0.0, 1, 100.0, heavy), (10.0, 1, 100.0, heavy), (20.0, 1, 50.0, None)])
    result, _ = run(trace, parse_shorthand("1x1,1x1"), SimConfig(policy="gandiva", checkpoint=FREE))
    jobs = {r["job_id"]: r for r in result.jobs.to_pylist()}
    assert jobs["j2"]["first_start_s"] == 20.0
    assert jobs["j2"]["end_s"] == pytest.approx(110.0 + 5.0)  # 45 s of work done by 110 s
    assert jobs["j2"]["restarts"] == 1
    assert jobs["j0"]["end_s"] == pytest.approx(145.0)  # 65 s done by 110 s, 35 s alone
    assert jobs["j0"]["interference_s"] == pytest.approx(45.0)
    assert result.summary["colocation"]["mean_shared_speed"] == pytest.approx(0.5)


def test_gandiva_packs_a_pair_whose_measured_speeds_beat_time_slicing() -> None:
    mobilenet, resnet = Workload("MobileNetV3", 32, False), Workload("ResNet18", 32, False)
    trace = trace_of([(0.0, 1, 1000.0, mobilenet), (1.0, 1, 1000.0, resnet)])
    result, _ = run(trace, parse_shorthand("1x1"), SimConfig(policy="gandiva", checkpoint=FREE))
    jobs = {r["job_id"]: r for r in result.jobs.to_pylist()}
    # Packed at Lucid's measured speeds (0.983, 1.034 -> 1), not time-sliced at 0.5 each.
    assert jobs["j1"]["end_s"] == pytest.approx(1001.0)
    assert jobs["j0"]["interference_s"] == pytest.approx(1000.0 * 0.017)


def config_for(policy: str, adaptive: bool, ratio: str) -> SimConfig:
    if policy == "gandiva":
        return SimConfig(policy="gandiva", checkpoint=FREE)
    return lucid(adaptive=str(adaptive).lower(), priority_ratio=ratio)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    colocation_runs(),
    st.sampled_from(["lucid", "gandiva"]),
    st.booleans(),
    st.sampled_from(["1e9", "2"]),
)
def test_colocated_runs_keep_their_invariants(
    scenario: tuple[Trace, ClusterSpec], policy: str, adaptive: bool, ratio: str
) -> None:
    trace, cluster = scenario
    config = config_for(policy, adaptive, ratio)
    result, sim = run(trace, cluster, config)
    assert sim.sharing is not None and sim.sharing.segments is not None
    assert_no_overcommit(result.segments, sim.sharing.segments)
    duration = trace.table.column("duration").to_pylist()
    fits = sum(n.gpus for n in cluster.nodes)
    for i, job in enumerate(result.jobs.to_pylist()):
        if job["gpus"] > fits:
            assert job["status"] == "set_aside"
            continue
        assert job["status"] == "finished", job
        assert 0.0 <= job["interference_s"] <= job["colocated_s"] + 1e-9
        # Slowdown >= 1, and progress conserved: its run took its duration plus what
        # interference cost it (no restarts, no restart costs).
        span = job["end_s"] - job["first_start_s"]
        assert span == pytest.approx(duration[i] + job["interference_s"], abs=1e-6)
    again, _ = run(trace, cluster, config)
    assert repr(again.jobs.to_pylist()) == repr(result.jobs.to_pylist())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(colocation_runs(), st.sampled_from(["lucid", "gandiva"]), st.integers(0, 3))
def test_pairs_survive_node_failures(
    scenario: tuple[Trace, ClusterSpec], policy: str, seed: int
) -> None:
    trace, cluster = scenario
    config = config_for(policy, False, "1e9")
    config = SimConfig(
        policy=config.policy,
        policy_options=config.policy_options,
        estimator=config.estimator,
        seed=seed,
        faults=FaultConfig(mtbf_s=300.0, mttr_s=60.0),
        checkpoint=CheckpointConfig(interval_s=50.0),
    )
    result, sim = run(trace, cluster, config)
    assert sim.sharing is not None and sim.sharing.segments is not None
    assert_no_overcommit(result.segments, sim.sharing.segments)
    total = sum(n.gpus for n in cluster.nodes)
    for job in result.jobs.to_pylist():
        assert (job["status"] == "finished") == (job["gpus"] <= total), job
    assert not sim.state.shared
