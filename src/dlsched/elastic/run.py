"""Running an elastic workload end to end: trace rows to jobs, the cluster to a view, the
simulation, and the tables and summary of a dlsched run directory."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from dlsched.cluster.spec import ClusterSpec
from dlsched.elastic.perfbook import PerfBook, check_application, variant_for_gpu_type
from dlsched.elastic.registry import create_elastic_policy
from dlsched.elastic.simulator import (
    ElasticConfig,
    ElasticJobSpec,
    ElasticOutcome,
    ElasticSimulator,
)
from dlsched.elastic.types import ClusterView, NodeView
from dlsched.metrics.jobs import FINISHED, JOBS_SCHEMA, SET_ASIDE
from dlsched.metrics.summary import summarize
from dlsched.metrics.timeline import TimelineRecorder
from dlsched.trace.schema import Trace

PARTITION = "default"
TOO_BIG = "more GPUs than the cluster"


def is_elastic_trace(trace: Trace) -> bool:
    """Whether every job is described by an application and batch size and none by a run
    time (a Pollux workload): such traces run in the elastic simulator."""
    if len(trace) == 0:
        return False
    return bool(
        trace.column("application").null_count == 0
        and trace.column("batch_size").null_count == 0
        and trace.column("duration").null_count == len(trace)
    )


def specs_from_trace(trace: Trace) -> list[ElasticJobSpec]:
    """One job spec per trace row; ValueError naming the job for an unprofiled application
    or a non-positive GPU count or batch."""
    specs = []
    rows = trace.table.select(
        ["job_id", "submit_time", "application", "num_gpus", "batch_size"]
    ).to_pylist()
    for row in rows:
        where = f"trace {trace.source or '<memory>'}: job {row['job_id']!r}"
        app = row["application"]
        if app is None:
            raise ValueError(f"{where}: application: missing; expected one of the profiled")
        try:
            check_application(app)
        except ValueError as exc:
            raise ValueError(f"{where}: application: {exc}") from None
        if row["num_gpus"] < 1 or row["batch_size"] is None or row["batch_size"] < 1:
            raise ValueError(
                f"{where}: num_gpus {row['num_gpus']} / batch_size {row['batch_size']}: "
                "expected positive integers"
            )
        specs.append(
            ElasticJobSpec(
                row["job_id"], row["submit_time"], app, row["num_gpus"], row["batch_size"]
            )
        )
    return specs


def cluster_view(spec: ClusterSpec) -> ClusterView:
    """The nodes with GPUs of ``spec``, each with the profile variant of its GPU type."""
    nodes = [n for n in spec.nodes if n.gpus > 0]
    if not nodes:
        raise ValueError(f"cluster {spec.name!r} has no GPUs")
    return ClusterView(
        tuple(
            NodeView(i, n.name, n.gpus, n.gpu_type, variant_for_gpu_type(n.gpu_type))
            for i, n in enumerate(nodes)
        )
    )


@dataclass
class ElasticRun:
    """Tables and summary of one elastic run, ready for :func:`dlsched.metrics.rundir.write_run`."""

    jobs: pa.Table
    timeline: pa.Table
    summary: dict[str, Any]
    outcome: ElasticOutcome


def run_elastic(
    trace: Trace,
    cluster: ClusterSpec,
    policy: str,
    options: Mapping[str, str] | None = None,
    seed: int = 0,
    config: ElasticConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
    timeline_step_s: float = 60.0,
) -> ElasticRun:
    """Simulate ``trace`` (application-described jobs) on ``cluster`` under elastic ``policy``.

    Jobs asking for more GPUs than the cluster has are set aside (counted in the summary).
    The summary adds finish-time fairness: per job ``rho = JCT / isolated JCT``, the isolated
    JCT being its run alone on its requested GPUs (consolidated, on the cluster's main GPU
    type) at its requested batch, plus one restart delay.
    """
    cfg = config or ElasticConfig(seed=seed)
    view = cluster_view(cluster)
    all_specs = specs_from_trace(trace)
    runnable = [s for s in all_specs if s.gpus <= view.total_gpus]
    perf = PerfBook()
    pol = create_elastic_policy(policy, dict(options or {}))
    sim = ElasticSimulator(runnable, view, pol, cfg, perf)
    outcome = sim.run(progress)
    gpn = max(n.gpus for n in view.nodes if n.variant == view.main_variant)
    by_name = {j.spec.name: j for j in outcome.jobs}
    cols: dict[str, list[Any]] = {f.name: [] for f in JOBS_SCHEMA}
    rhos = []
    for s in all_specs:
        j = by_name.get(s.name)
        cols["job_id"].append(s.name)
        cols["partition"].append(PARTITION if j else None)
        cols["status"].append(FINISHED if j else SET_ASIDE)
        cols["reason"].append(None if j else TOO_BIG)
        cols["gpus"].append(s.gpus)
        cols["gpu_milli"].append(1000)
        cols["submit_s"].append(s.submit_time)
        if j is None or j.end is None or j.first_start is None:
            for name in ("first_start_s", "end_s", "queue_s", "jct_s", "run_time_s"):
                cols[name].append(None)
            for name in ("preemptions", "restarts"):
                cols[name].append(0)
            cols["gpu_seconds"].append(0.0)
            cols["lost_gpu_seconds"].append(0.0)
            continue
        cols["first_start_s"].append(j.first_start)
        cols["end_s"].append(j.end)
        cols["queue_s"].append(j.first_start - s.submit_time)
        jct = j.end - s.submit_time
        cols["jct_s"].append(jct)
        cols["run_time_s"].append(j.end - j.first_start)
        cols["preemptions"].append(j.preemptions)
        cols["restarts"].append(j.restarts)
        cols["gpu_seconds"].append(j.attained)
        cols["lost_gpu_seconds"].append(j.lost_gpu_s)
        alone = perf.isolated_time(s.application, view.main_variant, s.gpus, s.batch_size, gpn)
        rhos.append(jct / (alone + cfg.restart_s))
    jobs = pa.table(cols, schema=JOBS_SCHEMA)
    timeline = TimelineRecorder((PARTITION,), [view.total_gpus], timeline_step_s)
    for r in outcome.rounds:
        timeline.record(
            0, r.time, r.busy_gpus, view.total_gpus, r.running, r.pending, r.pending_gpus
        )
    end = max((j.end for j in outcome.jobs if j.end is not None), default=0.0)
    start = min((s.submit_time for s in runnable), default=0.0)
    summary = summarize(
        jobs,
        {PARTITION: view.total_gpus},
        policy,
        "elastic",
        outcome.wall_s,
        extra={
            "simulator": "elastic",
            "policy_options": dict(options or {}),
            "seed": cfg.seed,
            "round_s": cfg.round_s,
            "restart_s": cfg.restart_s,
            "rounds_decided": outcome.rounds_decided,
            "ftf_rho_mean": sum(rhos) / len(rhos) if rhos else None,
            "ftf_rho_max": max(rhos) if rhos else None,
            "gpu_types": {v: view.gpus_of_variant(v) for v in view.variants},
        },
    )
    return ElasticRun(jobs, timeline.to_table(start, math.ceil(end)), summary, outcome)
