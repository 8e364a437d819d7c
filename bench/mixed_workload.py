"""Rigid, elastic and parameter-server jobs on one cluster under several policy sets: average JCT
per job kind, utilization, energy, preemptions.

The workload is the README's: 60 Philly jobs (subsampled, arrivals compressed 100×), the 160
elastic jobs of Pollux workload 6 and 40 PS jobs of the SMD workload, merged at time 0, on the
Pollux testbed (16 × 4 T4) without partitions.

    python bench/mixed_workload.py [--traces ../shared/traces] [--faults]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from dlsched.cluster.parse import resolve_cluster
from dlsched.ps.machines import machines_from_cluster
from dlsched.ps.workload import build_workload, workload_trace
from dlsched.runner import Selection
from dlsched.sim.config import FaultConfig, PowerConfig, SimConfig
from dlsched.sim.simulator import simulate, with_task_resources
from dlsched.trace.read import read_trace
from dlsched.trace.schema import Trace
from dlsched.trace.transforms import merge_traces

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
POLICY_SETS = (
    ("fifo", {}),
    ("tiresias", {}),
    ("tiresias", {"elastic": "pollux"}),
    ("tiresias", {"elastic": "pollux", "ps": "smd"}),
)


def workload(traces: Path) -> Trace:
    cluster = resolve_cluster("16x4")
    rigid = Selection(subsample=60, submit_scale=0.01).apply(
        read_trace(traces / "philly" / "philly_jobs.csv").trace, seed=0
    )
    elastic = read_trace(traces / "pollux-workloads" / "workloads" / "workload-6.csv").trace
    machines = machines_from_cluster(with_task_resources(cluster))
    ps = workload_trace(build_workload(40, machines, seed=0, time_scale=0.01))
    return merge_traces([("rigid", rigid), ("elastic", elastic), ("ps", ps)])


def mean_jct(jobs: pa.Table, prefix: str) -> float:
    """Average JCT of the finished jobs whose id starts with ``prefix``."""
    mask = pc.and_(
        pc.starts_with(jobs.column("job_id"), prefix), pc.equal(jobs.column("status"), "finished")
    )
    return float(pc.mean(jobs.filter(mask).column("jct_s")).as_py())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--traces", type=Path, default=SHARED)
    parser.add_argument("--faults", action="store_true", help="MTBF 1 day, reactive power")
    args = parser.parse_args()
    trace = workload(args.traces)
    cluster = resolve_cluster("pollux")
    print(
        "| policies | rigid JCT (s) | elastic JCT (s) | PS JCT (s) | all (s) | GPU util | "
        "energy (kWh) | preemptions | failures | set aside | wall (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for policy, kinds in POLICY_SETS:
        config = SimConfig(
            policy=policy,
            kind_policies=kinds,
            use_partitions=False,
            faults=FaultConfig(mtbf_s=86_400.0) if args.faults else FaultConfig(),
            power=(
                PowerConfig(manager="reactive", compare_baseline=False)
                if args.faults
                else PowerConfig()
            ),
        )
        started = time.perf_counter()
        result = simulate(trace, cluster, config)
        s = result.summary
        names = " + ".join([policy, *(f"{k}={v}" for k, v in kinds.items())])
        print(
            f"| {names} | {mean_jct(result.jobs, 'rigid:'):,.0f} | "
            f"{mean_jct(result.jobs, 'elastic:'):,.0f} | {mean_jct(result.jobs, 'ps:'):,.0f} | "
            f"{s['avg_jct_s']:,.0f} | {s['gpu_utilization']:.3f} | {s['energy_kwh']:,.0f} | "
            f"{s['preemptions']} | {s['failures'] if s['failures'] is not None else '–'} | "
            f"{s['jobs_set_aside']} | {time.perf_counter() - started:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
