"""The live service on a real Ray cluster: a training workload with FIFO and with Tiresias.

1. Start a Ray cluster on loopback (:class:`dlsched.testing.ray_cluster.RayCluster`: a head
   without GPUs, ``v100-000`` with 4 fake v100 GPUs and ``k80-000`` with 2 fake k80) and write
   the cluster file the service plans on from Ray's own inventory
   (:meth:`dlsched.backends.ray_backend.RayBackend.inventory`).
2. For each policy, inside the cluster's namespaces: run the service with the Ray back end (the
   same :func:`dlsched.service.server.serve` as ``dlsched serve``, from a small launcher that
   passes policy options), submit the jobs of :func:`sim_vs_live.workload`
   (``dlsched.workloads.train``) at their arrival times, and wait until all are final.
3. Check and print: every job COMPLETED; exactly once (one request of each job exited 0, from
   the back end's exit files); no GPU held by two jobs at once (from the jobs' own
   ``gpu_log.txt``: node names and the ``CUDA_VISIBLE_DEVICES`` Ray gave them); every restart
   resumed from a checkpoint (``resumed from checkpoint at step N``, N > 0, in the job's log);
   average JCT, makespan, restarts, and how long launches took to reach RUNNING.

Usage: ``.venv/bin/python bench/ray_live.py [--jobs 30] [--policies fifo,tiresias]
[--out runs/ray_live]``. Needs the ``ray``, ``service`` and ``train`` extras and root (network
and PID namespaces).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from dlsched.testing.ray_cluster import RayCluster, RayNode
from sim_vs_live import BATCH, FINAL, double_booked, workload

POLICY_OPTIONS = {"tiresias": {"thresholds": "15"}}
"""Tiresias's default first queue (18,000 GPU-s) is hours long: a 15 GPU-s threshold makes a
few-minute workload preempt."""
RESUMED = re.compile(r"resumed from checkpoint at step (\d+)")
NODES = (RayNode("head", 0), RayNode("v100-000", 4, "v100"), RayNode("k80-000", 2, "k80"))


class LiveService:
    """A service subprocess with the Ray back end, and a minimal JSON client for it."""

    def __init__(self, out: Path, cluster: Path, policy: str) -> None:
        self.log = out / "serve.log"
        cmd = [sys.executable, __file__, "serve", "--cluster", str(cluster), "--policy", policy]
        cmd += ["--db", str(out / "state.db"), "--round", "1", "--grace", "15"]
        cmd += ["--options", json.dumps(POLICY_OPTIONS.get(policy, {}))]
        with open(self.log, "wb") as sink:
            self.proc = subprocess.Popen(
                cmd,
                stdout=sink,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + 120
        while not (m := re.search(r"service at (http://\S+?)/?\s", self.log.read_text())):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the service did not start:\n{self.log.read_text()}")
            time.sleep(0.1)
        self.url = m.group(1)
        self.token = (out / "state.db.token").read_text().strip()

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        req = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def serve_main(argv: list[str]) -> None:
    """The launcher: the service with the Ray back end and policy options."""
    from dlsched.service.server import ServiceConfig, serve

    p = argparse.ArgumentParser()
    for flag in ("--cluster", "--policy", "--db", "--round", "--grace", "--options"):
        p.add_argument(flag)
    a = p.parse_args(argv)
    config = ServiceConfig(
        cluster=a.cluster,
        policy=a.policy,
        policy_options=json.loads(a.options),
        backend="ray",
        db=Path(a.db),
        port=0,
        round_s=float(a.round),
        grace_s=float(a.grace),
    )
    serve(config)


def run_policy(cluster_file: Path, policy: str, args: argparse.Namespace) -> dict[str, Any]:
    out: Path = args.out / policy
    out.mkdir(parents=True)
    plan = workload(args.jobs, args.seed, args.mean_gap)
    service = LiveService(out, cluster_file, policy)
    try:
        began = time.monotonic()
        ids = []
        for i, job in enumerate(plan):
            time.sleep(max(0.0, job.offset - (time.monotonic() - began)))
            body = {
                "name": job.name,
                "user": "bench",
                "gpus": job.gpus,
                "command": job.command(args.seed + i),
                "batch_size": BATCH,
            }
            ids.append(service.call("POST", "/jobs", body)["id"])
        deadline = time.monotonic() + args.timeout
        shown = -1
        while True:
            records = {r["id"]: r for r in service.call("GET", "/jobs")}
            done = sum(records[i]["state"] in FINAL for i in ids)
            if done != shown:
                print(f"  {policy}: {done}/{len(ids)} final", flush=True)
                shown = done
            if done == len(ids):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"run not finished after {args.timeout} s")
            time.sleep(1.0)
    finally:
        service.stop()
    return check(out, [records[i] for i in ids], policy)


def resumes(root: Path) -> tuple[int, int, list[str]]:
    """(attempts that checkpointed and exited 75, later attempts that resumed from a checkpoint
    at step > 0, jobs with fewer resumptions than checkpoints), from the exit files and logs. An
    attempt stopped before it could checkpoint (killed while still importing) restarts from
    scratch legitimately: only a checkpoint must never be lost."""
    checkpoints: Counter[str] = Counter()
    for exit_file in (root / "exits").iterdir():
        if not exit_file.name.endswith(".tmp") and exit_file.read_text().strip() == "75":
            checkpoints[exit_file.name.split(".")[0]] += 1
    resumed = 0
    lost = []
    for job, count in sorted(checkpoints.items()):
        steps = [int(s) for s in RESUMED.findall((root / "jobs" / job / "log.txt").read_text())]
        resumed += sum(s > 0 for s in steps)
        if sum(s > 0 for s in steps) < count:
            lost.append(f"{job}: {count} checkpointed stops, resumed at {steps}")
    return sum(checkpoints.values()), resumed, lost


def check(out: Path, records: list[dict[str, Any]], policy: str) -> dict[str, Any]:
    root = out / "state.db.jobs"
    runs: Counter[str] = Counter()
    completed: Counter[str] = Counter()
    for exit_file in (root / "exits").iterdir():
        if exit_file.name.endswith(".tmp"):
            continue
        job = exit_file.name.split(".")[0]
        runs[job] += 1
        completed[job] += exit_file.read_text().strip() == "0"
    checkpointed, resumed, not_resumed = resumes(root)
    t0 = min(r["submit_time"] for r in records)
    summary = {
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
        "ray_runs": sum(runs.values()),
        "jobs_not_completed_exactly_once": sorted(
            r["id"] for r in records if completed[r["id"]] != 1
        ),
        "gpu_double_bookings": double_booked(root),
        "nodes_used": sorted({n for r in records for n in (r.get("nodes") or [])}),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
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
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve_main(sys.argv[2:])
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=30)
    p.add_argument("--policies", default="fifo,tiresias")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mean-gap", type=float, default=2.0, help="mean seconds between arrivals")
    p.add_argument("--timeout", type=float, default=1200.0)
    p.add_argument("--out", type=Path, default=Path("runs/ray_live"))
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.out = args.out.resolve()
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
