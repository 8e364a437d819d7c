"""Philly's 11 VCs: today's hard partitions against quotas with cohort borrowing.

Both runs replay the bundled Philly jobs of 2017-10-01..11-30 (68,510 jobs) on ``philly-vcs``
under FIFO and consolidate placement: "partitions" runs each job only in its VC's nodes;
"cohort" pools the nodes and admits by the bundled Kueue manifests
(``src/dlsched/data/queues/philly-cohort.yaml``: nominal quota = the VC's GPUs, borrowing
unused quota, ``reclaimWithinCohort: Any``). Arrivals can be compressed (``--submit-scale``) to
raise the load. Prints average JCT and queueing per VC and overall, GPU utilization and the
reclaim preemptions.

    python bench/tenants_philly.py [--submit-scale 0.5]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pyarrow.compute as pc

from dlsched.cluster.parse import resolve_cluster
from dlsched.runner import Selection
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace

QUEUES = Path(__file__).resolve().parents[1] / "src/dlsched/data/queues/philly-cohort.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--submit-scale", type=float, default=1.0)
    args = ap.parse_args()
    trace = read_trace(bundled_trace_path("philly_2017-10-01_2017-12-01")).trace
    trace = Selection(submit_scale=args.submit_scale).apply(trace, 0)
    cluster = resolve_cluster("philly-vcs")
    runs = {
        "partitions": SimConfig(),
        "cohort": SimConfig(use_partitions=False, queues=str(QUEUES)),
    }
    per_vc: dict[str, dict[str, tuple[float, float]]] = {}
    print(f"submit scale {args.submit_scale}")
    for name, cfg in runs.items():
        result = simulate(trace, cluster, cfg)
        s = result.summary
        jobs = result.jobs.filter(pc.equal(result.jobs["status"], "finished"))
        vcs = (
            trace.table.column("vc")
            .take(pc.index_in(jobs["job_id"], trace.table["job_id"]))
            .to_pylist()
        )
        jct = jobs["jct_s"].to_pylist()
        queue = jobs["queue_s"].to_pylist()
        sums: dict[str, list[float]] = {}
        for vc, j, q in zip(vcs, jct, queue, strict=True):
            acc = sums.setdefault(vc, [0.0, 0.0, 0.0])
            acc[0] += j
            acc[1] += q
            acc[2] += 1
        per_vc[name] = {vc: (a[0] / a[2], a[1] / a[2]) for vc, a in sums.items()}
        reclaims = (s["preemptions_by_cause"] or {}).get("reclaim", "-")
        print(
            f"{name:10s} jobs {s['jobs']:,}  avg JCT {s['avg_jct_s']:,.0f} s  avg queue "
            f"{s['avg_queue_s']:,.0f} s  GPU util {s['gpu_utilization']:.1%}  "
            f"reclaim preemptions {reclaims}  Jain {s['tenant_fairness_jain'] or '-'}  "
            f"wall {s['sim_wall_s']:.1f} s"
        )
    print("| VC | JCT partitions (s) | JCT cohort (s) | queue partitions (s) | queue cohort (s) |")
    print("|---|---|---|---|---|")
    for vc in sorted(per_vc["partitions"]):
        p, c = per_vc["partitions"][vc], per_vc["cohort"].get(vc, (float("nan"),) * 2)
        print(f"| {vc} | {p[0]:,.0f} | {c[0]:,.0f} | {p[1]:,.0f} | {c[1]:,.0f} |")


if __name__ == "__main__":
    main()
