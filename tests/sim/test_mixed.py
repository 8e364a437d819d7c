"""Rigid, elastic and parameter-server jobs in one run, under one policy or one per kind, with
faults and power management: the simulator's invariants hold for every kind together."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.cluster.shorthand import parse_shorthand
from dlsched.cluster.spec import ClusterSpec
from dlsched.perf.perfbook import PerfBook
from dlsched.sim.config import CheckpointConfig, FaultConfig, PowerConfig, SimConfig
from dlsched.sim.groups import PolicyChoiceError
from dlsched.sim.simulator import RunResult, simulate
from dlsched.trace.schema import Trace
from tests.sim.conftest import assert_no_overcommit, check_outage_safety, check_power_safety

ELASTIC_APPS = {"ncf": 512, "cifar10": 256}
PS_NETS = ("resnet50", "transformer_base")
POLICY_SETS = [
    ("fifo", {}),
    ("tiresias", {}),
    ("tiresias", {"elastic": "pollux", "ps": "smd"}),
    ("fifo", {"elastic": "optimus", "ps": "optimus"}),
    ("tiresias", {"elastic": "themis"}),
    ("fifo", {"elastic": "ones"}),
]


def mixed_trace(
    rigid: list[tuple[float, int, float]],
    elastic: list[tuple[float, str, int]],
    ps: list[tuple[float, str, int, float]],
) -> Trace:
    """Rigid (submit, GPUs, run time), elastic (submit, application, GPUs) and PS (submit,
    network, workers, samples) jobs in one trace; kinds left to inference except PS."""
    cols: dict[str, list[object]] = {
        name: []
        for name in (
            "job_id",
            "submit_time",
            "num_gpus",
            "duration",
            "application",
            "batch_size",
            "work",
            "work_unit",
            "kind",
        )
    }

    def row(job_id: str, submit: float, gpus: int, **fields: object) -> None:
        values = {"job_id": job_id, "submit_time": submit, "num_gpus": gpus, **fields}
        for name, column in cols.items():
            column.append(values.get(name))

    for i, (submit, gpus, run) in enumerate(rigid):
        row(f"r{i}", submit, gpus, duration=run)
    for i, (submit, app, gpus) in enumerate(elastic):
        row(f"e{i}", submit, gpus, application=app, batch_size=ELASTIC_APPS[app] * gpus)
    for i, (submit, net, workers, samples) in enumerate(ps):
        row(
            f"p{i}",
            submit,
            workers,
            application=net,
            work=samples,
            work_unit="samples",
            kind="ps",
        )
    return Trace.from_columns(cols, "mixed-test")


def small_mixed() -> Trace:
    return mixed_trace(
        rigid=[(0.0, 2, 600.0), (10.0, 4, 300.0), (50.0, 1, 900.0), (400.0, 8, 200.0)],
        elastic=[(0.0, "ncf", 1), (30.0, "cifar10", 2), (200.0, "ncf", 2)],
        ps=[(5.0, "resnet50", 2, 20_000.0), (100.0, "transformer_base", 1, 50_000.0)],
    )


def check(result: RunResult, trace: Trace, cluster: ClusterSpec) -> None:
    """Every job finished, no GPU over-committed, no job held a failed or powered-off node,
    JCT at least the job's least possible run time."""
    assert result.segments is not None
    assert_no_overcommit(result.segments)
    if result.power_transitions is not None:
        check_power_safety(result.segments, result.power_transitions, len(cluster.nodes))
    if result.outages is not None:
        check_outage_safety(result.segments, result.outages)
    jobs = result.jobs.to_pydict()
    assert jobs["status"] == ["finished"] * len(trace), jobs["reason"]
    floor = least_run_times(trace, cluster)
    for job_id, jct in zip(jobs["job_id"], jobs["jct_s"], strict=True):
        assert jct >= floor[job_id] - 1e-6, job_id


def least_run_times(trace: Trace, cluster: ClusterSpec) -> dict[str, float]:
    """A lower bound on each job's run time: its trace run time (rigid), every epoch at the
    best goodput of any GPU count the cluster has (elastic), 0 for PS jobs."""
    perf = PerfBook()
    gpn = max(n.gpus for n in cluster.nodes)
    total = sum(n.gpus for n in cluster.nodes)
    out: dict[str, float] = {}
    for job in trace.jobs():
        if job.duration is not None:
            out[job.job_id] = job.duration
        elif job.kind is None and job.application in ELASTIC_APPS:
            eff = perf.efficiency(job.application)
            done, t = 0.0, 0.0
            for e, need in enumerate(eff.required):
                rate = max(
                    perf.best_batch(job.application, "t4", e, -(-n // gpn), n).progress_rate
                    for n in range(1, total + 1)
                )
                t += (need - done) / rate
                done = need
            out[job.job_id] = t
        else:
            out[job.job_id] = 0.0
    return out


@pytest.mark.parametrize(("policy", "kinds"), POLICY_SETS)
def test_a_mixed_trace_runs_under_each_policy_set(policy: str, kinds: dict[str, str]) -> None:
    trace, cluster = small_mixed(), parse_shorthand("4x4")
    config = SimConfig(policy=policy, kind_policies=kinds)
    result = simulate(trace, cluster, config, record_segments=True)
    check(result, trace, cluster)
    s = result.summary
    assert s["job_kinds"] == {"rigid": 4, "elastic": 3, "ps": 2}
    assert s["kind_policies"] == {
        "rigid": policy,
        "elastic": kinds.get("elastic", policy),
        "ps": kinds.get("ps", policy),
    }
    assert s["ftf_rho_mean"] is not None and s["ftf_rho_mean"] > 0


def test_policies_that_need_run_times_refuse_elastic_and_ps_jobs() -> None:
    with pytest.raises(PolicyChoiceError, match="'sjf' orders jobs by their run time"):
        simulate(small_mixed(), parse_shorthand("4x4"), SimConfig(policy="sjf"))
    with pytest.raises(PolicyChoiceError, match="'pollux' cannot schedule rigid jobs"):
        simulate(small_mixed(), parse_shorthand("4x4"), SimConfig(policy="pollux"))
    with pytest.raises(PolicyChoiceError, match="'smd' cannot schedule elastic jobs"):
        simulate(
            small_mixed(),
            parse_shorthand("4x4"),
            SimConfig(policy="fifo", kind_policies={"elastic": "smd"}),
        )
    elastic_only = mixed_trace([], [(0.0, "ncf", 1)], [])
    with pytest.raises(PolicyChoiceError, match="--placement pack: policy pollux places"):
        simulate(elastic_only, parse_shorthand("1x4"), SimConfig(policy="pollux", placement="pack"))
    rigid_only = mixed_trace([(0.0, 1, 10.0)], [], [])
    with pytest.raises(PolicyChoiceError, match="the trace has no elastic jobs"):
        simulate(rigid_only, parse_shorthand("1x1"), SimConfig(kind_policies={"elastic": "pollux"}))


def test_a_rigid_backlog_is_served_before_elastic_jobs_grow() -> None:
    # One 8-GPU rigid job waits while Pollux could spread the elastic ones over every GPU:
    # the reservation for waiting rigid jobs makes Pollux leave room for it.
    trace = mixed_trace(
        rigid=[(120.0, 8, 300.0)],
        elastic=[(0.0, "cifar10", 1), (0.0, "cifar10", 1), (0.0, "ncf", 1)],
        ps=[],
    )
    cluster = parse_shorthand("4x4")
    result = simulate(
        trace,
        cluster,
        SimConfig(policy="fifo", kind_policies={"elastic": "pollux"}),
        record_segments=True,
    )
    check(result, trace, cluster)
    jobs = result.jobs.to_pydict()
    rigid = jobs["job_id"].index("r0")
    # Pollux decides each minute: the rigid job starts at the round after it arrives, once
    # Pollux has shrunk its jobs into the GPUs left.
    assert jobs["queue_s"][rigid] <= 120.0


@st.composite
def mixed_scenarios(draw: st.DrawFn) -> tuple[Trace, ClusterSpec]:
    nodes = draw(st.integers(2, 4))
    cluster = parse_shorthand(f"{nodes}x4")
    rigid = [
        (float(draw(st.integers(0, 900))), draw(st.sampled_from([1, 2, 4, 8])), float(run))
        for run in draw(st.lists(st.integers(30, 900), max_size=6))
    ]
    elastic = [
        (float(draw(st.integers(0, 900))), app, draw(st.sampled_from([1, 2])))
        for app in draw(st.lists(st.sampled_from(sorted(ELASTIC_APPS)), max_size=3))
    ]
    ps = [
        (float(draw(st.integers(0, 900))), net, draw(st.integers(1, 2)), 5_000.0)
        for net in draw(st.lists(st.sampled_from(PS_NETS), max_size=2))
    ]
    rigid = [(t, min(g, 4 * nodes), r) for t, g, r in rigid]
    return mixed_trace(rigid, elastic, ps), cluster


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mixed_scenarios(),
    st.sampled_from(POLICY_SETS[:4]),
    st.integers(0, 3),
    st.sampled_from([None, "reactive"]),
)
def test_invariants_hold_for_mixed_traces_under_faults_and_power_management(
    scenario: tuple[Trace, ClusterSpec],
    policies: tuple[str, dict[str, str]],
    seed: int,
    manager: str | None,
) -> None:
    trace, cluster = scenario
    if len(trace) == 0:
        return
    policy, kinds = policies
    kinds = {k: v for k, v in kinds.items() if k in kinds_of(trace)}
    config = SimConfig(
        policy=policy,
        kind_policies=kinds,
        seed=seed,
        faults=FaultConfig(mtbf_s=1_500.0, mttr_s=120.0),
        checkpoint=CheckpointConfig(interval_s=60.0),
        power=PowerConfig(
            manager=manager,
            manager_options={"idle_timeout_s": "120"} if manager else {},
            wake_latency_s=30.0,
            compare_baseline=False,
        ),
    )
    first = simulate(trace, cluster, config, record_segments=True)
    check(first, trace, cluster)
    again = simulate(trace, cluster, config)
    assert repr(first.jobs.to_pylist()) == repr(again.jobs.to_pylist())
    assert first.timeline.equals(again.timeline)


def kinds_of(trace: Trace) -> set[str]:
    out = set()
    for job in trace.jobs():
        if job.kind == "ps":
            out.add("ps")
        elif job.duration is None:
            out.add("elastic")
        else:
            out.add("rigid")
    return out


def test_failures_roll_elastic_and_ps_jobs_back_to_their_checkpoints(tmp_path: Path) -> None:
    trace = mixed_trace([], [(0.0, "cifar10", 4)], [(0.0, "resnet50", 2, 400_000.0)])
    cluster = parse_shorthand("2x4")
    calm = simulate(trace, cluster, SimConfig(policy="fifo"))
    outages = tmp_path / "outages.csv"
    outages.write_text("node,fail_time,repair_time\nnode-000,700,760\nnode-001,700,760\n")
    faulty = simulate(
        trace,
        cluster,
        SimConfig(
            policy="fifo",
            faults=FaultConfig(file=str(outages)),
            checkpoint=CheckpointConfig(interval_s=300.0),
        ),
        record_segments=True,
    )
    check(faulty, trace, cluster)
    lost = faulty.jobs.column("lost_gpu_seconds").to_pylist()
    # Both jobs ran from their start (0, or 30 s later after the elastic first-start stall)
    # to 700 s and checkpoint every 300 s of progress: each loses the progress since then.
    assert all(x > 0 for x in lost)
    assert faulty.summary["failures"] == 2
    for before, after in zip(
        calm.jobs.column("jct_s").to_pylist(), faulty.jobs.column("jct_s").to_pylist(), strict=True
    ):
        assert after > before + 60.0 - 1e-6
    assert math.isfinite(faulty.summary["avg_jct_s"])
