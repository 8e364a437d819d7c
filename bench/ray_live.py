"""The live service on a real Ray cluster: a training workload with FIFO and with Tiresias.

1. Start a Ray cluster on loopback (:class:`dlsched.testing.ray_cluster.RayCluster`: a head
   without GPUs, ``v100-000`` with 4 fake v100 GPUs and ``k80-000`` with 2 fake k80) and write
   the cluster file the service plans on from Ray's own inventory
   (:meth:`dlsched.backends.ray_backend.RayBackend.inventory`).
2. For each policy, inside the cluster's namespaces: run ``dlsched serve --backend ray
   --ray-address ...`` (policy options through ``--policy-opt``), submit the jobs of
   :func:`sim_vs_live.workload` (``dlsched.workloads.train``) at their arrival times, and wait
   until all are final (:mod:`dlsched.testing.live_run`). ``--kill-node NODE --kill-at T`` kills
   that node's raylet in each run at the first poll at least T seconds in when jobs hold GPUs
   there (fault injection: its jobs die with it), and starts the node again after the run.
   The jobs it took down are those the service queued again because the node was lost.
3. Check and print: every job COMPLETED; exactly once (one attempt of each job exited 0, from
   the back end's exit files); no GPU held by two jobs at once (from the jobs' own
   ``gpu_log.txt``: node names and the ``CUDA_VISIBLE_DEVICES`` Ray gave them); every
   checkpointed stop followed by a resume from the checkpoint; the jobs the lost node took down
   and where they ran again; average JCT, makespan, restarts.

Usage: ``.venv/bin/python bench/ray_live.py [--jobs 30] [--policies fifo,tiresias]
[--kill-node k80-000 --kill-at 30] [--out runs/ray_live]``. Needs the ``ray``, ``service`` and
``train`` extras and root (network and PID namespaces).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from dlsched.testing.live_run import (
    LiveService,
    checkpoints_not_resumed,
    double_booked,
    exit_codes,
    exit_time_bound,
    not_completed_once,
    run_workload,
)
from dlsched.testing.ray_cluster import (
    ADDRESS,
    RayCluster,
    RayNode,
    remove_node_here,
    start_node_here,
)
from dlsched.workloads.gpu_log import read_gpu_log
from sim_vs_live import submissions, workload

POLICY_OPTIONS = {"tiresias": ["thresholds=15"]}
"""Tiresias's default first queue (18,000 GPU-s) is hours long: a 15 GPU-s threshold makes a
few-minute workload preempt."""
NODES = (RayNode("head", 0), RayNode("v100-000", 4, "v100"), RayNode("k80-000", 2, "k80"))


def run_policy(cluster_file: Path, policy: str, args: argparse.Namespace) -> dict[str, Any]:
    out: Path = args.out / policy
    out.mkdir(parents=True)
    serve_args = ["--backend", "ray", "--ray-address", ADDRESS, "--cluster", str(cluster_file)]
    serve_args += ["--policy", policy, "--round", "1", "--grace", "15"]
    for option in POLICY_OPTIONS.get(policy, []):
        serve_args += ["--policy-opt", option]
    killed: dict[str, Any] = {}

    def inject(elapsed: float) -> None:
        if args.kill_node and not killed and elapsed >= args.kill_at:
            victims = [
                j["id"]
                for j in service.call("GET", "/jobs")
                if j["state"] in ("RUNNING", "PREEMPTING") and args.kill_node in (j["nodes"] or [])
            ]
            if not victims:
                return  # a node without jobs would test nothing: wait until some run there
            remove_node_here(args.kill_node)
            killed.update(node=args.kill_node, at_s=round(elapsed, 1), jobs_on_node=victims)
            print(
                f"  killed {args.kill_node} at {elapsed:.0f} s; jobs on it: {victims}", flush=True
            )

    with LiveService(out, serve_args) as service:
        records = run_workload(
            service,
            submissions(workload(args.jobs, args.seed, args.mean_gap), args.seed),
            args.timeout,
            on_tick=inject,
            label=policy,
        )
        events = {r["id"]: service.call("GET", f"/jobs/{r['id']}/events") for r in records}
    if killed:
        node = next(n for n in NODES if n.name == args.kill_node)
        start_node_here(node)
    return check(service.jobs_root, records, policy, killed, events)


def check(
    root: Path,
    records: list[dict[str, Any]],
    policy: str,
    killed: dict[str, Any],
    events: dict[str, list[dict[str, Any]]],
) -> dict[str, Any]:
    codes = exit_codes(root)
    checkpointed, resumed, not_resumed = checkpoints_not_resumed(root, codes)
    clashes, unstopped = double_booked(root, exit_time_bound(root))
    t0 = min(r["submit_time"] for r in records)
    summary: dict[str, Any] = {
        "policy": policy,
        "jobs": len(records),
        "completed": sum(r["state"] == "COMPLETED" for r in records),
        "not_completed": {
            r["id"]: f"{r['state']} {r.get('reason')}" for r in records if r["state"] != "COMPLETED"
        },
        "avg_jct_s": round(statistics.fmean(r["end_time"] - r["submit_time"] for r in records), 1),
        "makespan_s": round(max(r["end_time"] for r in records) - t0, 1),
        "restarts": sum(r["restarts"] for r in records),
        "restarts_after_checkpoint": checkpointed,
        "resumed_from_checkpoint": resumed,
        "restarts_not_resumed": not_resumed,
        "ray_runs": sum(len(c) for c in codes.values()),
        "jobs_not_completed_exactly_once": not_completed_once(records, codes),
        "gpu_double_bookings": clashes,
        "runs_without_stop_line": unstopped,
        "nodes_used": sorted({n for r in records for n in (r.get("nodes") or [])}),
    }
    if killed:
        by_id = {r["id"]: r for r in records}
        loss = f"{killed['node']} was lost"
        # The jobs the node took down, from the service's own records (the snapshot taken at
        # the kill may name a job that had just exited, or miss one just launched there).
        lost = sorted(
            job
            for job, evs in events.items()
            if any(loss in str(e["detail"].get("reason")) for e in evs if e["kind"] == "requeued")
        )
        summary["node_killed"] = killed
        summary["lost_jobs"] = {
            job: {
                "runs_on": [run.node for run in read_gpu_log(root / "jobs" / job / "gpu_log.txt")]
                if (root / "jobs" / job / "gpu_log.txt").exists()
                else [],
                "restarts": by_id[job]["restarts"],
                "final": by_id[job]["state"],
                "finished_on": by_id[job].get("nodes"),
            }
            for job in lost
        }
    return summary


def inside(args: argparse.Namespace) -> int:
    """Everything that talks to Ray: runs inside the cluster's namespaces."""
    from dlsched.backends.ray_backend import RayBackend
    from dlsched.cluster.spec import ClusterSpec
    from dlsched.cluster.toml_io import write_cluster_toml

    probe = RayBackend(args.out / "probe", "probe")
    spec = probe.inventory()
    probe.close()
    spec = ClusterSpec("ray", tuple(n for n in spec.nodes if n.gpus))
    cluster_file = write_cluster_toml(spec, args.out / "cluster.toml")
    print(f"cluster from ray.nodes(): {[(n.name, n.gpus, n.gpu_type) for n in spec.nodes]}")
    ok = True
    for policy in args.policies.split(","):
        summary = run_policy(cluster_file, policy, args)
        (args.out / policy / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        print(json.dumps(summary, indent=1), flush=True)
        ok &= (
            summary["completed"] == summary["jobs"]
            and not summary["jobs_not_completed_exactly_once"]
            and not summary["gpu_double_bookings"]
            and not summary["restarts_not_resumed"]
        )
    print("all checks passed" if ok else "SOME CHECKS FAILED", flush=True)
    return 0 if ok else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=30)
    p.add_argument("--policies", default="fifo,tiresias")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mean-gap", type=float, default=2.0, help="mean seconds between arrivals")
    p.add_argument("--timeout", type=float, default=1200.0)
    p.add_argument("--kill-node", default=None, help="Ray node to kill mid-run")
    p.add_argument(
        "--kill-at", type=float, default=30.0, help="earliest second of each run to kill it"
    )
    p.add_argument("--out", type=Path, default=Path("runs/ray_live"))
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.out = args.out.resolve()
    if args.kill_node is not None and args.kill_node not in {n.name for n in NODES[1:]}:
        p.error(f"--kill-node must be a worker node: {', '.join(n.name for n in NODES[1:])}")
    if args.inside:
        return inside(args)
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    began = time.monotonic()
    with RayCluster(NODES[0], NODES[1:]) as cluster:
        print(f"Ray cluster up in {time.monotonic() - began:.1f} s", flush=True)
        cmd = [sys.executable, __file__, "--inside", *sys.argv[1:]]
        cmd += ["--out", str(args.out)]
        driver = cluster.popen(cmd, cwd=Path.cwd())
        return driver.wait()


if __name__ == "__main__":
    sys.exit(main())
