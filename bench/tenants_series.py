"""The size and cost of the quota time series (``tenants.parquet``) on Philly's 11 VCs.

Replays the bundled Philly jobs of 2017-10-01..11-30 on ``philly-vcs`` with the bundled
``philly-cohort`` queues (FIFO, consolidate), arrivals compressed by ``--submit-scale``, and
prints: jobs, series rows (and rows per job), the Parquet file's size, and the time building
the series takes as a share of the whole simulation (one run, one process).

    python bench/tenants_series.py [--submit-scale 0.25]
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

import pyarrow.parquet as pq

from dlsched.cluster.parse import resolve_cluster
from dlsched.runner import Selection
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import Simulator
from dlsched.tenancy.series import quota_series
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace

QUEUES = Path(__file__).resolve().parents[1] / "src/dlsched/data/queues/philly-cohort.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--submit-scale", type=float, default=0.25)
    args = ap.parse_args()
    trace = read_trace(bundled_trace_path("philly_2017-10-01_2017-12-01")).trace
    trace = Selection(submit_scale=args.submit_scale).apply(trace, 0)
    sim = Simulator(
        trace, resolve_cluster("philly-vcs"), SimConfig(use_partitions=False, queues=str(QUEUES))
    )
    began = time.perf_counter()
    result = sim.run()
    total = time.perf_counter() - began
    assert sim.admission is not None and result.tenants is not None
    began = time.perf_counter()
    series = quota_series(sim.admission, result.summary["tenants"])
    build = time.perf_counter() - began
    buffer = io.BytesIO()
    pq.write_table(series, buffer)
    jobs = result.summary["jobs"]
    print(
        f"submit scale {args.submit_scale}: {jobs:,} jobs, {len(sim.admission.changes):,} changes"
    )
    print(
        f"series rows {series.num_rows:,} ({series.num_rows / jobs:.2f} per job), "
        f"parquet {buffer.tell() / 1024:,.0f} KiB"
    )
    print(
        f"simulation {total:.2f} s; building the series {build:.3f} s "
        f"({build / total:.1%} of the run)"
    )


if __name__ == "__main__":
    main()
