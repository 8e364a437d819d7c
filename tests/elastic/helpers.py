"""Small elastic workloads for tests (short applications, ncf and cifar10, on small clusters)
and a way to run a test's own elastic policy on the one simulator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import dlsched.sim.groups
from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policy import ElasticPolicy
from dlsched.elastic.registry import elastic_policies
from dlsched.elastic.types import ClusterView, JobInfo, cluster_view
from dlsched.perf.perfbook import PerfBook
from dlsched.perf.profiles import load_profile
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import RunResult, simulate
from dlsched.trace.schema import Trace

TUNED_BATCH = {"ncf": 512, "cifar10": 256, "bert": 24}

Row = tuple[str, float, int]
"""One job: (application, submit time, GPUs)."""


def batch_of(app: str, gpus: int) -> int:
    """The global batch a test job of ``app`` on ``gpus`` GPUs asks for."""
    return TUNED_BATCH[app] * max(gpus // 2, 1)


def trace_of(rows: list[Row]) -> Trace:
    """Elastic jobs ``{app}-{i}`` from ``rows``, each at :func:`batch_of` its GPUs (the kind is
    inferred from the application and batch, as for a Pollux workload)."""
    return Trace.from_columns(
        {
            "job_id": [f"{app}-{i}" for i, (app, _, _) in enumerate(rows)],
            "submit_time": [submit for _, submit, _ in rows],
            "num_gpus": [gpus for _, _, gpus in rows],
            "application": [app for app, _, _ in rows],
            "batch_size": [batch_of(app, gpus) for app, _, gpus in rows],
        },
        source="test",
    )


def run(
    rows: list[Row],
    cluster: str,
    policy: str,
    options: dict[str, str] | None = None,
    seed: int = 0,
    record_segments: bool = False,
) -> RunResult:
    """``rows`` on the cluster ``cluster`` (shorthand or name) under ``policy``."""
    config = SimConfig(policy=policy, policy_options=dict(options or {}), seed=seed)
    return simulate(
        trace_of(rows), resolve_cluster(cluster), config, record_segments=record_segments
    )


def view(text: str) -> ClusterView:
    """An elastic policy's view of the cluster ``text`` (shorthand or name)."""
    return cluster_view(resolve_cluster(text))


def register(
    monkeypatch: pytest.MonkeyPatch, policy: type[ElasticPolicy]
) -> Callable[[], list[ElasticPolicy]]:
    """Make ``policy`` (a test's policy class) available to the simulator under its ``name``
    for this test; returns a function listing the instances the run created, in order (the
    simulator builds one to check the options, then one per pool)."""
    made: list[ElasticPolicy] = []

    class Recorded(policy):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    Recorded.__name__ = policy.__name__
    found = {**elastic_policies(), policy.name: Recorded}
    monkeypatch.setattr(dlsched.sim.groups, "elastic_policies", lambda: found)
    return lambda: list(made)


MIXED: list[Row] = [
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
