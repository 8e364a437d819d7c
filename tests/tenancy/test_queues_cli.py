"""``dlsched simulate --queues``: the bundled Philly cohort manifests run; bad manifests, a
queue map without queues and an allocation policy are refused with exit 2 and one line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from dlsched.cli.main import app
from dlsched.trace.bundled import bundled_trace_path

PHILLY_QUEUES = (
    Path(__file__).parents[2] / "src" / "dlsched" / "data" / "queues" / "philly-cohort.yaml"
)
TRACE = bundled_trace_path("philly_jobs_2000")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_philly_vcs_as_a_cohort(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = invoke(
        "simulate", "--trace", TRACE, "--cluster", "philly-vcs", "--no-partitions",
        "--queues", PHILLY_QUEUES, "--out", out, "--no-progress",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    tenants = summary["tenants"]
    assert len(tenants) == 11
    assert tenants["vc-6214e9"]["nominal_gpus"] == 512
    assert sum(t["jobs"] for t in tenants.values()) == summary["jobs"]
    assert 0 < summary["tenant_fairness_jain"] <= 1
    config = json.loads((out / "config.json").read_text())
    assert config["sim"]["queues"] == str(PHILLY_QUEUES)


def test_bad_manifest_exits_2_naming_document_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\n"
        "spec: {queueingStrategy: Sometimes}\n"
    )
    r = invoke(
        "simulate", "--trace", TRACE, "--cluster", "philly-vcs", "--queues", bad,
        "--out", tmp_path / "run", "--no-progress",
    )  # fmt: skip
    assert r.exit_code == 2
    assert "document 1 (ClusterQueue 'a'): spec.queueingStrategy: expected one of" in r.output
    assert "Traceback" not in r.output
    assert not (tmp_path / "run").exists()


def test_queue_map_naming_a_missing_queue_exits_2(tmp_path: Path) -> None:
    qmap = tmp_path / "map.toml"
    qmap.write_text('[vc]\n6214e9 = "philly/nope"\n')
    r = invoke(
        "simulate", "--trace", TRACE, "--cluster", "philly-vcs", "--queues", PHILLY_QUEUES,
        "--queue-map", qmap, "--out", tmp_path / "run", "--no-progress",
    )  # fmt: skip
    assert r.exit_code == 2
    assert f"{qmap}: [vc] 6214e9: no LocalQueue 'philly/nope'" in r.output


def test_queue_map_without_queues_exits_2(tmp_path: Path) -> None:
    qmap = tmp_path / "map.toml"
    qmap.write_text('default = "x"\n')
    r = invoke(
        "simulate", "--trace", TRACE, "--cluster", "philly-vcs", "--queue-map", qmap,
        "--out", tmp_path / "run", "--no-progress",
    )  # fmt: skip
    assert r.exit_code == 2
    assert "--queue-map maps jobs to the LocalQueues of --queues" in r.output


def test_allocation_policy_with_queues_exits_2(tmp_path: Path) -> None:
    r = invoke(
        "simulate", "--trace", bundled_trace_path("pollux_workload-6"), "--cluster", "16x4",
        "--policy", "pollux", "--queues", PHILLY_QUEUES, "--out", tmp_path / "run",
        "--no-progress",
    )  # fmt: skip
    assert r.exit_code == 2
    assert "--queues: policy 'pollux' allocates GPUs" in r.output


def test_compare_shows_tenant_figures(tmp_path: Path) -> None:
    common = ("--trace", TRACE, "--cluster", "philly-vcs", "--no-progress")
    assert invoke("simulate", *common, "--out", tmp_path / "vcs").exit_code == 0
    r = invoke(
        "simulate", *common, "--no-partitions", "--queues", PHILLY_QUEUES,
        "--out", tmp_path / "cohort",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    r = invoke("compare", tmp_path / "vcs", tmp_path / "cohort")
    assert r.exit_code == 0, r.output
    assert "Jain's index (tenants)" in r.output
    assert "preemptions: reclaim" in r.output
    line = next(x for x in r.output.splitlines() if "vc-6214e9: avg JCT" in x)
    assert "-" in line.split("│")[2]  # the run without queues has no tenants
