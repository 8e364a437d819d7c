"""Small elastic workloads for tests: short applications (ncf, cifar10) on small clusters."""

from __future__ import annotations

from dlsched.elastic.run import cluster_view
from dlsched.elastic.simulator import ElasticJobSpec

from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.types import ClusterView, JobInfo
from dlsched.perf.perfbook import PerfBook
from dlsched.perf.profiles import load_profile
from dlsched.trace.schema import Trace

TUNED_BATCH = {"ncf": 512, "cifar10": 256, "bert": 24}


def specs(rows: list[tuple[str, float, int]]) -> list[ElasticJobSpec]:
    """Jobs from (application, submit time, GPUs) rows, at a batch of the app's tuned size."""
    return [
        ElasticJobSpec(f"{app}-{i}", submit, app, gpus, TUNED_BATCH[app] * max(gpus // 2, 1))
        for i, (app, submit, gpus) in enumerate(rows)
    ]


def trace_of(jobs: list[ElasticJobSpec]) -> Trace:
    return Trace.from_columns(
        {
            "job_id": [j.name for j in jobs],
            "submit_time": [j.submit_time for j in jobs],
            "num_gpus": [j.gpus for j in jobs],
            "application": [j.application for j in jobs],
            "batch_size": [j.batch_size for j in jobs],
        },
        source="test",
    )


def view(text: str) -> ClusterView:
    return cluster_view(resolve_cluster(text))


MIXED = [
    ("ncf", 0.0, 2),
    ("cifar10", 30.0, 4),
    ("ncf", 100.0, 1),
    ("ncf", 200.0, 4),
    ("cifar10", 400.0, 2),
    ("ncf", 500.0, 2),
]
"""A contended little workload for an 8-GPU cluster."""


def job_at(index: int, app: str, epochs: int) -> JobInfo:
    """``app`` after ``epochs`` epochs of its first validation curve."""
    curve = load_profile(app).validation[0]
    size = float(curve.iteration[0] * curve.global_bsz)
    eff = PerfBook().efficiency(app)
    return JobInfo(
        name=f"{app}-{index}",
        index=index,
        application=app,
        submit_time=0.0,
        requested_gpus=1,
        requested_bsz=curve.global_bsz,
        attained_service=0.0,
        progress=0.0,
        total_progress=eff.total_progress,
        epoch=epochs,
        num_epochs=eff.num_epochs,
        samples=size * epochs,
        allocation=None,
        restarts=0,
        last_change=None,
        epoch_at_change=0,
        max_gpus_seen=0,
        epoch_size=size,
        metrics=tuple(curve.metric[:epochs]),
        samples_at_epoch=tuple(size * (k + 1) for k in range(epochs)),
    )
