"""Every elastic policy runs a small workload to completion; Gavel's heterogeneity awareness and
Themis's finish-time fairness show on workloads built to exercise them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from dlsched.elastic.run import run_elastic
from dlsched.elastic.simulator import ElasticConfig, ElasticSimulator

from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policies.ones import Ones
from dlsched.elastic.policies.optimus import Optimus
from dlsched.elastic.policy import same_gpus
from dlsched.elastic.registry import create_elastic_policy, elastic_policies
from dlsched.elastic.types import Allocation, JobInfo
from dlsched.perf.perfbook import PerfBook
from dlsched.trace.schema import Trace
from tests.elastic.helpers import MIXED, job_at, specs, trace_of, view

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


def test_optimus_forgets_finished_jobs() -> None:
    policy = Optimus()
    ElasticSimulator(specs(MIXED), view("2x4"), policy, ElasticConfig(), PerfBook()).run()
    assert policy._curves == {}
    assert all(index is None for _, _, index in policy._speed)


@dataclass
class HoldChecked(Ones):
    """ONES, checking each answer: a running job's GPUs change only after an epoch and
    ``hold_s`` since its last change."""

    violations: list[str] = field(default_factory=list)

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        answer = super().decide(now, jobs)
        for j in jobs:
            new = answer.get(j.name)
            if j.allocation is None or same_gpus(j.allocation, new):
                continue
            assert j.last_change is not None
            if j.epoch - j.epoch_at_change < 1 or now - j.last_change < self.hold_s:
                self.violations.append(f"{j.name} at {now}")
        return answer


def test_ones_moves_a_running_job_only_after_an_epoch_and_the_hold() -> None:
    policy = HoldChecked(hold_s=120.0)
    jobs = specs(MIXED)
    ElasticSimulator(jobs, view("2x4"), policy, ElasticConfig(), PerfBook()).run()
    assert policy.violations == []


@dataclass
class DrawsRecorded(Ones):
    """ONES, recording each round's progress quantile and GPUs (before the round) per job."""

    draws: list[dict[int, tuple[int, float]]] = field(default_factory=list)

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        answer = super().decide(now, jobs)
        self.draws.append({j.index: (j.gpus, self.quantiles[j.index]) for j in jobs})
        return answer


def test_ones_keeps_a_running_jobs_draw_and_redraws_a_waiting_ones() -> None:
    policy = DrawsRecorded(hold_s=120.0)
    ElasticSimulator(specs(MIXED), view("2x4"), policy, ElasticConfig(), PerfBook()).run()
    kept = redrawn = 0
    for before, after in zip(policy.draws, policy.draws[1:], strict=False):
        for i, (gpus, q) in after.items():
            if i not in before:
                continue
            if gpus > 0 and before[i][0] > 0:
                assert q == before[i][1], f"job {i} redrawn while running"
                kept += 1
            elif gpus == 0:
                assert q != before[i][1], f"job {i} kept its draw while waiting"
                redrawn += 1
    assert kept > 0 and redrawn > 0
