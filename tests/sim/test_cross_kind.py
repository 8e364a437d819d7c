"""One engine for every job kind: FIFO on fixed-size elastic jobs equals FIFO on the same jobs
written as a rigid trace whose run times are what the profiles give.

Under an ordering policy an elastic job runs at its requested GPUs and batch, so alone on one
node it takes :meth:`PerfBook.isolated_time` plus the elastic kind's first-start stall (rigid
jobs have none at their first start). With every job fitting one node, FIFO (non-preemptive)
and the placer see the same demands at the same instants in both runs, so they make the same
decisions: same GPUs, same start times, same JCTs.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from dlsched.cluster.parse import resolve_cluster
from dlsched.perf.perfbook import PerfBook, variant_for_gpu_type
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import RunResult, Segment, simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from dlsched.trace.schema import Trace

CLUSTER = resolve_cluster("t4:3x4")
JOBS = 40
GPUS_PER_NODE = 4


def elastic_trace() -> Trace:
    """The first jobs of the bundled Pollux workload-6, each on at most one node's GPUs."""
    rows = read_trace(bundled_trace_path("pollux_workload-6")).trace.table.slice(0, JOBS)
    cols = rows.to_pydict()
    return Trace.from_columns(
        {
            "job_id": cols["job_id"],
            "submit_time": cols["submit_time"],
            "num_gpus": [min(g, GPUS_PER_NODE) for g in cols["num_gpus"]],
            "application": cols["application"],
            "batch_size": cols["batch_size"],
            "kind": ["elastic"] * JOBS,
        },
        "elastic",
    )


def rigid_twin(trace: Trace) -> Trace:
    """``trace``'s jobs as rigid jobs running for the time the profiles give them."""
    perf = PerfBook()
    variant = variant_for_gpu_type(CLUSTER.nodes[0].gpu_type)
    first_start = SimConfig().checkpoint.for_kind("elastic").first_start_s
    cols = trace.table.to_pydict()
    durations = [
        perf.isolated_time(app, variant, gpus, batch, GPUS_PER_NODE) + first_start
        for app, gpus, batch in zip(
            cols["application"], cols["num_gpus"], cols["batch_size"], strict=True
        )
    ]
    return Trace.from_columns(
        {
            "job_id": cols["job_id"],
            "submit_time": cols["submit_time"],
            "num_gpus": cols["num_gpus"],
            "duration": durations,
        },
        "rigid",
    )


def gpus_held(segments: list[Segment]) -> dict[int, list[tuple[int, int, float, float]]]:
    out: dict[int, list[tuple[int, int, float, float]]] = defaultdict(list)
    for s in segments:
        out[s.row].append((s.node, s.gpu, s.begin, s.end))
    return {row: sorted(held) for row, held in out.items()}


def test_fifo_on_elastic_jobs_equals_fifo_on_their_rigid_twins() -> None:
    elastic = elastic_trace()
    runs: list[RunResult] = [
        simulate(t, CLUSTER, SimConfig(policy="fifo"), record_segments=True)
        for t in (elastic, rigid_twin(elastic))
    ]
    kinds = [r.summary["job_kinds"] for r in runs]
    assert kinds == [{"rigid": 0, "elastic": JOBS, "ps": 0}, {"rigid": JOBS, "elastic": 0, "ps": 0}]
    tables = [r.jobs.to_pydict() for r in runs]
    assert tables[0]["status"] == tables[1]["status"] == ["finished"] * JOBS
    # The cluster is contended: the comparison covers queueing, not only jobs running alone.
    assert sum(q > 0 for q in tables[0]["queue_s"]) >= JOBS // 4
    for name in ("first_start_s", "end_s", "jct_s"):
        assert tables[0][name] == pytest.approx(tables[1][name], rel=1e-6), name
    held = [gpus_held(r.segments or []) for r in runs]
    assert held[0].keys() == held[1].keys() == set(range(JOBS))
    for row, elastic_held in held[0].items():
        rigid_held = held[1][row]
        assert [(n, g) for n, g, _, _ in elastic_held] == [(n, g) for n, g, _, _ in rigid_held]
        assert [b for _, _, b, _ in elastic_held] == pytest.approx([b for _, _, b, _ in rigid_held])
