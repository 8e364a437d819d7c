"""ElasticFlow's Figure 9 setting: deadline satisfaction on ``1000job_1500lam.csv``.

The trace of the ElasticFlow evaluation (``../shared/traces/elasticflow/traces/generated/``, its
generator's output, Apache-2.0) on N nodes × 8 A100 with a 240-s slot, under ElasticFlow's four
variants (admission control on/off × marginal/EDF allocation) and the ordering baselines EDF and
Tiresias at requested sizes. Prints one Markdown row per run.

    python bench/elasticflow_deadlines.py [--nodes 8,16,32]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dlsched.cluster.shorthand import parse_shorthand
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace import read_trace

TRACE = (
    Path(__file__).resolve().parents[2]
    / "shared/traces/elasticflow/traces/generated/1000job_1500lam.csv"
)
VARIANTS = (
    ("elasticflow", {"admission": "true", "allocation": "marginal"}, "ElasticFlow"),
    ("elasticflow", {"admission": "false", "allocation": "marginal"}, "EDF + elastic scaling"),
    ("elasticflow", {"admission": "true", "allocation": "edf"}, "EDF + admission control"),
    ("elasticflow", {"admission": "false", "allocation": "edf"}, "EDF (elastic)"),
    ("edf", {}, "EDF (requested GPUs, preemptive)"),
    ("tiresias", {}, "Tiresias (requested GPUs)"),
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", default="8,16,32")
    parser.add_argument("--trace", default=str(TRACE))
    args = parser.parse_args()
    trace = read_trace(args.trace).trace
    print("| nodes × 8 A100 | policy | met | late | declined | satisfaction | wall (s) |")
    print("|---|---|---|---|---|---|---|")
    for nodes in (int(n) for n in args.nodes.split(",")):
        cluster = parse_shorthand(f"a100:{nodes}x8")
        for policy, options, label in VARIANTS:
            opts = dict(options, interval_s="240") if policy == "elasticflow" else {}
            started = time.perf_counter()
            summary = simulate(
                trace, cluster, SimConfig(policy=policy, policy_options=opts)
            ).summary
            wall = time.perf_counter() - started
            d = summary["deadlines"]
            print(
                f"| {nodes} | {label} | {d['met']} | {d['missed_late']} | {d['declined']} | "
                f"{d['satisfaction_ratio']:.3f} | {wall:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
