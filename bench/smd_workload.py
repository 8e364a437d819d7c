"""Average JCT of SMD against Optimus-style allocation, fixed-request FIFO and Tiresias on a PS
workload (arrivals from the bundled Philly trace, networks from the zoo).

``python bench/smd_workload.py --jobs 200`` prints one JSON line per policy and a last line
with each baseline's mean JCT over SMD's; ``--out DIR`` also writes the run directory.
"""

from __future__ import annotations

import argparse
import json
import time

from dlsched.ps.report import summarize, write_run
from dlsched.ps.simulator import simulate

from dlsched.ps.machines import uniform_machines
from dlsched.ps.policies import POLICY_NAMES, make_policy
from dlsched.ps.workload import build_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--machines", type=int, default=8)
    parser.add_argument("--gpus", type=int, default=4)
    parser.add_argument("--time-scale", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", default=",".join(POLICY_NAMES))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    machines = uniform_machines(args.machines, gpus=args.gpus)
    jobs = build_workload(args.jobs, machines, seed=args.seed, time_scale=args.time_scale)
    results = []
    for name in args.policies.split(","):
        started = time.perf_counter()
        result = simulate(jobs, machines, make_policy(name))
        results.append(result)
        line = {
            "policy": name,
            "mean_jct_s": round(result.mean_jct, 1),
            "infeasible": len(result.infeasible),
            "decisions": result.decisions,
            "decide_s": round(result.decide_seconds, 2),
            "wall_s": round(time.perf_counter() - started, 2),
        }
        print(json.dumps(line), flush=True)
    summary = summarize(results)
    print(json.dumps({n: round(f.get("jct_over_smd") or 0.0, 3) for n, f in summary.items()}))
    if args.out:
        write_run(args.out, results, vars(args))


if __name__ == "__main__":
    main()
