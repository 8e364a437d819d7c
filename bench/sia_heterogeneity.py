"""Sia against Pollux and Gavel on Sia's heterogeneous cluster and workloads.

Sia's evaluation (Jayaram Subramanya et al., SOSP'23, simulator Table 3) reports 30–93% lower
average JCT than Pollux and Gavel. Its simulator's default cluster is 6 x 4 T4 (AWS g4dn),
3 x 8 RTX 2080 Ti and 2 x 8 A100 (DGX-A100): 64 GPUs of three types, given here as the
shorthand ``t4:6x4,rtx:3x8,a100:2x8`` (dlsched's T4 profile is the Pollux testbed's, the same
machine type as Sia's ``aws`` rows). The workloads are the artifact's ``saturn`` and
``philly`` sets (``sia-simulator/workloads/<set>/workload-N.csv`` of siasosp23/artifacts,
commit aaf7a0d; Pollux-workload columns, which dlsched reads as they are). They are not
bundled (the artifact states no license): pass the directory holding them.

Policies as Sia's ``run_experiment.sh`` runs them: Sia every 60 s (p = -0.5, lambda_n = 1.1,
projected throughputs), Gavel every 360 s (dlsched's max-min objective; the artifact runs
``max_sum_throughput_perf``), Pollux every 60 s heterogeneity-unaware (p = -1). Prints one
JSON line per run and a Markdown table of mean ± standard deviation over the workloads.

    python bench/sia_heterogeneity.py --workloads DIR/saturn [--runs 1,2,...]
        [--policies sia,pollux,gavel] [--cluster t4:6x4,rtx:3x8,a100:2x8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.read import read_trace

POLICIES = {
    "sia": ("sia", {}),
    "sia-no-projection": ("sia", {"project": "false"}),
    "pollux": ("pollux", {}),
    "gavel": ("gavel", {}),
}
"""Label: policy and options."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workloads", type=Path, required=True, help="a directory of CSVs")
    parser.add_argument("--runs", default="", help="workload numbers (default: every file)")
    parser.add_argument("--policies", default="sia,pollux,gavel")
    parser.add_argument("--cluster", default="t4:6x4,rtx:3x8,a100:2x8")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cluster = resolve_cluster(args.cluster)
    if args.runs:
        files = [args.workloads / f"workload-{n}.csv" for n in args.runs.split(",")]
    else:
        files = sorted(
            args.workloads.glob("workload-*.csv"), key=lambda p: int(p.stem.split("-")[1])
        )
    names = args.policies.split(",")
    jct: dict[str, list[float]] = {n: [] for n in names}
    for path in files:
        trace = read_trace(path).trace
        for label in names:
            policy, options = POLICIES[label]
            config = SimConfig(
                policy=policy, policy_options=options, seed=args.seed, placement="consolidate"
            )
            started = time.perf_counter()
            s = simulate(trace, cluster, config).summary
            jct[label].append(s["avg_jct_s"])
            record = {
                "workload": path.stem,
                "policy": label,
                "avg_jct_h": round(s["avg_jct_s"] / 3600, 4),
                "makespan_h": round(s["makespan_s"] / 3600, 3),
                "restarts": s["restarts"],
                "jobs": s["jobs"],
                "wall_s": round(time.perf_counter() - started, 1),
            }
            print(json.dumps(record), flush=True)
    print()
    print("| policy | avg JCT (h), mean ± sd | vs sia |")
    print("|---|---|---|")
    base = statistics.mean(jct["sia"]) if jct.get("sia") else None
    for n in names:
        mean = statistics.mean(jct[n]) / 3600
        sd = statistics.stdev(jct[n]) / 3600 if len(jct[n]) > 1 else 0.0
        ratio = f"{statistics.mean(jct[n]) / base:.2f}x" if base else "-"
        print(f"| {n} | {mean:.3f} ± {sd:.3f} | {ratio} |")


if __name__ == "__main__":
    main()
