"""Fault injection through the live service on a real Ray cluster (head + ``v100-000`` with 4
fake GPUs + ``k80-000`` with 2, in fresh namespaces with loopback only): ``dlsched serve
--backend ray --ray-address`` runs ten short jobs under FIFO; ``k80-000`` is killed while jobs
run there (:mod:`tests.backends.ray_service_run`). Its jobs (running, or launched there and
still waiting for their actor) must be reported lost, queued again, run again on ``v100-000``
and complete; every job exactly once, and no GPU held by two jobs at once according to the
jobs' own logs of their node and ``CUDA_VISIBLE_DEVICES``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dlsched.testing.ray_cluster import RayCluster, RayNode, have_ray_and_namespaces

pytestmark = [pytest.mark.ray, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.long
def test_jobs_of_a_killed_ray_node_are_requeued_rescheduled_and_complete_once(
    tmp_path: Path,
) -> None:
    reason = have_ray_and_namespaces()
    if reason is not None:
        pytest.fail(f"the Ray tests cannot run here: {reason}")
    nodes = [RayNode("v100-000", 4, "v100"), RayNode("k80-000", 2, "k80")]
    with RayCluster(RayNode("head", 0), nodes) as cluster:
        args = [sys.executable, "-m", "tests.backends.ray_service_run", str(tmp_path), "fifo"]
        result = cluster.run(args, cwd=REPO, timeout_s=420)
    serve_log = tmp_path / "serve.log"
    tail = serve_log.read_text()[-3000:] if serve_log.exists() else ""
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:] + tail
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    (tmp_path / "seen.json").write_text(json.dumps(seen, indent=1))

    victims = seen["killed"]["victims"]
    assert victims, "no job ran on k80-000 before the end"
    assert set(seen["states"].values()) == {"COMPLETED"}
    assert seen["not_completed_once"] == []
    assert seen["double_booked"] == []

    def requeued_for_loss(job: str) -> bool:
        reasons = [d.get("reason") or "" for kind, d in seen["events"][job] if kind == "requeued"]
        return any("Ray node k80-000 was lost" in r for r in reasons)

    # Every job that was running on k80-000, and any still waiting there for its actor, was
    # reported lost and queued again; no other job was disturbed.
    lost = {job for job in seen["states"] if requeued_for_loss(job)}
    assert set(victims) <= lost
    for job in lost:
        first_start = next(d for kind, d in seen["events"][job] if kind == "started")
        assert "k80-000" in first_start["gpu_ids"]
        assert seen["restarts"][job] >= 1
        # ... and ran again, to completion, on the node that is left.
        assert seen["runs"][job][-1] == "v100-000"
        assert seen["nodes"][job] == ["v100-000"]
        assert seen["exit_codes"][job][-1] == "0"
    for job in set(seen["states"]) - lost:
        assert seen["restarts"][job] == 0, seen["events"][job]
    # Nothing started on the lost node after it was killed, and every job that ran there was
    # reported lost (the victims were read from the jobs' logs just before the kill, so a job
    # launched there a moment before it can be missing from them, never the other way round).
    on_k80 = {job for job, starts in seen["victim_starts"].items() if starts}
    assert set(victims) <= on_k80 <= lost
    # A job process the node's actor had already spawned may log its start just after the
    # raylet died; a launch planned after the kill would come a round (0.5 s) plus a placement
    # later, on a node Ray no longer has.
    dead_by = seen["killed"]["dead_by"] + 2.0
    assert all(s < dead_by for starts in seen["victim_starts"].values() for s in starts)
