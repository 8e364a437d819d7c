"""Invariants of the simulator on random small traces and clusters, for every policy and placer."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.placement.registry import placers
from dlsched.policy.registry import policies
from dlsched.sim.config import CheckpointConfig, FaultConfig, SimConfig
from dlsched.sim.simulator import Simulator, simulate
from dlsched.trace.schema import Trace
from tests.sim.conftest import assert_no_overcommit

POLICIES = sorted(policies())
PLACERS = sorted(placers())


def estimator_for(policy: str) -> str | None:
    """Policies that rank by estimated duration get the seeded noisy oracle."""
    return "noisy-oracle" if policies()[policy].needs_estimate else None


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Trace, ClusterSpec]:
    partitions = draw(st.sampled_from([("a",), ("a", "b")]))
    nodes = []
    for p in partitions:
        for i in range(draw(st.integers(1, 3))):
            nodes.append(NodeSpec(f"{p}{i}", draw(st.sampled_from([1, 2, 4, 8])), partition=p))
    n = draw(st.integers(0, 25))
    cols: dict[str, list[object]] = {
        "job_id": [f"j{i}" for i in range(n)],
        "submit_time": [float(draw(st.integers(0, 500))) for _ in range(n)],
        "num_gpus": [draw(st.sampled_from([1, 1, 2, 4, 8, 16])) for _ in range(n)],
        "duration": [float(draw(st.integers(1, 400))) for _ in range(n)],
        "vc": [draw(st.sampled_from(partitions)) for _ in range(n)],
    }
    return Trace.from_columns(cols, "hypothesis"), ClusterSpec("h", tuple(nodes))


def check_run(trace: Trace, cluster: ClusterSpec, config: SimConfig) -> None:
    sim = Simulator(trace, cluster, config, record_segments=True)
    result = sim.run()
    jobs = result.jobs.to_pydict()
    capacity = cluster.partition_gpus()
    assert result.segments is not None
    # Co-locating policies (gandiva, lucid) may time-share a GPU between two jobs.
    assert_no_overcommit(result.segments, None if sim.sharing is None else sim.sharing.segments)
    for i, status in enumerate(jobs["status"]):
        fits = jobs["gpus"][i] <= capacity[trace.table.column("vc")[i].as_py()]
        if not fits:
            assert status == "set_aside" and "needs" in jobs["reason"][i]
            continue
        assert status == "finished", jobs["reason"][i]
        assert jobs["jct_s"][i] >= jobs["run_time_s"][i] - 1e-6
        assert jobs["first_start_s"][i] >= jobs["submit_s"][i]
    tl = result.timeline.to_pydict()
    for busy, up in zip(tl["busy_gpus"], tl["up_gpus"], strict=True):
        assert 0 <= busy <= up + 1e-9


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(POLICIES), st.sampled_from(PLACERS), st.booleans())
def test_invariants_hold_for_every_policy_and_placer(
    scenario: tuple[Trace, ClusterSpec], policy: str, placement: str, backfill: bool
) -> None:
    trace, cluster = scenario
    opts = {"allow_backfill": "true"} if backfill and not policies()[policy].preemptive else {}
    config = SimConfig(
        policy=policy,
        placement=placement,
        policy_options=opts,
        estimator=estimator_for(policy),
    )
    check_run(trace, cluster, config)


@settings(max_examples=25, deadline=None)
@given(scenarios(), st.sampled_from(POLICIES), st.integers(0, 3))
def test_invariants_hold_under_node_failures(
    scenario: tuple[Trace, ClusterSpec], policy: str, seed: int
) -> None:
    trace, cluster = scenario
    config = SimConfig(
        policy=policy,
        seed=seed,
        estimator=estimator_for(policy),
        faults=FaultConfig(mtbf_s=300.0, mttr_s=60.0),
        checkpoint=CheckpointConfig(interval_s=50.0),
    )
    check_run(trace, cluster, config)


@settings(max_examples=30, deadline=None)
@given(scenarios())
def test_fifo_starts_in_submit_order_within_a_partition(
    scenario: tuple[Trace, ClusterSpec],
) -> None:
    trace, cluster = scenario
    jobs = simulate(trace, cluster, SimConfig(policy="fifo")).jobs.to_pydict()
    last: dict[str, float] = {}
    for part, status, start in zip(
        jobs["partition"], jobs["status"], jobs["first_start_s"], strict=True
    ):
        if status != "finished":
            continue
        assert start >= last.get(part, -math.inf)
        last[part] = start


@settings(max_examples=15, deadline=None)
@given(scenarios(), st.sampled_from(POLICIES), st.integers(0, 5))
def test_identical_seeds_give_identical_output(
    scenario: tuple[Trace, ClusterSpec], policy: str, seed: int
) -> None:
    trace, cluster = scenario
    config = SimConfig(
        policy=policy,
        placement="random",
        seed=seed,
        estimator=estimator_for(policy),
        faults=FaultConfig(mtbf_s=400.0),
    )
    a, b = simulate(trace, cluster, config), simulate(trace, cluster, config)
    # repr() compares NaN (never-started jobs) as equal, unlike Table.equals.
    assert repr(a.jobs.to_pylist()) == repr(b.jobs.to_pylist())
    assert a.timeline.equals(b.timeline)


@settings(max_examples=20, deadline=None)
@given(scenarios())
def test_skipping_quiet_rounds_matches_running_every_round(
    scenario: tuple[Trace, ClusterSpec],
) -> None:
    trace, cluster = scenario
    lazy = simulate(
        trace, cluster, SimConfig(policy="tiresias", policy_options={"thresholds": "300,2000"})
    )
    eager = simulate(
        trace,
        cluster,
        SimConfig(policy="tiresias", every_round=True, policy_options={"thresholds": "300,2000"}),
    )
    a, b = lazy.jobs.to_pydict(), eager.jobs.to_pydict()
    assert a["end_s"] == b["end_s"] or np.allclose(a["end_s"], b["end_s"], equal_nan=True)
    assert a["preemptions"] == b["preemptions"]
