"""The Ray back end on a real Ray cluster: a head and two workers with different fake GPU counts
and types (v100-000: 4 × v100, k80-000: 2 × k80), in fresh network and PID namespaces with
loopback only. One cluster serves the module; each test runs a driver program inside it
(:mod:`tests.backends.ray_scenarios`) and checks what the driver and the jobs themselves saw
(the jobs print their ``DLSCHED_NODE`` and ``CUDA_VISIBLE_DEVICES``). The node-loss test removes
a worker, so it runs last."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dlsched.backends.job_env import allowed
from dlsched.cluster.parse import resolve_cluster
from dlsched.testing.ray_cluster import RayCluster, RayNode, have_ray_and_namespaces

pytestmark = [pytest.mark.ray, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    reason = have_ray_and_namespaces()
    if reason is not None:
        pytest.fail(f"the Ray tests cannot run here: {reason}")
    nodes = [RayNode("v100-000", 4, "v100"), RayNode("k80-000", 2, "k80")]
    with RayCluster(RayNode("head", 0), nodes) as c:
        yield c


def drive(
    cluster: RayCluster,
    scenario: str,
    root: Path,
    instance: str = "",
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    args = [sys.executable, "-m", "tests.backends.ray_scenarios", scenario, str(root)]
    result = cluster.run([*args, instance or scenario], env=env, cwd=REPO, timeout_s=180)
    assert result.returncode == 0, result.stderr[-4000:]
    out: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return out


def job_fields(line: str) -> dict[str, Any]:
    """A job's report line (``node=N cuda=0,1 all=N:0,1;M:0``) as node, cuda (list) and all
    (node → list)."""
    parts = dict(part.split("=", 1) for part in line.split(" "))
    every = dict(item.split(":", 1) for item in parts["all"].split(";"))
    return {
        "node": parts["node"],
        "cuda": parts["cuda"].split(","),
        "all": {node: gpus.split(",") for node, gpus in every.items()},
    }


def test_jobs_land_on_their_planned_nodes_with_rays_gpus_and_relaunch_is_idempotent(
    cluster: RayCluster, tmp_path: Path
) -> None:
    seen = drive(cluster, "placement", tmp_path)
    assert seen["inventory"] == [["head", 0, "gpu"], ["k80-000", 2, "k80"], ["v100-000", 4, "v100"]]
    assert {rid: o["exit_code"] for rid, o in seen["finals"].items()} == {
        "a-0": 0,
        "b-0": 0,
        "c-0": 0,
    }
    logs = seen["logs"]
    # Each job ran exactly once (relaunching a running or exited request does nothing) ...
    assert all(len(lines) == 1 for lines in logs.values()), logs
    a, b, c = (job_fields(logs[job][0]) for job in "abc")
    # ... on the planned node, with as many of Ray's GPUs as planned, none held by two jobs.
    assert (a["node"], len(a["cuda"])) == ("v100-000", 2)
    assert (b["node"], len(b["cuda"])) == ("k80-000", 1)
    assert (c["node"], len(c["cuda"])) == ("v100-000", 1)
    assert not set(a["cuda"]) & set(c["cuda"])
    assert sorted(c["all"]) == ["k80-000", "v100-000"]
    assert c["all"]["v100-000"] == c["cuda"] and len(c["all"]["k80-000"]) == 1
    assert set(seen["again"].values()) == {"EXITED"}
    assert seen["after_forget"]["exit_code"] == 0  # from the exit file: not run again
    assert seen["errors"] == []


@pytest.mark.long
def test_a_job_gets_only_the_allowed_environment_not_the_ray_workers(
    cluster: RayCluster, tmp_path: Path
) -> None:
    seen = drive(cluster, "environment", tmp_path)
    contract = {"HOME", "PWD", "SHLVL", "OLDPWD", "_", "CUDA_VISIBLE_DEVICES"}
    leaked = [
        n for n in seen["names"] if not (allowed(n) or n in contract or n.startswith("DLSCHED_"))
    ]
    # The workers run with the test's environment (PYTHONPATH, RAY_*, PYTEST_*): none reaches it.
    assert leaked == [] and seen["home"] == seen["workdir"]


def test_the_cluster_file_is_written_from_rays_inventory(
    cluster: RayCluster, tmp_path: Path
) -> None:
    out = tmp_path / "cluster.toml"
    result = cluster.run([sys.executable, "-m", "dlsched.backends.ray_inventory", str(out)])
    assert result.returncode == 0, result.stderr[-3000:]
    spec = resolve_cluster(str(out))
    assert [(n.name, n.gpus, n.gpu_type) for n in spec.nodes] == [
        ("k80-000", 2, "k80"),
        ("v100-000", 4, "v100"),
    ]


def test_graceful_preemption_checkpoints_and_a_stubborn_job_is_killed(
    cluster: RayCluster, tmp_path: Path
) -> None:
    seen = drive(cluster, "preemption", tmp_path)
    assert seen["p"]["exit_code"] == 75
    assert seen["checkpoint"] == "saved"
    assert seen["logs"]["p"][-1] == "saved"  # the resumed attempt read the checkpoint
    resumed = job_fields(seen["logs"]["p"][-2])
    assert (resumed["node"], sorted(resumed["cuda"])) == ("v100-000", ["0", "1", "2", "3"])
    assert seen["p1"]["exit_code"] == 0
    assert seen["s"]["exit_code"] == 128 + 9  # ignored SIGTERM: SIGKILL after the 1 s grace
    assert 1.0 <= seen["s_seconds"] < 15.0
    assert seen["x"]["state"] == "EXITED" and seen["x"]["exit_code"] is None
    assert [(rid, kind) for rid, kind, _ in seen["errors"]] == [("x-0", "launch_failed")]
    assert "nowhere" in seen["errors"][0][2]


def test_a_restarted_driver_adopts_its_jobs_and_kills_its_orphans(
    cluster: RayCluster, tmp_path: Path
) -> None:
    first = drive(cluster, "recover_first", tmp_path, "rec")
    assert first["k"]["state"] == first["o"]["state"] == "RUNNING"
    second = drive(cluster, "recover_second", tmp_path, "rec")
    assert second["adopted"]["state"] == "RUNNING"
    assert second["adopted"]["pid"] == first["k"]["pid"]
    assert second["seen"] == ["k-0"]
    assert second["done"]["exit_code"] == 0
    # Nothing of either request is left in Ray: actors killed, placement groups removed.
    assert second["actors_after"] == []
    assert second["groups_after"] == [
        ["dlsched:rec:k-0", "REMOVED"],
        ["dlsched:rec:o-0", "REMOVED"],
    ]
    # The orphan was killed by the recovery: it never wrote an exit code of its own accord.
    orphan_exit = tmp_path / "exits" / "o-0"
    assert not orphan_exit.exists() or orphan_exit.read_text().strip() == str(128 + 9)


def test_without_an_address_the_backend_starts_a_one_machine_ray(
    cluster: RayCluster, tmp_path: Path
) -> None:
    seen = drive(cluster, "local", tmp_path, env={"RAY_ADDRESS": ""})
    assert seen["started_local"] is True
    assert {rid: o["exit_code"] for rid, o in seen["finals"].items()} == {"a-0": 0, "b-0": 0}
    a, b = (job_fields(seen["logs"][job][0]) for job in "ab")
    assert (a["node"], len(a["cuda"]), b["node"], len(b["cuda"])) == ("a", 2, "b", 1)
    assert not set(a["cuda"]) & set(b["cuda"])  # one pool of 3 GPUs, shared without overlap
    assert seen["errors"] == []


def test_a_removed_node_fails_its_jobs_and_spares_the_others(
    cluster: RayCluster, tmp_path: Path
) -> None:
    args = [sys.executable, "-m", "tests.backends.ray_scenarios", "node_loss", str(tmp_path)]
    driver = cluster.popen(
        args, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert driver.stdout is not None and driver.stdin is not None
        line = driver.stdout.readline()
        assert line.strip() == "RUNNING", line
        cluster.remove_node("k80-000")
        driver.stdin.write("go\n")
        driver.stdin.flush()
        out, err = driver.communicate(timeout=180)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert driver.returncode == 0, err[-4000:]
    seen = json.loads(out.strip().splitlines()[-1])
    # The job dies with its node: no exit code, or SIGKILL's (137) when the actor outlived
    # the job by a moment and recorded it. Either way the error says the node was lost.
    assert seen["lost"]["state"] == "EXITED" and seen["lost"]["exit_code"] in (None, 137)
    assert [(rid, kind) for rid, kind, _ in seen["errors"]] == [("l-0", "node_lost")]
    assert "k80-000" in seen["errors"][0][2]
    assert seen["job_alive_after"] is False  # the job died with its node's actor
    assert seen["other_during"]["state"] == "RUNNING"
    assert seen["other_done"]["exit_code"] == 0
    assert seen["nodes_after"] == ["head", "v100-000"]
