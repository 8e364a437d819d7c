"""Average JCT of elastic policies on the Pollux workloads, with ratios to Tiresias.

Runs tiresias (dlsched's thresholds, and the Pollux artifact's 57,600 GPU-s threshold as
``tiresias-57.6k``; both with placement ``pack``, as the artifact places its baselines),
optimus (remaining work from its fitted loss curve; and, as the Pollux artifact's Optimus does,
from the epochs left: ``optimus-epochs``), pollux and ones on ``workload-1..8`` of the Pollux
evaluation (``../shared/traces/pollux-workloads/workloads``; ``--load workloads-0.5`` for the
half-load files) on the ``pollux`` cluster (16 x 4 T4) with the one simulator, and prints one
JSON line per run and a Markdown table.
Published Pollux-artifact figures for workload-6 (Qiao et al., OSDI'21 artifact): Tiresias
3,469.69 s, Optimus 5,301.88 s, Pollux 2,446.13 s.

    python bench/elastic_workloads.py [--workloads 1,2,...] [--policies tiresias,...]
        [--load workloads] [--seed 0] [--traces ../shared/traces]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.read import read_trace

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "traces"
POLICIES = {
    "tiresias": ("tiresias", {}, "pack"),
    "tiresias-57.6k": ("tiresias", {"thresholds": "57600"}, "pack"),
    "optimus": ("optimus", {}, "consolidate"),
    "optimus-epochs": ("optimus", {"remaining": "epochs"}, "consolidate"),
    "pollux": ("pollux", {}, "consolidate"),
    "ones": ("ones", {}, "consolidate"),
}
"""Label: policy, options and placement (allocation policies place their jobs themselves)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workloads", default="1,2,3,4,5,6,7,8")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--load", default="workloads", help="workloads, workloads-0.5, ...")
    parser.add_argument("--traces", type=Path, default=TRACES, help="the shared traces")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cluster = resolve_cluster("pollux")
    names = args.policies.split(",")
    table: dict[str, dict[str, float]] = {}
    for w in args.workloads.split(","):
        trace = read_trace(args.traces / "pollux-workloads" / args.load / f"workload-{w}.csv").trace
        for label in names:
            policy, options, placement = POLICIES[label]
            config = SimConfig(
                policy=policy, policy_options=options, seed=args.seed, placement=placement
            )
            started = time.perf_counter()
            run = simulate(trace, cluster, config)
            wall = time.perf_counter() - started
            s = run.summary
            table.setdefault(w, {})[label] = s["avg_jct_s"]
            record = {
                "workload": w,
                "policy": label,
                "avg_jct_s": s["avg_jct_s"],
                "restarts": s["restarts"],
                "ftf_rho_max": s["ftf_rho_max"],
                "wall_s": round(wall, 1),
            }
            print(json.dumps(record), flush=True)
    print()
    ratio_names = [n for n in names if n != "tiresias"]
    headers = [
        "workload",
        *(f"{n} JCT (s)" for n in names),
        *(f"{n}/tiresias" for n in ratio_names),
    ]
    print("| " + " | ".join(headers) + " |")
    print("|---" * len(headers) + "|")
    for w, row in table.items():
        base = row.get("tiresias")
        cells = [f"{row[n]:,.0f}" for n in names]
        ratios = [f"{row[n] / base:.2f}" if base else "-" for n in ratio_names]
        print(f"| {w} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    main()
