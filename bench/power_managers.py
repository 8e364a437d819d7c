"""Power management on the helios-philly preset: CES and the reactive baseline under FIFO and
QSSF, each against the same run with every node always on (issue #4's bar: CES saves ≥ 10% of
the energy while average queueing grows by ≤ 5%).

Prints one JSON line per run and a Markdown table for bench/RESULTS.md.

    python bench/power_managers.py [--policies fifo,qssf] [--managers ces,reactive]
"""

from __future__ import annotations

import argparse
import json
import time

from dlsched.cluster.parse import resolve_cluster
from dlsched.presets import get_preset
from dlsched.runner import load_trace
from dlsched.sim.config import PowerConfig, SimConfig
from dlsched.sim.simulator import simulate

KEYS = (
    "energy_kwh",
    "baseline_energy_kwh",
    "energy_saved_fraction",
    "energy_saved_vs_baseline_fraction",
    "mean_powered_off_nodes",
    "wakeups",
    "wakeups_per_day",
    "avg_queue_s",
    "baseline_avg_queue_s",
    "extra_queue_fraction",
    "forecast_smape",
    "sim_wall_s",
)


def run(policy: str, manager: str) -> dict[str, object]:
    estimator = "noisy-oracle" if policy == "qssf" else None
    config = SimConfig(policy=policy, estimator=estimator, power=PowerConfig(manager=manager))
    exp = get_preset("helios-philly").experiment(config)
    started = time.perf_counter()
    summary = simulate(load_trace(exp), resolve_cluster(exp.cluster), exp.sim).summary
    row: dict[str, object] = {"policy": policy, "manager": manager}
    row.update({k: summary.get(k) for k in KEYS})
    row["wall_s_with_baseline"] = time.perf_counter() - started
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default="fifo,qssf")
    parser.add_argument("--managers", default="ces,reactive")
    args = parser.parse_args()
    rows = []
    for policy in args.policies.split(","):
        for manager in args.managers.split(","):
            row = run(policy, manager)
            print(json.dumps(row), flush=True)
            rows.append(row)
    print()
    print(
        "| policy | manager | energy saved vs always-on | mean nodes off | wake-ups/day "
        "| avg queue (s) | always-on queue (s) | queue change | forecast SMAPE |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        smape = r["forecast_smape"]
        print(
            f"| {r['policy']} | {r['manager']} | {r['energy_saved_vs_baseline_fraction']:.1%} "
            f"| {r['mean_powered_off_nodes']:.1f} | {r['wakeups_per_day']:.1f} "
            f"| {r['avg_queue_s']:,.0f} | {r['baseline_avg_queue_s']:,.0f} "
            f"| {r['extra_queue_fraction']:+.1%} "
            f"| {'—' if smape is None else f'{smape:.1f}%'} |"
        )


if __name__ == "__main__":
    main()
