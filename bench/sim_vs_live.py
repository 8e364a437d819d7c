"""Sim versus live: one workload of training jobs run by the live service and by the simulator.

1. Live: start ``dlsched serve`` (local back end, real ``dlsched.workloads.train`` processes),
   submit the jobs at their arrival times, wait until every one has finished
   (:mod:`dlsched.testing.live_run`, shared with ``slurm_live.py`` and ``ray_live.py``).
2. Measure: the throughput table of the run (:mod:`dlsched.workloads.measure`: mean samples/s
   per model, GPUs and batch) and one launch overhead (the median over jobs of run time minus
   samples / the job's own measured throughput: process start, imports, warm-up).
3. Simulate: the same jobs (live submit times, GPUs) with run time = overhead + samples / table
   throughput, on the same cluster, policy and placement.
4. Print both average JCTs, per-job figures, and whether any GPU was held by two jobs at once
   (from the jobs' own ``gpu_log.txt``). The bar: average JCTs within 25% of each other.

Usage: ``.venv/bin/python bench/sim_vs_live.py [--jobs 20] [--cluster 2x2] [--policy fifo]
[--seed 0] [--out runs/sim_vs_live]``. Needs the ``service`` and ``train`` extras. Takes a few
minutes; on a busy machine the jobs share its cores, which the measured throughputs include.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched import JobSpec, SimConfig, Trace, resolve_cluster, simulate
from dlsched.testing.live_run import LiveService, Submission, double_booked, run_workload
from dlsched.workloads.measure import ThroughputTable, collect_throughputs
from dlsched.workloads.status import read_status

MODEL = "resnet-small"
BATCH = 32
EPOCH_SAMPLES = 512


@dataclass(frozen=True)
class JobPlan:
    """One job of the workload: arrival offset (s), GPUs, epochs of EPOCH_SAMPLES samples."""

    name: str
    offset: float
    gpus: int
    epochs: int

    @property
    def samples(self) -> int:
        return self.epochs * EPOCH_SAMPLES

    def command(self, seed: int) -> list[str]:
        return [
            sys.executable,
            "-m",
            "dlsched.workloads.train",
            "--model",
            MODEL,
            "--epochs",
            str(self.epochs),
            "--epoch-samples",
            str(EPOCH_SAMPLES),
            "--batch-size",
            str(BATCH),
            "--checkpoint-every",
            "10",
            "--seed",
            str(seed),
        ]


def workload(n: int, seed: int, mean_gap_s: float) -> list[JobPlan]:
    """``n`` jobs with Poisson arrivals: mostly 1-GPU jobs, some 2- and 4-GPU ones."""
    rng = random.Random(seed)
    t = 0.0
    jobs = []
    for i in range(n):
        jobs.append(
            JobPlan(f"train-{i:02d}", t, rng.choice((1, 1, 1, 2, 2, 4)), rng.choice((1, 2, 3)))
        )
        t += rng.expovariate(1.0 / mean_gap_s)
    return jobs


def submissions(plan: list[JobPlan], seed: int) -> list[Submission]:
    """The ``POST /jobs`` of each job of ``plan`` at its arrival offset (job ``i`` trains with
    seed ``seed + i``)."""
    return [
        Submission(
            job.offset,
            {
                "name": job.name,
                "user": "bench",
                "gpus": job.gpus,
                "command": job.command(seed + i),
                "batch_size": BATCH,
            },
        )
        for i, job in enumerate(plan)
    ]


def run_live(
    plan: list[JobPlan], out: Path, cluster: str, policy: str, seed: int, timeout_s: float
) -> list[dict[str, Any]]:
    """Submit ``plan`` to a live service (local back end) at its arrival times; the finished
    job records."""
    args = ["--backend", "local", "--cluster", cluster, "--policy", policy, "--round", "1"]
    with LiveService(out, args, start_timeout_s=60) as service:
        return run_workload(service, submissions(plan, seed), timeout_s)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=20)
    p.add_argument("--cluster", default="2x2")
    p.add_argument("--policy", default="fifo")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mean-gap", type=float, default=4.0, help="mean seconds between arrivals")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--out", type=Path, default=Path("runs/sim_vs_live"))
    args = p.parse_args()
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    plan = workload(args.jobs, args.seed, args.mean_gap)
    print(f"{len(plan)} jobs of {MODEL}, cluster {args.cluster}, policy {args.policy}")

    records = run_live(plan, out, args.cluster, args.policy, args.seed, args.timeout)
    failed = [r["id"] for r in records if r["state"] != "COMPLETED"]
    if failed:
        print(f"jobs that did not complete: {failed}")
        return 1
    jobs_root = out / "state.db.jobs"
    status_files = sorted(jobs_root.rglob("status.json"))
    table = collect_throughputs(status_files)
    table.write(out / "throughputs.json")
    overheads = []
    for r, job in zip(records, plan, strict=True):
        status = read_status(jobs_root / "jobs" / r["id"] / "status.json")
        run_s = r["end_time"] - r["start_time"]
        overheads.append(run_s - job.samples / status.samples_per_s)
    overhead = statistics.median(overheads)

    t0 = min(r["submit_time"] for r in records)
    trace = Trace.from_jobs(
        [
            JobSpec(
                job_id=r["id"],
                submit_time=r["submit_time"] - t0,
                num_gpus=job.gpus,
                duration=overhead + table.duration_s(MODEL, job.gpus, BATCH, job.samples),
            )
            for r, job in zip(records, plan, strict=True)
        ],
        source="bench/sim_vs_live",
    )
    sim = simulate(trace, resolve_cluster(args.cluster), SimConfig(policy=args.policy))
    sim_jct = dict(
        zip(
            sim.jobs.column("job_id").to_pylist(), sim.jobs.column("jct_s").to_pylist(), strict=True
        )
    )
    live_jct = {r["id"]: r["end_time"] - r["submit_time"] for r in records}
    report_rows(records, plan, live_jct, sim_jct, table)
    live_avg = statistics.fmean(live_jct.values())
    sim_avg = statistics.fmean(sim_jct[i] for i in live_jct)
    diff = abs(sim_avg - live_avg) / live_avg
    clashes, _ = double_booked(jobs_root)
    summary = {
        "jobs": len(plan),
        "cluster": args.cluster,
        "policy": args.policy,
        "live_avg_jct_s": round(live_avg, 2),
        "sim_avg_jct_s": round(sim_avg, 2),
        "relative_difference": round(diff, 4),
        "launch_overhead_s": round(overhead, 2),
        "live_makespan_s": round(max(r["end_time"] for r in records) - t0, 2),
        "throughputs": json.loads(table.to_json()),
        "gpu_double_bookings": clashes,
        "within_25_percent": diff <= 0.25,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"launch overhead (median): {overhead:.2f} s")
    print(
        f"average JCT: live {live_avg:.1f} s, simulated {sim_avg:.1f} s ({100 * diff:.1f}% apart)"
    )
    print(f"GPU double bookings seen in the jobs' gpu_log.txt: {len(clashes)}")
    print("within 25%: " + ("yes" if diff <= 0.25 else "NO"))
    return 0 if diff <= 0.25 and not clashes else 1


def report_rows(
    records: list[dict[str, Any]],
    plan: list[JobPlan],
    live_jct: dict[str, float],
    sim_jct: dict[str, float],
    table: ThroughputTable,
) -> None:
    print(f"{'job':5} {'gpus':>4} {'samples':>7} {'samples/s':>9} {'live JCT':>9} {'sim JCT':>8}")
    for r, job in zip(records, plan, strict=True):
        rate = table.samples_per_s(MODEL, job.gpus, BATCH)
        print(
            f"{r['id']:5} {job.gpus:4d} {job.samples:7d} {rate:9.1f} "
            f"{live_jct[r['id']]:9.1f} {sim_jct[r['id']]:8.1f}"
        )


if __name__ == "__main__":
    sys.exit(main())
