"""The live service on a real Slurm: a training workload with FIFO and with Tiresias.

1. Start a Slurm from scratch on loopback (:class:`dlsched.testing.slurm_cluster.SlurmCluster`:
   munge, slurmctld, nodes sn1/sn2 with 4 fake a100 GPUs and sn3 with 2 v100) and write the
   cluster file the service plans on from Slurm's own inventory (``sinfo --json``).
2. For each policy: run ``dlsched serve --backend slurm`` (policy options through
   ``--policy-opt``), submit the jobs of :func:`sim_vs_live.workload`
   (``dlsched.workloads.train``) at their arrival times, and wait until all are final
   (:mod:`dlsched.testing.live_run`).
   ``--drain NODE --drain-at T`` drains a node T seconds into each run (fault injection).
3. Check and print: every job COMPLETED; exactly once (each attempt submitted to Slurm once, one
   Slurm job per dlsched job ended COMPLETED); no GPU held by two jobs at once (from the jobs' own
   ``gpu_log.txt``, node names and ``CUDA_VISIBLE_DEVICES``); every attempt that stopped after a
   checkpoint (exit 75 in the back end's exit files) followed by a resume from the checkpoint
   (the job's log: ``resumed from checkpoint at step N``, N never decreasing); average JCT,
   makespan, preemptions; and the latency of Slurm's commands (sbatch, squeue, sinfo, submit to
   running).

Usage: ``.venv/bin/python bench/slurm_live.py [--jobs 30] [--policies fifo,tiresias]
[--drain sn2 --drain-at 30] [--out runs/slurm_live]``. Needs ``apt-get install -y slurm-wlm
munge`` and the ``service`` and ``train`` extras; root (the daemons run as root).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from dlsched.backends.slurm import SlurmBackend
from dlsched.backends.slurm_cli import SlurmCommands, inventory_cluster, read_inventory
from dlsched.cluster.toml_io import write_cluster_toml
from dlsched.testing.live_run import (
    LiveService,
    checkpoints_not_resumed,
    double_booked,
    exit_codes,
    not_completed_once,
    run_workload,
)
from dlsched.testing.slurm_cluster import SlurmCluster
from sim_vs_live import submissions, workload

POLICY_OPTIONS = {"tiresias": ["thresholds=60"]}
"""Tiresias's default first queue (18,000 GPU-s) is hours long: a 60 GPU-s threshold makes a
few-minute workload preempt (and mostly after the jobs have started training)."""


def measure_commands(cluster: SlurmCluster, out: Path) -> dict[str, float]:
    """Median latency (ms) of squeue/sinfo JSON calls and of sbatch, and the median time from
    submission to RUNNING of a 1-GPU job on an idle node (s)."""
    commands = SlurmCommands(cluster.env)
    timings: dict[str, list[float]] = {"squeue_ms": [], "sinfo_ms": [], "sbatch_ms": []}
    for _ in range(20):
        t = time.perf_counter()
        commands.run(["squeue", "--json", "--states=all"])
        timings["squeue_ms"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        commands.run(["sinfo", "--json"])
        timings["sinfo_ms"].append((time.perf_counter() - t) * 1000)
    backend = SlurmBackend(out / "probe", "probe", env=cluster.env)
    to_running = []
    from dlsched.backends.base import LaunchRequest, ProcState

    for i in range(5):
        rid = f"p{i}.0"
        t = time.perf_counter()
        backend.launch(LaunchRequest(rid, f"p{i}", ("sleep", "0.5"), {"sn1": (0,)}))
        timings["sbatch_ms"].append((time.perf_counter() - t) * 1000)
        while backend.observe()[rid].state is ProcState.STARTING:
            time.sleep(0.05)
        to_running.append(time.perf_counter() - t)
        while backend.observe()[rid].state is not ProcState.EXITED:
            time.sleep(0.1)
    figures = {k: round(statistics.median(v), 1) for k, v in timings.items()}
    figures["submit_to_running_s"] = round(statistics.median(to_running), 2)
    return figures


def slurm_jobs(cluster: SlurmCluster) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = json.loads(cluster.run("squeue", "--json", "--states=all").stdout)[
        "jobs"
    ]
    return jobs


def run_policy(
    cluster: SlurmCluster, cluster_file: Path, policy: str, args: argparse.Namespace
) -> dict[str, Any]:
    out: Path = args.out / policy
    out.mkdir(parents=True)
    serve_args = ["--backend", "slurm", "--cluster", str(cluster_file), "--policy", policy]
    serve_args += ["--round", "1", "--grace", "30"]
    for option in POLICY_OPTIONS.get(policy, []):
        serve_args += ["--policy-opt", option]
    drained: list[float] = []

    def inject(elapsed: float) -> None:
        if args.drain and not drained and elapsed >= args.drain_at:
            cluster.set_node_state(args.drain, "drain", reason="bench fault injection")
            drained.append(elapsed)
            print(f"  drained {args.drain} at {elapsed:.0f} s", flush=True)

    try:
        with LiveService(out, serve_args, env=cluster.env, start_timeout_s=60) as service:
            records = run_workload(
                service,
                submissions(workload(args.jobs, args.seed, args.mean_gap), args.seed),
                args.timeout,
                on_tick=inject,
                label=policy,
            )
    finally:
        if drained:
            cluster.set_node_state(args.drain, "resume")
    return check(cluster, out, records, policy)


def check(
    cluster: SlurmCluster, out: Path, records: list[dict[str, Any]], policy: str
) -> dict[str, Any]:
    root = out / "state.db.jobs"
    jobs_root = root / "jobs"
    names: Counter[str] = Counter()
    completed_per_job: Counter[str] = Counter()
    allocations: dict[str, list[tuple[float, float]]] = {}
    for j in slurm_jobs(cluster):
        m = re.match(r"dlsched-[0-9a-f]+-(j\d+)\.(\d+)$", j["name"])
        if m is None or not str(j.get("standard_output", "")).startswith(str(jobs_root)):
            continue
        names[j["name"]] += 1
        if j["start_time"] and j["end_time"]:
            allocations.setdefault(m.group(1), []).append((j["start_time"], j["end_time"]))
        if j["job_state"] == "COMPLETED":
            completed_per_job[m.group(1)] += 1
    resubmitted = sorted(n for n, c in names.items() if c > 1)
    codes = exit_codes(root)
    # Exactly once by both accounts: one attempt exited 0, one Slurm job ended COMPLETED.
    not_once = sorted(
        set(not_completed_once(records, codes))
        | {r["id"] for r in records if completed_per_job[r["id"]] != 1}
    )
    restarts = sum(r["restarts"] for r in records)
    checkpointed, resumed, not_resumed = checkpoints_not_resumed(root, codes)
    killed_in_startup = sum(c.count("143") for c in codes.values())
    # A run killed before it logged its stop (SIGKILL) ends at the latest when the Slurm job it
    # ran in ended plus KillWait (a cancelled job's processes get SIGKILL that long after).
    slack_s = cluster.kill_wait_s + 1.0

    def stop_bound(job: str, start: float) -> float:
        ends = [e for b, e in allocations.get(job, []) if b - 1 <= start <= e + 1]
        return min(ends) + slack_s if ends else float("inf")

    clashes, unstopped = double_booked(root, stop_bound)
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
        "restarts": restarts,
        "stopped_after_checkpoint": checkpointed,
        "resumed_from_checkpoint": resumed,
        "stopped_by_sigterm_before_handler": killed_in_startup,
        "checkpoints_not_resumed": not_resumed,
        "slurm_jobs": sum(names.values()),
        "requests_submitted_twice": resubmitted,
        "jobs_not_completed_exactly_once": not_once,
        "gpu_double_bookings": clashes,
        "runs_without_stop_line": unstopped,
        "nodes_used": sorted({n for r in records for n in (r.get("nodes") or [])}),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=30)
    p.add_argument("--policies", default="fifo,tiresias")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mean-gap", type=float, default=2.0, help="mean seconds between arrivals")
    p.add_argument("--timeout", type=float, default=1200.0)
    p.add_argument("--drain", default=None, help="node to drain mid-run")
    p.add_argument("--drain-at", type=float, default=30.0, help="seconds into each run")
    p.add_argument("--out", type=Path, default=Path("runs/slurm_live"))
    args = p.parse_args()
    args.out = args.out.resolve()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    ok = True
    # Finished jobs stay in squeue for the whole run: the checks read them at its end.
    with SlurmCluster(directory=args.out / "slurm", min_job_age_s=7200) as cluster:
        figures = measure_commands(cluster, args.out)
        print("Slurm command latency:", json.dumps(figures))
        spec = inventory_cluster(read_inventory(SlurmCommands(cluster.env)))
        cluster_file = write_cluster_toml(spec, args.out / "cluster.toml")
        print(f"cluster from sinfo: {[(n.name, n.gpus, n.gpu_type) for n in spec.nodes]}")
        for policy in args.policies.split(","):
            summary = run_policy(cluster, cluster_file, policy, args)
            print(json.dumps(summary, indent=1), flush=True)
            ok &= (
                summary["completed"] == summary["jobs"]
                and not summary["requests_submitted_twice"]
                and not summary["jobs_not_completed_exactly_once"]
                and not summary["gpu_double_bookings"]
                and not summary["checkpoints_not_resumed"]
            )
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
