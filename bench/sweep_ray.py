"""The same sweep grid in a local process pool and on a three-node Ray cluster (head + 2
workers, one CPU each, started in network/PID namespaces on this machine): checks the two give
the same numbers and prints both wall times and their ratio.

Grid: all Philly jobs (../shared/traces, 82,247) on philly-vcs, policies fifo, sjf, srtf and
tiresias, random placement, seeds 0, 1, 2 (12 cells).

    python bench/sweep_ray.py [--policies fifo,sjf,srtf,tiresias] [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

from dlsched.sweep.grid import Grid
from dlsched.sweep.run import run_sweep
from dlsched.testing.ray_cluster import have_ray_and_namespaces, run_with_ray_cluster

ROOT = Path(__file__).resolve().parent.parent
PHILLY = ROOT.parent / "shared" / "traces" / "philly" / "philly_jobs.csv"


def results(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open() as handle:
        return list(csv.DictReader(handle))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default="fifo,sjf,srtf,tiresias")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--trace", default=str(PHILLY))
    parser.add_argument("--cluster", default="philly-vcs")
    args = parser.parse_args()
    reason = have_ray_and_namespaces()
    if reason is not None:
        sys.exit(f"cannot start a Ray cluster here: {reason}")
    grid = Grid.of(
        trace=args.trace,
        cluster=args.cluster,
        policy=tuple(args.policies.split(",")),
        placement="random",
        seed=tuple(int(s) for s in args.seeds.split(",")),
    )
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        started = time.perf_counter()
        run_sweep(grid, base / "pool", workers=2)
        pool_s = time.perf_counter() - started
        dlsched = str(Path(sys.executable).parent / "dlsched")
        command = [
            dlsched, "sweep", "--trace", args.trace, "--cluster", args.cluster,
            "--policy", args.policies, "--placement", "random", "--seed", args.seeds,
            "--ray-address", "127.0.0.1:6379", "--out", str(base / "ray"), "--no-progress",
        ]  # fmt: skip
        started = time.perf_counter()
        run_with_ray_cluster(command)
        ray_s = time.perf_counter() - started
        same = results(base / "pool") == results(base / "ray")
    print(
        json.dumps(
            {
                "cells": len(grid.cells()),
                "pool_workers": 2,
                "pool_wall_s": round(pool_s, 1),
                "ray_nodes": 3,
                "ray_wall_s_including_cluster_start": round(ray_s, 1),
                "ray_over_pool": round(ray_s / pool_s, 2),
                "same_results": same,
            }
        )
    )


if __name__ == "__main__":
    main()
