"""The driver of the Ray fault-injection test; runs inside the test cluster's namespaces
(``python -m tests.backends.ray_service_run OUT POLICY``).

It runs ``dlsched serve --backend ray --ray-address <the cluster>`` (with ``RAY_ADDRESS``
emptied, so only the flag names the cluster) on the cluster's two GPU nodes, submits short
checkpointing jobs (:mod:`tests.service.jobscript`: each logs its node and
``CUDA_VISIBLE_DEVICES`` to ``gpu_log.txt``), kills node ``k80-000``'s raylet as soon as a job
has started there, waits until every job is final and prints what it saw as one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.cluster.toml_io import write_cluster_toml
from dlsched.testing.live_run import (
    LiveService,
    Submission,
    double_booked,
    exit_codes,
    not_completed_once,
    run_workload,
)
from dlsched.testing.ray_cluster import ADDRESS, remove_node_here
from dlsched.workloads.gpu_log import read_gpu_log
from tests.service.jobscript import job_command, write_job

VICTIM = "k80-000"
GPUS = (1, 2, 1, 1, 2, 1, 1, 2, 1, 1)
STEPS = 40


def started_on(jobs_root: Path, job: str, node: str) -> bool:
    """Whether the job's latest run logged its start on ``node``."""
    log = jobs_root / "jobs" / job / "gpu_log.txt"
    runs = read_gpu_log(log) if log.exists() else []
    return bool(runs) and runs[-1].node == node and runs[-1].stop is None


def main(argv: list[str]) -> None:
    out, policy = Path(argv[0]), argv[1]
    spec = ClusterSpec("ray", (NodeSpec(VICTIM, 2, "k80"), NodeSpec("v100-000", 4, "v100")))
    cluster_file = write_cluster_toml(spec, out / "cluster.toml")
    script = write_job(out)
    command = list(job_command(script, STEPS))
    submissions = [
        Submission(0.0, {"name": f"s{i}", "user": "u", "gpus": g, "command": command})
        for i, g in enumerate(GPUS)
    ]
    args = ["--backend", "ray", "--ray-address", ADDRESS, "--cluster", str(cluster_file)]
    args += ["--policy", policy, "--round", "0.5", "--grace", "5"]
    killed: dict[str, Any] = {}
    with LiveService(out, args, env={**os.environ, "RAY_ADDRESS": ""}) as service:

        def kill_when_busy(elapsed: float) -> None:
            if killed:
                return
            running = [j["id"] for j in service.call("GET", "/jobs") if j["state"] == "RUNNING"]
            victims = [j for j in running if started_on(service.jobs_root, j, VICTIM)]
            if victims:
                remove_node_here(VICTIM)
                killed.update(at_s=elapsed, dead_by=time.time(), victims=victims)

        records = run_workload(
            service, submissions, 300.0, on_tick=kill_when_busy, label=policy, poll_s=0.5
        )
        events = {r["id"]: service.call("GET", f"/jobs/{r['id']}/events") for r in records}
    codes = exit_codes(service.jobs_root)
    clashes, unstopped = double_booked(service.jobs_root)
    paths = {r["id"]: service.jobs_root / "jobs" / r["id"] / "gpu_log.txt" for r in records}
    # A job that never ran (e.g. failed before starting) has no log: the states then tell.
    logs = {job: read_gpu_log(path) if path.exists() else [] for job, path in paths.items()}
    runs = {job: [run.node for run in log] for job, log in logs.items()}
    victim_starts = {
        job: [run.start for run in log if run.node == VICTIM] for job, log in logs.items()
    }
    print(
        json.dumps(
            {
                "killed": killed,
                "states": {r["id"]: r["state"] for r in records},
                "restarts": {r["id"]: r["restarts"] for r in records},
                "nodes": {r["id"]: r.get("nodes") for r in records},
                "events": {j: [[e["kind"], e["detail"]] for e in es] for j, es in events.items()},
                "exit_codes": codes,
                "not_completed_once": not_completed_once(records, codes),
                "runs": runs,
                "victim_starts": victim_starts,
                "double_booked": clashes,
                "runs_without_stop": unstopped,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
