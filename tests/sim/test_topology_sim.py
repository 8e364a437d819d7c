"""Topology in the simulator: the comm model's slowdown, fragmentation counts, the CLI flags."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.cluster.toml_io import write_cluster_toml
from dlsched.perf.comm import TIER_SLOWDOWN
from dlsched.perf.profiles import profiles_dir
from dlsched.sim.config import SimConfig
from dlsched.trace.schema import Trace
from tests.sim.test_simulator import by_id, make_trace, run


def spine() -> ClusterSpec:
    """Block b0: racks ra (a0, a1) and rb (b0, b1); block b1: rack rc (c0); 4 GPUs a node."""
    layout = [("a0", "ra", "b0"), ("a1", "ra", "b0"), ("b0", "rb", "b0"), ("b1", "rb", "b0")]
    layout.append(("c0", "rc", "b1"))
    return ClusterSpec("spine", tuple(NodeSpec(n, 4, rack=r, block=b) for n, r, b in layout))


def one_at_a_time() -> Trace:
    """Jobs of 4, 8, 12 and 20 GPUs, each alone on the cluster."""
    return make_trace(
        job_id=["node", "rack", "block", "cluster"],
        submit_time=[0.0, 1000.0, 2000.0, 3000.0],
        num_gpus=[4, 8, 12, 20],
        duration=[100.0, 100.0, 100.0, 100.0],
    )


def test_comm_model_slows_jobs_by_the_tier_they_span() -> None:
    config = SimConfig(placement="topology", comm_model="tiers")
    result = run(one_at_a_time(), spine(), config)
    jobs = by_id(result)
    for tier, name in enumerate(("node", "rack", "block", "cluster")):
        assert jobs[name]["jct_s"] == pytest.approx(100.0 * TIER_SLOWDOWN[tier])
        # run_time_s stays the trace's duration (the job's work on one node).
        assert jobs[name]["run_time_s"] == 100.0
    assert TIER_SLOWDOWN[1] < TIER_SLOWDOWN[2] < TIER_SLOWDOWN[3]
    assert result.summary["comm_model"] == "tiers"
    assert result.summary["starts_by_tier"] == {"node": 1, "rack": 1, "block": 1, "cluster": 1}


def test_without_comm_model_placement_does_not_change_run_times() -> None:
    for placement in ("topology", "consolidate"):
        result = run(one_at_a_time(), spine(), SimConfig(placement=placement))
        assert [j["jct_s"] for j in result.jobs.to_pylist()] == [100.0] * 4
        assert result.summary["comm_model"] is None
    assert result.summary["fragmented_jobs"] is None
    assert result.summary["starts_by_tier"] is None


def fragmenting() -> Trace:
    """Four 3-GPU jobs take a node of block b0 each; j0 ends at 50, leaving racks ra with 5
    free GPUs and rb with 2: the 6-GPU job submitted at 60 fits the block but no rack."""
    return make_trace(
        job_id=["j0", "j1", "j2", "j3", "big"],
        submit_time=[0.0, 0.0, 0.0, 0.0, 60.0],
        num_gpus=[3, 3, 3, 3, 6],
        duration=[50.0, 100.0, 100.0, 100.0, 10.0],
        vc=["p", "p", "p", "p", "p"],
    )


def b0_only() -> ClusterSpec:
    nodes = [
        NodeSpec(n.name, n.gpus, partition="p", rack=n.rack, block=n.block) for n in spine().nodes
    ]
    return ClusterSpec("b0", tuple(nodes[:4]))


def test_required_rack_waits_and_counts_the_job_as_fragmented() -> None:
    required = SimConfig(placement="topology", placement_options={"required": "rack"})
    result = run(fragmenting(), b0_only(), required)
    assert by_id(result)["big"]["first_start_s"] == 100.0
    assert result.summary["fragmented_jobs"] == 1
    preferred = run(fragmenting(), b0_only(), SimConfig(placement="topology"))
    assert by_id(preferred)["big"]["first_start_s"] == 60.0
    assert preferred.summary["fragmented_jobs"] == 0
    assert preferred.summary["starts_by_tier"] == {"node": 4, "rack": 0, "block": 1, "cluster": 0}


def test_job_larger_than_its_required_tier_is_set_aside() -> None:
    trace = make_trace(job_id=["x"], submit_time=[0.0], num_gpus=[12], duration=[5.0])
    config = SimConfig(placement="topology", placement_options={"required": "rack"})
    jobs = by_id(run(trace, spine(), config))
    assert jobs["x"]["status"] == "set_aside"
    assert "placement 'topology' finds no room for 12 GPUs" in jobs["x"]["reason"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--comm-model", "fat-tree"], "--comm-model: expected one of tiers, got 'fat-tree'"),
        (["--placement-opt", "required=rack"], "placement 'consolidate' takes no options"),
        (
            ["--placement", "topology", "--placement-opt", "required=aisle"],
            "--placement-opt required: expected one of node, rack, block, got 'aisle'",
        ),
    ],
)
def test_cli_refuses_what_a_run_cannot_honour(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    cluster = write_cluster_toml(spine(), tmp_path / "spine.toml")
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\n1,0,8,100\n")
    out = tmp_path / "run"
    args = ["simulate", "--trace", str(trace), "--cluster", str(cluster), "--out", str(out)]
    result = CliRunner().invoke(app, [*args, *flags])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not out.exists()


def test_cli_writes_topology_figures(tmp_path: Path) -> None:
    cluster = write_cluster_toml(spine(), tmp_path / "spine.toml")
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\n1,0,8,100\n")
    out = tmp_path / "run"
    args = ["simulate", "--trace", str(trace), "--cluster", str(cluster), "--out", str(out)]
    flags = ["--placement", "topology", "--placement-opt", "required=rack", "--comm-model", "tiers"]
    result = CliRunner().invoke(app, [*args, *flags])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["starts_by_tier"]["rack"] == 1
    assert summary["fragmented_jobs"] == 0
    assert summary["avg_jct_s"] == pytest.approx(100.0 * TIER_SLOWDOWN[1])


def pollux_multi_node_ratio(app: str) -> float:
    """The measured factor recomputed from the raw profile file: multi-node step time over
    one-node step time at equal replicas and local batch, averaged over matched rows."""
    path = profiles_dir() / "pollux" / app / "placements.csv"
    rows = list(csv.DictReader(path.open()))
    one = {
        (int(r["placement"]), r["local_bsz"]): float(r["step_time"])
        for r in rows
        if len(r["placement"]) == 1
    }
    ratios = []
    for r in rows:
        replicas = sum(int(c) for c in r["placement"])
        if len(r["placement"]) > 1 and (replicas, r["local_bsz"]) in one:
            ratios.append(float(r["step_time"]) / one[(replicas, r["local_bsz"])])
    return sum(ratios) / len(ratios)


def test_profiled_applications_use_their_measured_multi_node_slowdown() -> None:
    trace = make_trace(
        job_id=["bert", "other", "bert-block"],
        submit_time=[0.0, 1000.0, 10_000.0],
        num_gpus=[8, 8, 12],
        duration=[100.0, 100.0, 100.0],
        application=["bert", "resnet", "bert"],
    )
    result = run(trace, spine(), SimConfig(placement="topology", comm_model="tiers"))
    jobs = by_id(result)
    measured = pollux_multi_node_ratio("bert")
    assert measured > 1.2
    assert jobs["bert"]["jct_s"] == pytest.approx(100.0 * measured)
    assert jobs["other"]["jct_s"] == pytest.approx(100.0 * TIER_SLOWDOWN[1])
    block = measured * TIER_SLOWDOWN[2] / TIER_SLOWDOWN[1]
    assert jobs["bert-block"]["jct_s"] == pytest.approx(100.0 * block)
