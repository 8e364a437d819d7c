"""Lucid against Tiresias, QSSF and Gandiva on a Venus-like trace with Lucid's co-location
profiles.

Lucid's evaluation trace (Venus, September 2020, with per-job workload annotations) is not
public, so this runs the stand-in the issue asks for: ``dlsched trace synth --like venus``
(calibrated to Helios's published Venus statistics, its VC cluster of 2020-09-10), every GPU job
given a workload drawn uniformly from the 66 profiled ones (``--workloads lucid``), jobs only in
their own VC (Lucid's per-VC simulation). Lucid and QSSF rank by the LightGBM duration
estimator (``lgbm``); Tiresias uses Lucid's settings (2 queues at 18,000 GPU-s). Prints one
Markdown row per policy: mean ± standard deviation over the seeds of average JCT and queueing
delay, and Lucid's co-location figures.

    python bench/lucid_colocation.py [--days 14] [--seeds 0,1,2] [--rate-scale 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.synth.helios import HeliosSynthConfig, synthesize_helios
from dlsched.trace.transforms import with_workloads

POLICIES: tuple[tuple[str, dict[str, str], str | None, str], ...] = (
    ("lucid", {}, "lgbm", "Lucid (packing, adaptive)"),
    ("lucid", {"adaptive": "false"}, "lgbm", "Lucid (packing always on)"),
    ("qssf", {}, "lgbm", "QSSF (no packing)"),
    ("gandiva", {}, None, "Gandiva (time-slice or pack, migrate)"),
    ("tiresias", {}, None, "Tiresias"),
    ("fifo", {}, None, "FIFO"),
)


def spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:,.0f}"
    return f"{statistics.mean(values):,.0f} ± {statistics.stdev(values):,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=float, default=14.0)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--rate-scale", type=float, default=1.0)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    runs = []
    for seed in seeds:
        synth = synthesize_helios(
            HeliosSynthConfig("venus", args.days, seed=seed, rate_scale=args.rate_scale)
        )
        runs.append((with_workloads(synth.trace, "lucid", seed), synth.cluster))
    print(f"{len(runs[0][0]):,} jobs (seed {seeds[0]}), {runs[0][1].total_gpus:,} GPUs")
    print("| policy | avg JCT (s) | avg queue (s) | pairs | mean shared speed | wall (s) |")
    print("|---|---|---|---|---|---|")
    for policy, options, estimator, label in POLICIES:
        jct, queue, pairs, speed, wall = [], [], [], [], 0.0
        for seed, (trace, cluster) in zip(seeds, runs, strict=True):
            config = SimConfig(
                policy=policy, policy_options=options, estimator=estimator, seed=seed
            )
            started = time.perf_counter()
            summary = simulate(trace, cluster, config).summary
            wall += time.perf_counter() - started
            jct.append(summary["avg_jct_s"])
            queue.append(summary["avg_queue_s"])
            c = summary["colocation"]
            if c["pairs"] is not None:
                pairs.append(c["pairs"])
                speed.append(c["mean_shared_speed"] or 1.0)
        shown_pairs = spread(pairs) if pairs else "–"
        shown_speed = f"{statistics.mean(speed):.3f}" if speed else "–"
        print(
            f"| {label} | {spread(jct)} | {spread(queue)} | {shown_pairs} | {shown_speed} | "
            f"{wall / len(seeds):.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
