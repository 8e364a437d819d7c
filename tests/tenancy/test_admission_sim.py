"""The admission stage on the one simulation core: quotas, borrowing and reclaim decide which
jobs their policy sees; evictions are preemptions of a Plan; rigid and elastic jobs alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.schema import Trace
from tests.sim.conftest import assert_no_overcommit
from tests.tenancy.kueue_manifests import documents, write

CLUSTER = resolve_cluster("2x4")


def _queues(tmp_path: Path, reclaim: str | None = "Any", **extra: Any) -> str:
    a: dict[str, Any] = {"gpu": 4, "cohort": "pool", **extra}
    if reclaim is not None:
        a["reclaim"] = reclaim
    docs = documents({"a": a, "b": {"gpu": 4, "cohort": "pool"}})
    return str(write(tmp_path / "queues.yaml", docs))


def _rigid(rows: list[tuple[str, float, int, float, str]]) -> Trace:
    return Trace.from_columns(
        {
            "job_id": [r[0] for r in rows],
            "submit_time": [r[1] for r in rows],
            "num_gpus": [r[2] for r in rows],
            "duration": [r[3] for r in rows],
            "vc": [r[4] for r in rows],
        },
        "tenants",
    )


def _by_id(result: Any) -> dict[str, dict[str, Any]]:
    rows = result.jobs.to_pylist()
    return {r["job_id"]: r for r in rows}


def _config(tmp_path: Path, **kw: Any) -> SimConfig:
    return SimConfig(use_partitions=False, queues=_queues(tmp_path, **kw))


def test_borrowing_then_reclaim_preempts_through_a_plan(tmp_path: Path) -> None:
    # b borrows a's idle quota for an 8-GPU job; a's 4-GPU job reclaims it at t=10.
    trace = _rigid([("b1", 0, 8, 1000, "b"), ("a1", 10, 4, 100, "a")])
    result = simulate(trace, CLUSTER, _config(tmp_path), record_segments=True)
    jobs = _by_id(result)
    assert jobs["a1"]["first_start_s"] == 10
    assert jobs["b1"]["preemptions"] == 1
    assert jobs["b1"]["first_start_s"] == 0
    # b1 is admitted again only when a1's quota is free: at a1's end (10 + 100).
    assert jobs["b1"]["end_s"] > 110 + 990
    s = result.summary
    assert s["preemptions_by_cause"] == {"priority": 0, "reclaim": 1, "fair_share": 0}
    assert s["tenants"]["b"]["preemptions"]["reclaim"] == 1
    assert s["tenants"]["a"]["jobs"] == 1
    assert s["tenants"]["a"]["avg_queue_s"] == 0
    assert s["tenants"]["b"]["borrowed_gpus_avg"] > 0
    assert_no_overcommit(result.segments or [])


def test_without_reclaim_the_owner_waits(tmp_path: Path) -> None:
    trace = _rigid([("b1", 0, 8, 1000, "b"), ("a1", 10, 4, 100, "a")])
    jobs = _by_id(simulate(trace, CLUSTER, _config(tmp_path, reclaim=None)))
    assert jobs["b1"]["preemptions"] == 0
    assert jobs["a1"]["first_start_s"] == 1000


def test_quota_holds_jobs_back_on_an_idle_cluster(tmp_path: Path) -> None:
    # Without a cohort, a's 4 GPUs are all it may use even when the cluster is empty.
    docs = documents({"a": {"gpu": 4}, "b": {"gpu": 4}})
    path = write(tmp_path / "q.yaml", docs)
    trace = _rigid([("a1", 0, 4, 100, "a"), ("a2", 0, 4, 100, "a")])
    cfg = SimConfig(use_partitions=False, queues=str(path))
    jobs = _by_id(simulate(trace, CLUSTER, cfg))
    assert sorted((jobs[j]["first_start_s"], j) for j in jobs) == [(0, "a1"), (100, "a2")]
    plain = _by_id(simulate(trace, CLUSTER, SimConfig(use_partitions=False)))
    assert plain["a2"]["first_start_s"] == 0


def test_job_larger_than_its_queue_is_set_aside(tmp_path: Path) -> None:
    docs = documents({"a": {"gpu": 4}, "b": {"gpu": 4}})
    path = write(tmp_path / "q.yaml", docs)
    trace = _rigid([("a1", 0, 8, 100, "a"), ("z1", 0, 1, 100, "zz"), ("b1", 0, 1, 100, "b")])
    result = simulate(trace, CLUSTER, SimConfig(use_partitions=False, queues=str(path)))
    jobs = _by_id(result)
    assert jobs["a1"]["status"] == "set_aside"
    assert "more than ClusterQueue 'a' can ever get" in jobs["a1"]["reason"]
    assert jobs["z1"]["status"] == "set_aside"
    assert "LocalQueue 'zz': no such LocalQueue" in jobs["z1"]["reason"]
    assert jobs["b1"]["status"] == "finished"


def test_priority_preemption_within_a_queue_under_a_non_preemptive_policy(tmp_path: Path) -> None:
    docs = documents({"a": {"gpu": 8, "within": "LowerPriority"}})
    docs.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": "urgent"},
            "value": 100,
        }
    )
    path = write(tmp_path / "q.yaml", docs)
    qmap = tmp_path / "map.toml"
    qmap.write_text('default = "a"\n[priority_class.user]\nboss = "urgent"\n')
    trace = Trace.from_columns(
        {
            "job_id": ["low", "high"],
            "submit_time": [0.0, 50.0],
            "num_gpus": [8, 4],
            "duration": [1000.0, 100.0],
            "user": ["intern", "boss"],
        },
        "prio",
    )
    cfg = SimConfig(policy="fifo", use_partitions=False, queues=str(path), queue_map=str(qmap))
    result = simulate(trace, CLUSTER, cfg)
    jobs = _by_id(result)
    assert jobs["high"]["first_start_s"] == 50
    assert jobs["low"]["preemptions"] == 1
    assert result.summary["preemptions_by_cause"]["priority"] == 1


def _elastic(rows: list[tuple[str, float, int, str]]) -> Trace:
    return Trace.from_columns(
        {
            "job_id": [r[0] for r in rows],
            "submit_time": [r[1] for r in rows],
            "num_gpus": [r[2] for r in rows],
            "application": ["cifar10"] * len(rows),
            "batch_size": [128] * len(rows),
            "kind": ["elastic"] * len(rows),
            "vc": [r[3] for r in rows],
        },
        "elastic-tenants",
    )


def test_elastic_jobs_borrow_and_are_reclaimed(tmp_path: Path) -> None:
    trace = _elastic([("b1", 0, 8, "b"), ("a1", 10, 4, "a")])
    result = simulate(trace, CLUSTER, _config(tmp_path), record_segments=True)
    jobs = _by_id(result)
    assert jobs["b1"]["preemptions"] == 1
    assert jobs["a1"]["first_start_s"] == 10
    assert jobs["b1"]["status"] == jobs["a1"]["status"] == "finished"
    assert result.summary["preemptions_by_cause"]["reclaim"] == 1
    assert_no_overcommit(result.segments or [])


def test_allocation_policy_with_queues_is_refused(tmp_path: Path) -> None:
    trace = _elastic([("b1", 0, 4, "b")])
    cfg = SimConfig(policy="pollux", use_partitions=False, queues=_queues(tmp_path))
    with pytest.raises(ValueError, match="--queues: policy 'pollux' allocates GPUs"):
        simulate(trace, CLUSTER, cfg)


def test_runs_without_queues_report_null_tenants() -> None:
    trace = _rigid([("a1", 0, 4, 100, "a")])
    s = simulate(trace, CLUSTER, SimConfig(use_partitions=False)).summary
    assert s["tenants"] is None
    assert s["tenant_fairness_jain"] is None
    assert s["preemptions_by_cause"] is None


@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
def test_admitted_job_not_yet_placed_is_withdrawn_when_evicted(tmp_path: Path, policy: str) -> None:
    # Quotas (16 GPUs) exceed the cluster (8): b1 is admitted by borrowing but cannot be placed
    # while b0 runs; a1 reclaims that quota, so b1 leaves its policy's queue without running.
    docs = documents(
        {"a": {"gpu": 8, "cohort": "pool", "reclaim": "Any"}, "b": {"gpu": 8, "cohort": "pool"}}
    )
    path = write(tmp_path / "q.yaml", docs)
    trace = _rigid([("b0", 0, 8, 1000, "b"), ("b1", 1, 4, 50, "b"), ("a1", 61, 8, 30, "a")])
    cfg = SimConfig(policy=policy, use_partitions=False, queues=str(path))
    result = simulate(trace, CLUSTER, cfg, record_segments=True)
    jobs = _by_id(result)
    assert all(j["status"] == "finished" for j in jobs.values())
    assert jobs["b1"]["preemptions"] == 0
    assert result.summary["preemptions_by_cause"]["reclaim"] == 1
    assert result.summary["tenants"]["b"]["preemptions"]["reclaim"] == 1
    assert min(jobs["a1"]["first_start_s"], jobs["b1"]["first_start_s"]) >= 1000
    if policy == "fifo":
        # b1 is readmitted when b0's quota is free; FIFO runs the older b1 first.
        assert (jobs["b1"]["first_start_s"], jobs["a1"]["first_start_s"]) == (1000, 1050)
    assert_no_overcommit(result.segments or [])


def test_ps_jobs_run_within_their_queue_quota(tmp_path: Path) -> None:
    from dlsched.ps.machines import machines_from_cluster
    from dlsched.ps.workload import build_workload, workload_trace
    from dlsched.sim.simulator import with_task_resources

    machines = tuple(machines_from_cluster(with_task_resources(CLUSTER)))
    jobs = build_workload(8, machines, seed=1, time_scale=0.01, max_s=1800.0)
    path = write(tmp_path / "q.yaml", documents({"a": {"gpu": 3}}))
    qmap = tmp_path / "map.toml"
    qmap.write_text('default = "a"\n')
    cfg = SimConfig(use_partitions=False, queues=str(path), queue_map=str(qmap))
    result = simulate(workload_trace(tuple(jobs)), CLUSTER, cfg, record_segments=True)
    rows = result.jobs.to_pylist()
    # The 8-worker job can never fit the 3-GPU quota; the others all run (8 GPUs at once
    # without queues on this cluster).
    aside = {r["job_id"] for r in rows if r["status"] == "set_aside"}
    assert aside == {r["job_id"] for r in rows if r["gpus"] > 3}
    assert all("can ever get" in r["reason"] for r in rows if r["job_id"] in aside)
    assert all(r["status"] == "finished" for r in rows if r["job_id"] not in aside)
    # At no instant do the queue's jobs hold more GPUs than its nominal quota.
    points = sorted(
        (t, d)
        for s in result.segments or []
        if s.gpu >= 0 and s.end > s.begin
        for t, d in ((s.begin, 1), (s.end, -1))
    )
    held = peak = 0
    for _, d in points:
        held += d
        peak = max(peak, held)
    assert 0 < peak <= 3


def test_a_gpu_share_is_charged_its_fraction_of_the_quota(tmp_path: Path) -> None:
    # Kueue charges a partitioned device in its own units: two half-GPU pods take one GPU of
    # quota together, so a queue with one GPU of quota runs two of them at once, not a third.
    trace = Trace.from_columns(
        {
            "job_id": ["s1", "s2", "s3"],
            "submit_time": [0.0, 0.0, 0.0],
            "num_gpus": [1, 1, 1],
            "gpu_milli": [500, 500, 500],
            "duration": [100.0, 100.0, 100.0],
            "vc": ["a", "a", "a"],
        },
        "shares",
    )
    path = write(tmp_path / "q.yaml", documents({"a": {"gpu": 1}}))
    result = simulate(trace, CLUSTER, SimConfig(use_partitions=False, queues=str(path)))
    starts = {j: r["first_start_s"] for j, r in _by_id(result).items()}
    assert starts == {"s1": 0, "s2": 0, "s3": 100}
    assert result.summary["tenants"]["a"]["used_gpus_avg"] == pytest.approx(
        1.0 * 100 / 200 + 0.5 * 100 / 200
    )
