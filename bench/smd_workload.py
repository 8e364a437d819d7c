"""Average JCT of SMD against Optimus-style allocation, FIFO and Tiresias (at each job's
requested workers and PS) on a PS workload (arrivals from the bundled Philly trace, networks
from the zoo), on the one simulator.

``python bench/smd_workload.py --jobs 200`` prints one JSON line per policy (mean JCT over the
jobs that ran, jobs set aside, the policy's scheduling cycles, wall time) and a last line with
each policy's mean JCT over SMD's. ``dlsched ps simulate`` runs the same workload and writes
the run directories.
"""

from __future__ import annotations

import argparse
import json
import time

from dlsched.cluster.parse import resolve_cluster
from dlsched.ps.machines import machines_from_cluster
from dlsched.ps.policies import POLICY_NAMES
from dlsched.ps.workload import build_workload, workload_trace
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate, with_task_resources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--cluster", default="8x4", help="as dlsched simulate --cluster")
    parser.add_argument("--time-scale", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", default=",".join((*POLICY_NAMES, "fifo", "tiresias")))
    args = parser.parse_args()
    cluster = resolve_cluster(args.cluster)
    machines = machines_from_cluster(with_task_resources(cluster))
    jobs = build_workload(args.jobs, machines, seed=args.seed, time_scale=args.time_scale)
    trace = workload_trace(jobs)
    means: dict[str, float | None] = {}
    for name in args.policies.split(","):
        started = time.perf_counter()
        summary = simulate(trace, cluster, SimConfig(policy=name, seed=args.seed)).summary
        means[name] = summary["avg_jct_s"]
        line = {
            "policy": name,
            "mean_jct_s": None if summary["avg_jct_s"] is None else round(summary["avg_jct_s"], 1),
            "set_aside": summary["jobs_set_aside"],
            "cycles": summary["cycles"],
            "wall_s": round(time.perf_counter() - started, 2),
        }
        print(json.dumps(line), flush=True)
    base = means.get("smd")
    print(
        json.dumps(
            {n: None if not base or m is None else round(m / base, 3) for n, m in means.items()}
        )
    )


if __name__ == "__main__":
    main()
