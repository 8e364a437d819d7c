"""Wall-clock time of one SMD decision (admission, candidates, the Dinkelbach loop over
knapsacks, polish) at 50, 200 and 1,000 active jobs.

``python bench/smd_solver.py`` prints one JSON line per size: machines, active and admitted
jobs, the knapsack solver "auto" chose, the seconds of the first decision (cold: nothing
cached yet) and the median seconds of ``--repeats`` decisions (the first included). The
policy keeps each job's time alone across decisions, as it does in a simulation.
The cluster grows with the job count (one 4-GPU machine per 4 active jobs, at most 64).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from dlsched.ps.job import PsJob
from dlsched.ps.machines import uniform_machines
from dlsched.ps.policy_base import JobState
from dlsched.ps.policy_smd import SmdPolicy
from dlsched.ps.smd import SmdConfig
from dlsched.ps.zoo import network

MODELS = ("resnet50", "vgg16", "inception_v3", "bert_base", "transformer_base")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="50,200,1000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        rng = random.Random(args.seed)
        machines = uniform_machines(min(64, max(2, size // 4)), gpus=4)
        states = [
            JobState(
                PsJob(f"j{i}", network(rng.choice(MODELS)), 32, rng.uniform(1e5, 1e8)),
                rng.uniform(1e5, 1e8),
                0.0,
                None,
            )
            for i in range(size)
        ]
        policy = SmdPolicy(config=SmdConfig())
        times = []
        decided = {}
        for _ in range(args.repeats):
            started = time.perf_counter()
            decided = dict(policy.decide(0.0, states, machines))
            times.append(time.perf_counter() - started)
        config = SmdConfig()
        solver = (
            "exact"
            if len(decided) <= config.exact_jobs
            else ("lp" if len(decided) <= config.lp_jobs else "greedy")
        )
        print(
            json.dumps(
                {
                    "active_jobs": size,
                    "machines": len(machines),
                    "admitted": len(decided),
                    "solver": solver,
                    "first_s": round(times[0], 3),
                    "median_s": round(statistics.median(times), 3),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
