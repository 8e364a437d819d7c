"""Unit tests of the simulator on small traces whose outcome is worked out by hand."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.metrics.jobs import JOBS_SCHEMA
from dlsched.metrics.timeline import TIMELINE_SCHEMA
from dlsched.sim.config import CheckpointConfig, FaultConfig, SimConfig
from dlsched.sim.simulator import RunResult, simulate
from dlsched.trace.schema import Trace
from tests.sim.conftest import assert_no_overcommit


def make_trace(**columns: list[Any]) -> Trace:
    return Trace.from_columns(dict(columns), "unit")


def run(trace: Trace, cluster: ClusterSpec, config: SimConfig | None = None) -> RunResult:
    result = simulate(trace, cluster, config or SimConfig(), record_segments=True)
    assert result.segments is not None
    assert_no_overcommit(result.segments)
    return result


def by_id(result: RunResult) -> dict[str, dict[str, Any]]:
    return {r["job_id"]: r for r in result.jobs.to_pylist()}


def nodes_of(result: RunResult) -> dict[str, set[int]]:
    """The nodes each job held at some point (by job id)."""
    assert result.segments is not None
    ids = result.jobs.column("job_id").to_pylist()
    out: dict[str, set[int]] = defaultdict(set)
    for s in result.segments:
        out[ids[s.row]].add(s.node)
    return out


def gpus_of(result: RunResult) -> dict[str, set[tuple[int, int]]]:
    """The (node, GPU) pairs each job held at some point (by job id)."""
    assert result.segments is not None
    ids = result.jobs.column("job_id").to_pylist()
    out: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for s in result.segments:
        out[ids[s.row]].add((s.node, s.gpu))
    return out


# ---- partitions ------------------------------------------------------------------------------

PARTS = ClusterSpec("parts", (NodeSpec("a0", 4, partition="a"), NodeSpec("b0", 4, partition="b")))


def partition_trace() -> Trace:
    return make_trace(
        job_id=["j0", "j1", "j2", "j3"],
        submit_time=[0.0, 0.0, 0.0, 0.0],
        num_gpus=[4, 4, 1, 2],
        duration=[100.0, 100.0, 10.0, 50.0],
        vc=["a", "a", "c", "b"],
    )


def test_jobs_run_only_in_their_partition_and_unknown_vcs_are_set_aside() -> None:
    result = run(partition_trace(), PARTS)
    jobs = by_id(result)
    # j1 waits for j0 although b0 is idle: partition a has only a0.
    assert (jobs["j0"]["first_start_s"], jobs["j0"]["end_s"]) == (0.0, 100.0)
    assert (jobs["j1"]["first_start_s"], jobs["j1"]["end_s"]) == (100.0, 200.0)
    assert (jobs["j3"]["first_start_s"], jobs["j3"]["end_s"]) == (0.0, 50.0)
    nodes = nodes_of(result)
    assert nodes["j0"] == {0} and nodes["j1"] == {0} and nodes["j3"] == {1}
    assert [jobs[j]["partition"] for j in ("j0", "j1", "j3")] == ["a", "a", "b"]
    reason = "partition 'c' not in cluster 'parts'"
    assert jobs["j2"]["status"] == "set_aside" and jobs["j2"]["reason"] == reason
    assert jobs["j2"]["partition"] is None and "j2" not in nodes
    summary = result.summary
    assert summary["jobs"] == 3 and summary["jobs_in_trace"] == 4
    assert summary["jobs_set_aside"] == 1
    assert summary["set_aside_reasons"] == {reason: 1}


def test_without_partitions_all_jobs_share_all_nodes() -> None:
    result = run(partition_trace(), PARTS, SimConfig(use_partitions=False))
    jobs = by_id(result)
    assert all(r["status"] == "finished" for r in jobs.values())
    assert {r["partition"] for r in jobs.values()} == {"*"}
    # j0 -> a0, j1 -> b0 at once; j2 (1 GPU) and j3 wait for a free GPU (FIFO, head-of-line).
    # At 100 both nodes empty: j2 -> a0 (tie, lowest index), j3 -> a0 (best fit, 3 free).
    assert jobs["j1"]["first_start_s"] == 0.0 and nodes_of(result)["j1"] == {1}
    assert (jobs["j2"]["first_start_s"], jobs["j2"]["end_s"]) == (100.0, 110.0)
    assert (jobs["j3"]["first_start_s"], jobs["j3"]["end_s"]) == (100.0, 150.0)
    assert nodes_of(result)["j3"] == {0}
    assert result.summary["jobs_set_aside"] == 0 and result.summary["set_aside_reasons"] == {}


def test_job_without_vc_on_multi_partition_cluster_is_set_aside() -> None:
    trace = make_trace(
        job_id=["x", "y"], submit_time=[0.0, 1.0], num_gpus=[1, 1], duration=[5.0, 5.0],
        vc=[None, "b"],
    )  # fmt: skip
    result = run(trace, PARTS)
    jobs = by_id(result)
    assert jobs["x"]["status"] == "set_aside"
    assert "names no partition" in jobs["x"]["reason"]
    assert "run without partitions" in jobs["x"]["reason"]
    assert jobs["y"]["status"] == "finished"
    assert result.summary["jobs_set_aside"] == 1
    pooled = by_id(run(trace, PARTS, SimConfig(use_partitions=False)))
    assert pooled["x"]["status"] == "finished"


def test_single_partition_cluster_sets_aside_other_named_vcs_but_accepts_no_vc() -> None:
    cluster = ClusterSpec("one", (NodeSpec("n0", 2),))
    trace = make_trace(
        job_id=["named", "none", "default"], submit_time=[0.0, 0.0, 0.0], num_gpus=[1, 1, 1],
        duration=[5.0, 5.0, 5.0], vc=["zz", None, "default"],
    )  # fmt: skip
    jobs = by_id(run(trace, cluster))
    assert jobs["named"]["reason"] == "partition 'zz' not in cluster 'one'"
    assert jobs["none"]["status"] == "finished" and jobs["default"]["status"] == "finished"


def test_job_larger_than_its_partition_is_set_aside_with_reason() -> None:
    trace = make_trace(
        job_id=["big", "ok"], submit_time=[0.0, 0.0], num_gpus=[5, 4], duration=[10.0, 10.0],
        vc=["a", "a"],
    )  # fmt: skip
    result = run(trace, PARTS)
    jobs = by_id(result)
    assert jobs["big"]["status"] == "set_aside"
    assert jobs["big"]["reason"] == "needs 5 GPUs but pool 'a' has 4"
    assert jobs["big"]["gpus"] == 5 and jobs["big"]["submit_s"] == 0.0
    assert jobs["ok"]["status"] == "finished"
    assert result.summary["set_aside_reasons"] == {"needs 5 GPUs but pool 'a' has 4": 1}
    # Pooled, the two nodes hold 8 GPUs: the 5-GPU job runs across both.
    pooled = run(trace, PARTS, SimConfig(use_partitions=False))
    assert by_id(pooled)["big"]["status"] == "finished"
    assert nodes_of(pooled)["big"] == {0, 1}


def test_job_without_duration_is_set_aside_with_reason() -> None:
    trace = make_trace(
        job_id=["nodur", "ok"], submit_time=[0.0, 2.0], num_gpus=[1, 1], duration=[None, 3.0]
    )
    result = run(trace, ClusterSpec("c", (NodeSpec("n0", 1),)))
    jobs = by_id(result)
    reason = "no run time or work: replay needs a duration (or a performance model)"
    assert jobs["nodur"]["status"] == "set_aside" and jobs["nodur"]["reason"] == reason
    assert (jobs["ok"]["first_start_s"], jobs["ok"]["end_s"]) == (2.0, 5.0)
    assert result.summary["set_aside_reasons"] == {reason: 1}
    assert result.summary["makespan_s"] == 3.0  # from the first *finished* submission


def test_empty_trace_gives_an_empty_valid_run() -> None:
    trace = make_trace(job_id=[], submit_time=[], num_gpus=[])
    result = run(trace, PARTS)
    assert result.jobs.schema.equals(JOBS_SCHEMA)
    assert result.jobs.num_rows == 0
    assert result.timeline.schema.equals(TIMELINE_SCHEMA)
    s = result.summary
    assert s["jobs"] == 0 and s["jobs_in_trace"] == 0 and s["jobs_set_aside"] == 0
    assert s["set_aside_reasons"] == {}
    for key in ("avg_jct_s", "median_jct_s", "p95_jct_s", "avg_queue_s", "avg_slowdown"):
        assert s[key] is None, key
    assert s["gpu_utilization"] is None
    assert s["makespan_s"] == 0.0 and s["failures"] is None and s["gpu_seconds"] == 0.0
    assert result.segments == []


# ---- node faults -----------------------------------------------------------------------------


def write_outages(tmp_path: Path, rows: list[tuple[str, float, float]]) -> str:
    path = tmp_path / "faults.csv"
    text = "node,fail_time,repair_time\n" + "".join(f"{n},{f},{r}\n" for n, f, r in rows)
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("interval", "end", "lost_s"),
    [
        # Checkpoints at 100, 200, 300: the failure at 350 loses 50 s; 700 s left after the
        # repair at 500 and the 30-s restore stall (4 GPUs): end = 500 + 30 + 700.
        (100.0, 1230.0, 50.0),
        # No checkpointing: the whole run (350 s) is lost; end = 500 + 30 + 1000.
        (0.0, 1530.0, 350.0),
        # First checkpoint would be at 400, after the failure: same as none.
        (400.0, 1530.0, 350.0),
    ],
)
def test_failed_node_restarts_job_from_last_checkpoint(
    tmp_path: Path, interval: float, end: float, lost_s: float
) -> None:
    cluster = ClusterSpec("one", (NodeSpec("n0", 4),))
    trace = make_trace(job_id=["j"], submit_time=[0.0], num_gpus=[4], duration=[1000.0])
    config = SimConfig(
        faults=FaultConfig(file=write_outages(tmp_path, [("n0", 350.0, 500.0)])),
        checkpoint=CheckpointConfig(interval_s=interval),
    )
    result = run(trace, cluster, config)
    job = by_id(result)["j"]
    assert job["first_start_s"] == 0.0 and job["end_s"] == end
    assert job["restarts"] == 1 and job["preemptions"] == 0
    assert job["lost_gpu_seconds"] == 4 * lost_s
    # GPUs held: 350 s before the failure, then from the repair to the end (stall included).
    assert job["gpu_seconds"] == 4 * (350 + (end - 500))
    s = result.summary
    assert s["failures"] == 1 and s["restarts"] == 1 and s["lost_gpu_seconds"] == 4 * lost_s
    # While the node is down (350..500) the timeline shows no healthy and no busy GPU.
    tl = {r["time_s"]: r for r in result.timeline.to_pylist()}
    for t in (360.0, 420.0, 480.0):
        assert (tl[t]["up_gpus"], tl[t]["busy_gpus"], tl[t]["pending_jobs"]) == (0, 0.0, 1)
    assert (tl[540.0]["up_gpus"], tl[540.0]["busy_gpus"], tl[540.0]["running_jobs"]) == (4, 4.0, 1)


def test_job_moves_to_another_node_and_checkpoints_count_from_end_of_stall(
    tmp_path: Path,
) -> None:
    # n0 fails at 350: checkpoints at 100, 200, 300 -> 300 s saved, 50 s lost. The job moves at
    # once to n1, holds it from 350, progresses from 380 (30-s stall): it would end at 1080.
    # n1 fails at 630: 250 s since the stall ended -> checkpoints at 480 and 580 -> 500 s saved,
    # 50 s lost. n0 is back since 500: the job resumes there at 630, progresses from 660, and
    # ends at 660 + 500 = 1160.
    cluster = ClusterSpec("two", (NodeSpec("n0", 4), NodeSpec("n1", 4)))
    trace = make_trace(job_id=["j"], submit_time=[0.0], num_gpus=[4], duration=[1000.0])
    outages = [("n0", 350.0, 500.0), ("n1", 630.0, 5000.0)]
    config = SimConfig(
        faults=FaultConfig(file=write_outages(tmp_path, outages)),
        checkpoint=CheckpointConfig(interval_s=100.0),
    )
    result = run(trace, cluster, config)
    job = by_id(result)["j"]
    assert job["end_s"] == 1160.0
    assert job["restarts"] == 2
    assert job["lost_gpu_seconds"] == 4 * (50 + 50)
    assert job["gpu_seconds"] == 4 * 1160
    assert result.summary["failures"] == 2
    segs = sorted((s.begin, s.end, s.node) for s in result.segments or [] if s.gpu == 0)
    assert segs == [(0.0, 350.0, 0), (350.0, 630.0, 1), (630.0, 1160.0, 0)]


def test_unknown_node_in_fault_file_is_an_error(tmp_path: Path) -> None:
    cluster = ClusterSpec("one", (NodeSpec("n0", 4),))
    trace = make_trace(job_id=["j"], submit_time=[0.0], num_gpus=[1], duration=[10.0])
    config = SimConfig(faults=FaultConfig(file=write_outages(tmp_path, [("zz", 1.0, 2.0)])))
    with pytest.raises(ValueError, match=r"faults\.csv:2: node: unknown node 'zz'"):
        simulate(trace, cluster, config)


def test_overlapping_outages_keep_the_node_down_for_their_union(tmp_path: Path) -> None:
    # n0 is listed down over [100, 300) and [200, 250): it must not run anything before 300.
    cluster = ClusterSpec("one", (NodeSpec("n0", 1),))
    trace = make_trace(job_id=["j"], submit_time=[150.0], num_gpus=[1], duration=[10.0])
    outages = [("n0", 100.0, 300.0), ("n0", 200.0, 250.0)]
    config = SimConfig(faults=FaultConfig(file=write_outages(tmp_path, outages)))
    try:
        result = simulate(trace, cluster, config)
    except ValueError:
        return  # rejecting overlapping outages would be a fix as well
    assert by_id(result)["j"]["first_start_s"] == 300.0


def mtbf_run(seed: int) -> RunResult:
    cluster = ClusterSpec("four", tuple(NodeSpec(f"n{i}", 4) for i in range(4)))
    n = 40
    trace = make_trace(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=[float(60 * i) for i in range(n)],
        num_gpus=[(1, 2, 4, 8)[i % 4] for i in range(n)],
        duration=[float(500 + 97 * i) for i in range(n)],
    )
    config = SimConfig(
        seed=seed,
        faults=FaultConfig(mtbf_s=3000.0, mttr_s=300.0),
        checkpoint=CheckpointConfig(interval_s=200.0),
    )
    return run(trace, cluster, config)


def test_mtbf_faults_are_deterministic_under_a_seed() -> None:
    a, b = mtbf_run(0), mtbf_run(0)
    assert a.summary["failures"] > 0 and a.summary["restarts"] > 0
    assert a.summary["lost_gpu_seconds"] > 0
    assert a.jobs.to_pylist() == b.jobs.to_pylist()
    assert a.timeline.equals(b.timeline)
    assert a.summary["failures"] == b.summary["failures"]
    others = [mtbf_run(seed) for seed in (1, 2, 3)]
    assert any(o.jobs.column("end_s") != a.jobs.column("end_s") for o in others)
    assert all(o.summary["jobs"] == 40 for o in others)


# ---- timeline --------------------------------------------------------------------------------


def test_timeline_samples_per_minute_match_hand_computation() -> None:
    # One node of 4 GPUs. J0 (2 GPUs, 150 s) runs [0, 150). J1 (4 GPUs, 100 s) arrives at 30,
    # waits, runs [150, 250). Samples at k*60 s hold the state after the last event at or
    # before them: t=0 busy 2; 60, 120 busy 2 with J1 pending (4 GPUs); 180, 240 busy 4;
    # 300 idle.
    cluster = ClusterSpec("one", (NodeSpec("n0", 4),))
    trace = make_trace(
        job_id=["J0", "J1"], submit_time=[0.0, 30.0], num_gpus=[2, 4], duration=[150.0, 100.0]
    )
    tl = run(trace, cluster).timeline.to_pydict()
    assert tl["time_s"] == [0.0, 60.0, 120.0, 180.0, 240.0, 300.0]
    assert tl["partition"] == ["default"] * 6
    assert tl["busy_gpus"] == [2.0, 2.0, 2.0, 4.0, 4.0, 0.0]
    assert tl["idle_gpus"] == [2.0, 2.0, 2.0, 0.0, 0.0, 4.0]
    assert tl["running_jobs"] == [1, 1, 1, 1, 1, 0]
    assert tl["pending_jobs"] == [0, 1, 1, 0, 0, 0]
    assert tl["pending_gpus"] == [0, 4, 4, 0, 0, 0]
    assert tl["total_gpus"] == [4] * 6 and tl["up_gpus"] == [4] * 6


def test_timeline_has_one_series_per_partition() -> None:
    tl = run(partition_trace(), PARTS).timeline.to_pydict()
    rows = list(zip(tl["time_s"], tl["partition"], tl["busy_gpus"], strict=True))
    # At t=60: a0 busy with j0 (4 GPUs); b0 idle again (j3 ended at 50).
    assert (60.0, "a", 4.0) in rows and (60.0, "b", 0.0) in rows
    assert (0.0, "b", 2.0) in rows


# ---- fractional GPUs -------------------------------------------------------------------------


def test_four_quarter_gpu_jobs_share_one_gpu() -> None:
    cluster = ClusterSpec("one", (NodeSpec("n0", 2),))
    trace = make_trace(
        job_id=["q0", "q1", "q2", "q3"], submit_time=[0.0] * 4, num_gpus=[1] * 4,
        duration=[100.0] * 4, gpu_milli=[250] * 4,
    )  # fmt: skip
    result = run(trace, cluster)
    jobs = by_id(result)
    for j in ("q0", "q1", "q2", "q3"):
        assert (jobs[j]["first_start_s"], jobs[j]["end_s"]) == (0.0, 100.0)
        assert jobs[j]["gpu_milli"] == 250
        assert jobs[j]["gpu_seconds"] == 25.0
    assert set().union(*gpus_of(result).values()) == {(0, 0)}
    assert result.timeline.to_pydict()["busy_gpus"][0] == 1.0


def test_shares_that_do_not_add_up_to_one_gpu_are_not_packed_together() -> None:
    trace = make_trace(
        job_id=["big", "half"], submit_time=[0.0, 0.0], num_gpus=[1, 1],
        duration=[100.0, 50.0], gpu_milli=[600, 500],
    )  # fmt: skip
    # One GPU: 600 + 500 > 1000, so "half" waits for "big".
    one = run(trace, ClusterSpec("one", (NodeSpec("n0", 1),)))
    jobs = by_id(one)
    assert (jobs["half"]["first_start_s"], jobs["half"]["end_s"]) == (100.0, 150.0)
    # Two GPUs: both start at once, on different GPUs.
    two = run(trace, ClusterSpec("two", (NodeSpec("n0", 2),)))
    jobs = by_id(two)
    assert jobs["half"]["first_start_s"] == 0.0
    gpus = gpus_of(two)
    assert gpus["big"] == {(0, 0)} and gpus["half"] == {(0, 1)}
    assert two.timeline.to_pydict()["busy_gpus"][0] == pytest.approx(1.1)


# ---- CPU and memory --------------------------------------------------------------------------


def test_cpu_limit_makes_a_job_wait_although_gpus_are_free() -> None:
    # One node, 4 GPUs, 8 CPUs. A takes 1 GPU and 6 CPUs; B (1 GPU, 4 CPUs) waits for A.
    cluster = ClusterSpec("one", (NodeSpec("n0", 4, cpus=8.0, memory_mib=1000.0),))
    trace = make_trace(
        job_id=["A", "B", "C"], submit_time=[0.0, 0.0, 1.0], num_gpus=[1, 1, 1],
        duration=[100.0, 50.0, 10.0], num_cpus=[6.0, 4.0, 9.0],
    )  # fmt: skip
    result = run(trace, cluster)
    jobs = by_id(result)
    assert (jobs["A"]["first_start_s"], jobs["A"]["end_s"]) == (0.0, 100.0)
    assert (jobs["B"]["first_start_s"], jobs["B"]["end_s"]) == (100.0, 150.0)
    # C can never fit: more CPUs than the node has.
    assert jobs["C"]["status"] == "set_aside"
    assert jobs["C"]["reason"] == (
        "needs 9 CPUs and 0 MiB on one node; no node in pool 'default' has that much"
    )


def test_memory_limit_makes_a_job_wait() -> None:
    cluster = ClusterSpec("one", (NodeSpec("n0", 4, cpus=8.0, memory_mib=1000.0),))
    trace = make_trace(
        job_id=["A", "B"], submit_time=[0.0, 0.0], num_gpus=[1, 1], duration=[100.0, 50.0],
        memory_mib=[600.0, 600.0],
    )  # fmt: skip
    jobs = by_id(run(trace, cluster))
    assert jobs["B"]["first_start_s"] == 100.0


def test_best_fit_skips_a_node_without_enough_cpus() -> None:
    # n0 and n1: 4 GPUs, 8 CPUs each. A (1 GPU, 6 CPUs) -> n0 (tie, lowest index). B (1 GPU,
    # 4 CPUs): by GPUs n0 is the best fit (3 free) but it has 2 CPUs left, so B goes to n1.
    cluster = ClusterSpec("two", (NodeSpec("n0", 4, cpus=8.0), NodeSpec("n1", 4, cpus=8.0)))
    trace = make_trace(
        job_id=["A", "B"], submit_time=[0.0, 0.0], num_gpus=[1, 1], duration=[100.0, 50.0],
        num_cpus=[6.0, 4.0],
    )  # fmt: skip
    result = run(trace, cluster)
    jobs = by_id(result)
    assert jobs["B"]["first_start_s"] == 0.0
    assert nodes_of(result) == {"A": {0}, "B": {1}}


# ---- backfill with shares and CPU-only jobs, and jobs that can never be placed ----------------


def test_backfill_starts_a_share_that_fits_beside_a_blocked_head() -> None:
    # One GPU. A holds half of it for 100 s; B wants the whole GPU and blocks the head; C (a
    # quarter share) fits on the free half. With backfill C starts at once, [0, 10).
    cluster = ClusterSpec("one", (NodeSpec("n0", 1),))
    trace = make_trace(
        job_id=["A", "B", "C"], submit_time=[0.0] * 3, num_gpus=[1] * 3,
        duration=[100.0, 10.0, 10.0], gpu_milli=[500, None, 250],
    )  # fmt: skip
    blocking = by_id(run(trace, cluster))
    assert blocking["C"]["first_start_s"] == 110.0  # behind B: [100, 110)
    backfill = run(trace, cluster, SimConfig(policy_options={"allow_backfill": "true"}))
    jobs = by_id(backfill)
    assert (jobs["C"]["first_start_s"], jobs["C"]["end_s"]) == (0.0, 10.0)
    assert (jobs["B"]["first_start_s"], jobs["B"]["end_s"]) == (100.0, 110.0)


def test_backfill_starts_a_cpu_only_job_while_all_gpus_are_busy() -> None:
    # One node: 1 GPU, 8 CPUs. A holds the GPU for 100 s; B (1 GPU) blocks; C needs no GPU,
    # 1 CPU: with backfill it should start at 0, [0, 10).
    cluster = ClusterSpec("one", (NodeSpec("n0", 1, cpus=8.0),))
    trace = make_trace(
        job_id=["A", "B", "C"], submit_time=[0.0] * 3, num_gpus=[1, 1, 0],
        duration=[100.0, 10.0, 10.0], num_cpus=[1.0, 1.0, 1.0],
    )  # fmt: skip
    jobs = by_id(run(trace, cluster, SimConfig(policy_options={"allow_backfill": "true"})))
    assert (jobs["C"]["first_start_s"], jobs["C"]["end_s"]) == (0.0, 10.0)


def test_job_needing_more_cpus_than_the_partition_is_set_aside() -> None:
    cluster = ClusterSpec("two", (NodeSpec("n0", 4, cpus=8.0), NodeSpec("n1", 4, cpus=8.0)))
    trace = make_trace(
        job_id=["big", "ok"], submit_time=[0.0, 0.0], num_gpus=[8, 1],
        duration=[100.0, 10.0], num_cpus=[100.0, 1.0],
    )  # fmt: skip
    jobs = by_id(run(trace, cluster))
    assert jobs["big"]["status"] == "set_aside" and "CPUs" in jobs["big"]["reason"]
    assert jobs["ok"]["status"] == "finished"
