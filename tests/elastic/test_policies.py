"""Every elastic policy runs a small workload to completion; Gavel's heterogeneity awareness and
Themis's finish-time fairness show on workloads built to exercise them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policies.optimus import Optimus
from dlsched.elastic.registry import create_elastic_policy, elastic_policies
from dlsched.elastic.run import run_elastic
from dlsched.trace.schema import Trace
from tests.elastic.helpers import job_at, specs, trace_of

SMALL = [("ncf", 0.0, 2), ("ncf", 60.0, 4), ("cifar10", 90.0, 2), ("ncf", 200.0, 1)]


def test_registry_lists_every_policy() -> None:
    assert {"tiresias", "optimus", "pollux", "ones", "gavel", "themis", "fifo"} <= set(
        elastic_policies()
    )
    with pytest.raises(ValueError, match="unknown elastic policy 'nope'; available: "):
        create_elastic_policy("nope")
    with pytest.raises(ValueError, match="unknown option"):
        create_elastic_policy("ones", {"colour": "red"})


@pytest.mark.parametrize("policy", sorted(elastic_policies()))
def test_contract(policy: str) -> None:
    jobs = specs(SMALL)
    run = run_elastic(trace_of(jobs), resolve_cluster("2x4"), policy, seed=1)
    s = run.summary
    assert s["jobs"] == len(jobs) and s["jobs_set_aside"] == 0
    assert s["policy"] == policy and s["simulator"] == "elastic"
    assert s["avg_jct_s"] > 0 and s["ftf_rho_max"] >= s["ftf_rho_mean"] > 0
    table = run.jobs.to_pydict()
    for submit, start, end in zip(
        table["submit_s"], table["first_start_s"], table["end_s"], strict=True
    ):
        assert submit <= start < end
    assert max(run.timeline.column("busy_gpus").to_pylist()) <= 8


HETERO = [
    ("ncf", 0.0, 2),
    ("cifar10", 0.0, 4),
    ("ncf", 60.0, 2),
    ("cifar10", 120.0, 2),
    ("ncf", 200.0, 4),
    ("cifar10", 300.0, 4),
]


@pytest.mark.parametrize("objective", ["max_min", "min_jct"])
def test_gavel_heterogeneity_awareness_lowers_jct(objective: str) -> None:
    trace = trace_of(specs(HETERO))
    cluster = resolve_cluster("t4:1x4,rtx:1x4")
    jct = {
        aware: run_elastic(
            trace, cluster, "gavel", {"objective": objective, "aware": aware}
        ).summary["avg_jct_s"]
        for aware in ("true", "false")
    }
    assert jct["true"] < jct["false"]


def test_themis_is_fairer_than_fifo() -> None:
    # A long job takes the whole cluster first; FIFO makes everyone behind it wait.
    rows = [
        ("cifar10", 0.0, 8),
        ("ncf", 60.0, 2),
        ("ncf", 120.0, 2),
        ("ncf", 180.0, 4),
        ("cifar10", 240.0, 2),
        ("ncf", 300.0, 2),
    ]
    trace = trace_of(specs(rows))
    cluster = resolve_cluster("2x4")
    themis = run_elastic(trace, cluster, "themis").summary
    fifo = run_elastic(trace, cluster, "fifo").summary
    assert themis["ftf_rho_max"] < fifo["ftf_rho_max"]
    assert themis["ftf_rho_mean"] < fifo["ftf_rho_mean"]


def test_unknown_application_is_named() -> None:
    trace = trace_of(specs([("ncf", 0.0, 1)]))
    column = trace.table.schema.get_field_index("application")
    bad = trace.table.set_column(column, "application", pa.array(["resnet"]))
    with pytest.raises(ValueError, match=r"job 'ncf-0': application: unknown application 'resnet'"):
        run_elastic(Trace(bad, "t.csv"), resolve_cluster("2x4"), "fifo")


def test_optimus_remaining_work_option() -> None:
    with pytest.raises(ValueError, match="remaining: expected 'fit' or 'epochs'"):
        create_elastic_policy("optimus", {"remaining": "oracle"})
    policy = create_elastic_policy("optimus", {"remaining": "epochs"})
    assert isinstance(policy, Optimus)
    job = job_at(0, "cifar10", 3)
    assert policy.remaining_examples(job) == job.epoch_size * (job.num_epochs - 3)
