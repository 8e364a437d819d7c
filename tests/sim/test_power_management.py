"""Node power states and power managers inside the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.cluster.shorthand import parse_shorthand
from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.cluster.state import ClusterState
from dlsched.power.manager import PowerSnapshot
from dlsched.power.managers.ces import Ces
from dlsched.power.registry import create_power_manager
from dlsched.runner import Experiment, Selection, run_experiment
from dlsched.sim.config import PowerConfig, SimConfig
from dlsched.sim.power_states import BOOTING, OFF, NodePower
from dlsched.sim.simulator import simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.schema import Trace
from tests.sim.conftest import assert_no_overcommit, check_power_safety
from tests.sim.test_properties import scenarios


def bursty_trace() -> Trace:
    """Two bursts of work one day apart on 4 × 8 GPUs, idle in between."""
    submit, gpus, duration = [], [], []
    for burst in (0.0, 86_400.0):
        for k in range(12):
            submit.append(burst + 60.0 * k)
            gpus.append(8 if k % 3 == 0 else 2)
            duration.append(3_600.0)
    n = len(submit)
    return Trace.from_columns(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit_time": submit,
            "num_gpus": gpus,
            "duration": duration,
        }
    )


def config(manager: str | None, **options: str) -> SimConfig:
    return SimConfig(
        power=PowerConfig(manager=manager, manager_options=dict(options), wake_latency_s=120.0)
    )


def test_always_on_run_matches_the_plain_energy_figures() -> None:
    result = simulate(bursty_trace(), parse_shorthand("4x8"), config(None))
    s = result.summary
    assert "mean_powered_off_nodes" not in s
    assert s["energy_kwh"] == pytest.approx(s["energy_always_on_kwh"])


def test_reactive_manager_saves_idle_energy_between_bursts() -> None:
    trace, cluster = bursty_trace(), parse_shorthand("4x8")
    result = simulate(
        trace, cluster, config("reactive", idle_timeout_s="600"), record_segments=True
    )
    s = result.summary
    assert s["jobs"] == len(trace)
    assert s["power_manager"] == "reactive"
    # The cluster idles for most of the day between the bursts: most nodes are off then.
    assert s["mean_powered_off_nodes"] > 2.0
    assert s["energy_saved_fraction"] > 0.5
    assert s["energy_kwh"] < s["baseline_energy_kwh"]
    assert s["wakeups"] >= 1 and s["shutdowns"] >= s["wakeups"]
    # The second burst waits for booting nodes: queueing grows by at most the boot time.
    assert 0 <= s["extra_queue_s"] <= 120.0 + 1e-6
    assert result.segments is not None and result.power_transitions is not None
    check_power_safety(result.segments, result.power_transitions, len(cluster.nodes))


def test_energy_integral_is_exact_for_a_hand_checked_case() -> None:
    """One 1-GPU job of 1,000 s on two 1-GPU nodes; the idle node is off from t=0 (timeout 0):
    idle energy = 1 powered GPU × 1,000 s × idle watts."""
    trace = Trace.from_columns(
        {"job_id": ["a"], "submit_time": [0.0], "num_gpus": [1], "duration": [1_000.0]}
    )
    cfg = SimConfig(
        power=PowerConfig(
            idle_w_per_gpu=100.0,
            busy_extra_w_per_gpu=50.0,
            manager="reactive",
            manager_options={"idle_timeout_s": "0"},
            compare_baseline=False,
        )
    )
    s = simulate(trace, parse_shorthand("2x1"), cfg).summary
    assert s["energy_idle_kwh"] == pytest.approx(100.0 * 1_000.0 / 3.6e6)
    assert s["energy_busy_kwh"] == pytest.approx(50.0 * 1_000.0 / 3.6e6)
    assert s["energy_always_on_kwh"] == pytest.approx((2 * 100.0 + 50.0) * 1_000.0 / 3.6e6)
    assert s["mean_powered_off_nodes"] == pytest.approx(1.0)
    assert "baseline_energy_kwh" not in s


def test_woken_node_boots_before_taking_jobs() -> None:
    """A job arriving while every node is off waits exactly the wake latency."""
    trace = Trace.from_columns(
        {
            "job_id": ["a", "b"],
            "submit_time": [0.0, 5_000.0],
            "num_gpus": [1, 1],
            "duration": [100.0, 100.0],
        }
    )
    cfg = SimConfig(
        power=PowerConfig(
            manager="reactive",
            manager_options={"idle_timeout_s": "60"},
            wake_latency_s=250.0,
            compare_baseline=False,
        )
    )
    jobs = simulate(trace, parse_shorthand("1x1"), cfg).jobs.to_pydict()
    assert jobs["queue_s"] == [0.0, pytest.approx(250.0)]


def test_node_power_refuses_unsafe_changes() -> None:
    state = ClusterState(parse_shorthand("2x4"))
    booted: list[int] = []
    pending: list[tuple[float, int]] = []
    power = NodePower(
        state, 30.0, lambda at, fn, node: pending.append((at, node)), booted.append, lambda: 0.0
    )
    state.allocate(((0, (0,)),), 1000, 0.0, 0.0)
    with pytest.raises(ValueError, match="cannot be powered off"):
        power.power_off(0, 0.0)
    power.power_off(1, 0.0)
    assert not state.node_up[1] and power.power[1] == OFF
    with pytest.raises(ValueError, match="not powered off"):
        power.wake(0, 1.0)
    power.wake(1, 1.0)
    assert power.power[1] == BOOTING and not state.node_up[1]
    assert pending == [(31.0, 1)]


def test_eligible_nodes_come_from_the_partition_with_most_idle_nodes_first() -> None:
    nodes = tuple(
        NodeSpec(f"{p}{i}", 4, partition=p) for p, k in (("a", 3), ("b", 1)) for i in range(k)
    )
    state = ClusterState(ClusterSpec("c", nodes))
    seen: list[PowerSnapshot] = []

    class Recorder(Ces):
        def decide(self, snapshot: PowerSnapshot) -> list[int]:
            seen.append(snapshot)
            return []

    power = NodePower(state, 1.0, lambda *_: None, lambda _: None, lambda: 0.0, Recorder())
    power.decide(0, 0.0, [0, 0])
    # a has 3 idle nodes (0, 1, 2), b has 1 (3): a2, a1, then a tie of one each, broken by
    # the lower partition index.
    assert list(seen[0].eligible) == [2, 1, 0, 3]
    power.decide(1, 0.0, [0, 1])
    assert list(seen[1].eligible) == [2, 1, 0], "a partition with queued jobs keeps its nodes"


def test_ces_shrinks_only_when_demand_falls_and_holds_off_after_a_wake() -> None:
    ces = Ces(preset="philly", forecaster="persistence", buffer=2, history=2, future=2)
    ces.bind(0.0, None, 0)

    def snap(step: int, busy: int, powered: int) -> PowerSnapshot:
        eligible = list(range(powered - 1, busy - 1, -1))
        return PowerSnapshot(step * 600.0, step, busy, powered, 20, eligible, [0.0] * len(eligible))

    assert ces.decide(snap(0, 10, 20)) == []
    assert ces.decide(snap(1, 10, 20)) == []
    # Flat demand: the history condition (falling by ≥ 0.1 nodes) fails.
    assert ces.decide(snap(2, 10, 20)) == []
    # Demand drops to 6; persistence forecasts 6, so "lower" needs busy − forecast ≥ 0: holds.
    chosen = ces.decide(snap(3, 6, 20))
    assert len(chosen) == 20 - (6 + 2)
    ces.on_wake(3_700.0, 3)
    for step in range(4, 4 + ces.params.hold_off):
        assert ces.decide(snap(step, 3 if step == 4 else 2, 11)) == [], step


def test_unknown_manager_and_option_are_named() -> None:
    with pytest.raises(ValueError, match="unknown power manager 'nope'; available: ces, reactive"):
        create_power_manager("nope")
    with pytest.raises(ValueError, match="unknown option"):
        create_power_manager("reactive", {"idle": "3"})
    with pytest.raises(ValueError, match="unknown CES preset"):
        create_power_manager("ces", {"preset": "mars"})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scenarios(),
    st.sampled_from(["reactive", "ces"]),
    st.sampled_from([0.0, 30.0, 400.0]),
    st.sampled_from(["fifo", "tiresias"]),
)
def test_power_managed_runs_keep_every_invariant(
    scenario: tuple[Trace, ClusterSpec], manager: str, latency: float, policy: str
) -> None:
    trace, cluster = scenario
    options = (
        {"idle_timeout_s": "50", "check_s": "20"}
        if manager == "reactive"
        else {
            "forecaster": "persistence",
            "history": "1",
            "future": "1",
            "buffer": "0",
            "hold_off": "1",
        }
    )
    cfg = SimConfig(
        policy=policy,
        power=PowerConfig(manager=manager, manager_options=options, wake_latency_s=latency),
    )
    result = simulate(trace, cluster, cfg, record_segments=True)
    again = simulate(trace, cluster, cfg, record_segments=True)
    assert result.jobs.equals(again.jobs), "same seed, same run"
    jobs = result.jobs.to_pydict()
    capacity = cluster.partition_gpus()
    for i, status in enumerate(jobs["status"]):
        if jobs["gpus"][i] > capacity[trace.table.column("vc")[i].as_py()]:
            continue
        assert status == "finished", jobs["reason"][i]
        assert jobs["jct_s"][i] >= jobs["run_time_s"][i] - 1e-6
    assert result.segments is not None and result.power_transitions is not None
    assert_no_overcommit(result.segments)
    check_power_safety(result.segments, result.power_transitions, len(cluster.nodes))
    s = result.summary
    if s["jobs"]:
        assert s["energy_kwh"] <= s["energy_always_on_kwh"] + 1e-9
        assert 0 <= s["mean_powered_off_nodes"] <= len(cluster.nodes)


@pytest.mark.slow
def test_ces_can_forecast_with_a_model_trained_on_a_supplied_series(tmp_path: Path) -> None:
    """A run directory of an earlier always-on run is the training series: the model is used
    from the first decision and never retrained on simulated time."""
    week = Selection(end=str(7 * 86_400))
    trace = str(bundled_trace_path("vc_0e4a51"))
    run_experiment(Experiment(trace, "32x8", SimConfig(), week), tmp_path / "always-on")
    options = {"train_series": str(tmp_path / "always-on"), "history": "2", "future": "3"}
    power = PowerConfig(manager="ces", manager_options=options, compare_baseline=False)
    s = run_experiment(Experiment(trace, "32x8", SimConfig(power=power), week)).summary
    assert s["forecast_trainings"] == 0
    assert s["forecast_model_steps"] > 100
    assert s["forecast_smape"] < 100.0
    assert s["energy_kwh"] < s["energy_always_on_kwh"]
