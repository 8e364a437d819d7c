"""SMD's allocation step against the exact optimum (brute force) on small random instances.

``python bench/smd_gap.py --instances 50 --seed 0`` prints one JSON line
``{"instances": N, "mean_gap": x, "max_gap": y}`` (gaps as fractions of the optimum).
``--load-budget 0`` turns off the enumeration of load vectors, leaving SMD's load
neighbourhood search (what runs on clusters too large to enumerate).
"""

from __future__ import annotations

import argparse
import json
import random

from dlsched.ps.instances import gap, random_instance
from dlsched.ps.smd import SmdConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--instances", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-jobs", type=int, default=6)
    parser.add_argument("--max-machines", type=int, default=4)
    parser.add_argument("--load-budget", type=int, default=SmdConfig().load_budget)
    args = parser.parse_args()
    config = SmdConfig(load_budget=args.load_budget)
    rng = random.Random(args.seed)
    gaps = [
        gap(random_instance(rng, args.max_jobs, args.max_machines), config)[2]
        for _ in range(args.instances)
    ]
    print(
        json.dumps(
            {"instances": len(gaps), "mean_gap": sum(gaps) / len(gaps), "max_gap": max(gaps)}
        )
    )


if __name__ == "__main__":
    main()
