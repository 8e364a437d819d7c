"""dlsched's Tiresias beside the Tiresias authors' simulator, job by job, on the 990 jobs of
Philly VC 0e4a51 (the demo's trace) on 32 nodes x 8 GPUs.

The authors' simulator (SymbioticLab/Tiresias, ``simulator/run_sim.py``, schedule ``dlas-gpu``)
is not part of dlsched. Run it (or a faithful port) on the jobs this script writes with
``--write-trace`` and pass the ``job.csv`` it logs (``count`` placement scheme columns) with
``--reference``. Settings are matched on the dlsched side: its queue ``--thresholds`` (GPU-s),
a 1-s round (the reference is event-driven on integer seconds), ``spread`` placement (one GPU
at a time wherever free GPUs are: placement by GPU count, as the ``count`` scheme), and no
restart costs (the reference has none).

Prints, for the reference and for dlsched's Tiresias under ``order=submit`` and
``order=running``: average JCT, average queueing (JCT minus run time: every second a job
waited, before its first start or after a preemption), preemptions (total, jobs preempted at
least once) and how far each job's JCT is from the reference's.

    python bench/tiresias_reference.py --write-trace /tmp/vc_0e4a51_tiresias.csv
    python bench/tiresias_reference.py --reference job.csv --thresholds 3250,7200
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path
from typing import Any

from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import CheckpointConfig, SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from dlsched.trace.schema import Trace

NO_RESTART_COST = CheckpointConfig(one_gpu_s=0.0, node_s=0.0, multi_node_s=0.0)
Jobs = dict[str, dict[str, float]]  # job id -> jct, run (time), preemptions


def demo_trace() -> Trace:
    return read_trace(bundled_trace_path("vc_0e4a51")).trace


def write_trace(trace: Trace, path: Path) -> None:
    """The jobs in the reference simulator's input format (integer seconds, as it reads them)."""
    cols = trace.table.select(["job_id", "num_gpus", "submit_time", "duration"]).to_pylist()
    with path.open("x", newline="") as f:
        out = csv.writer(f)
        out.writerow(["job_id", "num_gpu", "submit_time", "duration"])
        for row in cols:
            out.writerow(
                [row["job_id"], row["num_gpus"], int(row["submit_time"]), int(row["duration"])]
            )


def read_reference(path: Path) -> Jobs:
    """Per job id: JCT, run time and preemptions from the reference's ``job.csv``."""
    with path.open(newline="") as f:
        return {
            row["job_id"]: {
                "jct": float(row["JCT"]),
                "run": float(row["duration"]),
                "preemptions": float(row["preempt"]),
            }
            for row in csv.DictReader(f)
        }


def run_dlsched(trace: Trace, args: argparse.Namespace, order: str) -> Jobs:
    options = {"thresholds": args.thresholds, "round_s": args.round_s, "order": order}
    config = SimConfig(
        policy="tiresias",
        policy_options=options,
        placement=args.placement,
        checkpoint=NO_RESTART_COST,
    )
    result = simulate(trace, resolve_cluster(args.cluster), config)
    return {
        r["job_id"]: {"jct": r["jct_s"], "run": r["run_time_s"], "preemptions": r["preemptions"]}
        for r in result.jobs.to_pylist()
    }


def table_row(name: str, jobs: Jobs, ref: Jobs | None) -> str:
    jct = statistics.mean(j["jct"] for j in jobs.values())
    queue = statistics.mean(j["jct"] - j["run"] for j in jobs.values())
    preempts = sum(j["preemptions"] for j in jobs.values())
    preempted = sum(j["preemptions"] > 0 for j in jobs.values())
    cells: list[Any] = [name, f"{jct:,.0f}", f"{queue:,.0f}", f"{preempts:,.0f}", preempted]
    if ref is None:
        cells += ["-", "-", "-", "-"]
    else:
        missing = set(ref) ^ set(jobs)
        if missing:
            raise SystemExit(f"job ids differ from the reference's: {sorted(missing)[:5]} ...")
        diff = [abs(jobs[k]["jct"] - ref[k]["jct"]) for k in ref]
        within_1s = sum(d <= 1.0 for d in diff)
        within_1pc = sum(d <= 0.01 * ref[k]["jct"] for k, d in zip(ref, diff, strict=True))
        cells += [within_1s, within_1pc, f"{statistics.mean(diff):,.0f}", f"{max(diff):,.0f}"]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-trace", type=Path, help="write the jobs for the reference here")
    parser.add_argument("--reference", type=Path, help="the reference simulator's job.csv")
    parser.add_argument("--thresholds", default="3250,7200", help="queue thresholds (GPU-s)")
    parser.add_argument("--round-s", default="1")
    parser.add_argument("--placement", default="spread")
    parser.add_argument("--cluster", default="32x8")
    args = parser.parse_args()
    trace = demo_trace()
    if args.write_trace:
        write_trace(trace, args.write_trace)
        print(f"wrote {len(trace)} jobs to {args.write_trace}")
        return
    ref = read_reference(args.reference) if args.reference else None
    print(
        f"thresholds {args.thresholds} GPU-s, round {args.round_s} s, placement "
        f"{args.placement}, cluster {args.cluster}, no restart costs; {len(trace)} jobs\n"
    )
    print(
        "| run | avg JCT (s) | avg queueing (s) | preemptions | jobs preempted | "
        "JCT equal to ref (±1 s) | JCT within 1% of ref | mean abs. JCT diff (s) | "
        "max abs. JCT diff (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    if ref is not None:
        print(table_row("reference", ref, None))
    for order in ("submit", "running"):
        print(table_row(f"dlsched order={order}", run_dlsched(trace, args, order), ref), flush=True)


if __name__ == "__main__":
    main()
