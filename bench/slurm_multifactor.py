"""Slurm multifactor priority in the simulator: cost of re-keying waiting jobs, and effect of
the weights, on the 990 jobs of Philly VC 0e4a51 (the demo's trace) on 24 nodes x 4 GPUs (a
small cluster, so jobs queue; its 8-GPU jobs take 2 nodes, the others 1, so job size differs).

Runs, in one process: fifo; slurm-multifactor without a conf (every weight 0: submit order, so
the same schedule as fifo, but every waiting job re-keyed at each cycle); and
slurm-multifactor with age and job-size weights (favouring small or large jobs). Prints wall
time (best of ``--repeat``), its ratio to fifo, average JCT and queueing, and whether the
zero-weight run scheduled every job as fifo did.

    python bench/slurm_multifactor.py
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import RunResult, simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace

CLUSTER = "24x4"
SIZE_OPTIONS = {"cluster_nodes": "24", "cluster_cpus": "96", "node_gpus": "4"}
CONFS = {
    "age+large": "PriorityWeightAge=1000\nPriorityWeightJobSize=1000\nPriorityMaxAge=7-0\n",
    "age+small": (
        "PriorityWeightAge=1000\nPriorityWeightJobSize=1000\nPriorityMaxAge=7-0\n"
        "PriorityFavorSmall=YES\n"
    ),
}


def timed(config: SimConfig, repeat: int) -> tuple[float, RunResult]:
    trace = read_trace(bundled_trace_path("vc_0e4a51")).trace
    cluster = resolve_cluster(CLUSTER)
    best, result = float("inf"), None
    for _ in range(repeat):
        began = time.perf_counter()
        result = simulate(trace, cluster, config)
        best = min(best, time.perf_counter() - began)
    assert result is not None
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = {
            "fifo": SimConfig(policy="fifo"),
            "multifactor, no weights": SimConfig(policy="slurm-multifactor"),
        }
        for label, text in CONFS.items():
            path = Path(tmp) / f"{label}.conf"
            path.write_text(text)
            runs[f"multifactor {label}"] = SimConfig(
                policy="slurm-multifactor", policy_options={"conf": str(path), **SIZE_OPTIONS}
            )
        results = {label: timed(config, args.repeat) for label, config in runs.items()}
    base_s = results["fifo"][0]
    print(f"{'run':<28} {'wall s':>8} {'x fifo':>7} {'avg JCT s':>10} {'avg queue s':>12}")
    for label, (wall, result) in results.items():
        jobs = result.jobs.to_pydict()
        jct = sum(jobs["jct_s"]) / len(jobs["jct_s"])
        queue = sum(j - r for j, r in zip(jobs["jct_s"], jobs["run_time_s"], strict=True))
        print(
            f"{label:<28} {wall:>8.3f} {wall / base_s:>7.2f} {jct:>10,.0f} "
            f"{queue / len(jobs['jct_s']):>12,.0f}"
        )
    same = (
        results["fifo"][1].jobs.column("first_start_s").to_pylist()
        == results["multifactor, no weights"][1].jobs.column("first_start_s").to_pylist()
    )
    print(f"zero-weight multifactor starts every job when fifo does: {same}")


if __name__ == "__main__":
    main()
