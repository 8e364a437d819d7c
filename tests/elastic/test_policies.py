"""Every policy that schedules elastic jobs runs a small workload to completion on the one
simulator; Gavel's heterogeneity awareness and Themis's finish-time fairness show on workloads
built to exercise them; Optimus's options and ONES's rules hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policies.ones import Ones
from dlsched.elastic.policies.optimus import Optimus
from dlsched.elastic.policy import same_gpus
from dlsched.elastic.registry import create_elastic_policy, elastic_policies
from dlsched.elastic.types import Allocation, JobInfo
from dlsched.sim.config import SimConfig
from dlsched.sim.groups import PolicyChoiceError
from dlsched.sim.kinds import KindError
from dlsched.sim.simulator import simulate
from dlsched.trace.schema import Trace
from tests.elastic.helpers import MIXED, job_at, register, run, trace_of
from tests.elastic.test_table_jobs import table_job

SMALL = [("ncf", 0.0, 2), ("ncf", 60.0, 4), ("cifar10", 90.0, 2), ("ncf", 200.0, 1)]
ORDERING = ["fifo", "tiresias"]
"""Ordering policies that also schedule elastic jobs (at their requested GPUs and batch)."""


def test_registry_lists_every_policy() -> None:
    assert {"optimus", "pollux", "ones", "gavel", "themis"} <= set(elastic_policies())
    # One FIFO and one Tiresias serve every job kind: no elastic copies.
    assert not set(ORDERING) & set(elastic_policies())
    with pytest.raises(ValueError, match="unknown elastic policy 'nope'; available: "):
        create_elastic_policy("nope")
    with pytest.raises(ValueError, match="unknown option"):
        create_elastic_policy("ones", {"colour": "red"})


def test_bad_options_are_refused_before_the_run() -> None:
    with pytest.raises(ValueError, match="unknown option"):
        run(SMALL, "2x4", "ones", {"colour": "red"})
    with pytest.raises(PolicyChoiceError, match="unknown policy 'nope' cannot schedule elastic"):
        run(SMALL, "2x4", "nope")


TABLE_POLICIES = ["elasticflow"]
"""Elastic policies of the ElasticFlow throughput-table jobs only (the Pollux jobs are refused)."""


@pytest.mark.parametrize("policy", sorted(set(elastic_policies()) - set(TABLE_POLICIES)) + ORDERING)
def test_contract(policy: str) -> None:
    result = run(SMALL, "2x4", policy, seed=1)
    s = result.summary
    assert s["jobs"] == len(SMALL) and s["jobs_set_aside"] == 0
    assert s["policy"] == policy and s["kind_policies"] == {"elastic": policy}
    assert s["job_kinds"] == {"rigid": 0, "elastic": len(SMALL), "ps": 0}
    assert s["avg_jct_s"] > 0 and s["ftf_rho_max"] >= s["ftf_rho_mean"] > 0
    table = result.jobs.to_pydict()
    assert table["status"] == ["finished"] * len(SMALL)
    for submit, start, end in zip(
        table["submit_s"], table["first_start_s"], table["end_s"], strict=True
    ):
        assert submit <= start < end
    busy = result.timeline.column("busy_gpus").to_pylist()
    assert 0 < max(busy) <= 8


TABLE_SMALL = [
    # (model, global batch, submit, GPUs, iterations, deadline or None); T4 tables.
    ("cifar10", 2048, 0.0, 2, 2000.0, 3000.0),
    ("ncf", 32768, 60.0, 1, 20000.0, None),
    ("cifar10", 4096, 90.0, 4, 1500.0, 4000.0),
    ("yolov3", 64, 200.0, 1, 300.0, 2000.0),
]


@pytest.mark.parametrize("policy", [*TABLE_POLICIES, *ORDERING, "edf"])
def test_table_contract(policy: str) -> None:
    """Every policy that runs ElasticFlow table jobs finishes this workload, within the
    cluster, reporting deadline figures consistent with the jobs table."""
    jobs = [
        table_job(f"j{i}", submit, gpus, iterations, deadline, model, batch)
        for i, (model, batch, submit, gpus, iterations, deadline) in enumerate(TABLE_SMALL)
    ]
    result = simulate(Trace.from_jobs(jobs), resolve_cluster("2x4"), SimConfig(policy=policy))
    s = result.summary
    table = result.jobs.to_pydict()
    assert s["jobs"] + s["deadlines"]["declined"] == len(TABLE_SMALL)
    assert s["jobs_set_aside"] == s["deadlines"]["declined"]
    for status, met, end, deadline in zip(
        table["status"], table["deadline_met"], table["end_s"], table["deadline"], strict=True
    ):
        if deadline is None:
            assert met is None
        elif status == "finished":
            assert met == (end <= deadline)
        else:
            assert met is False
    assert s["deadlines"]["met"] == sum(m is True for m in table["deadline_met"])
    busy = result.timeline.column("busy_gpus").to_pylist()
    assert 0 < max(busy) <= 8


def test_pollux_jobs_are_refused_by_table_policies() -> None:
    result = run(SMALL, "2x4", "elasticflow", seed=1)
    assert result.summary["jobs_set_aside"] == len(SMALL)


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
    jct = {
        aware: run(
            HETERO, "t4:1x4,rtx:1x4", "gavel", {"objective": objective, "aware": aware}
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
    themis = run(rows, "2x4", "themis").summary
    fifo = run(rows, "2x4", "fifo").summary
    assert themis["ftf_rho_max"] < fifo["ftf_rho_max"]
    assert themis["ftf_rho_mean"] < fifo["ftf_rho_mean"]


def test_unknown_application_is_named() -> None:
    columns = trace_of([("ncf", 0.0, 1)]).table.to_pydict()
    columns["application"] = ["resnet"]
    columns["kind"] = ["elastic"]
    with pytest.raises(KindError, match=r"job 'ncf-0': application: 'resnet' is not a profiled"):
        simulate(Trace.from_columns(columns, "t.csv"), resolve_cluster("2x4"))


def test_optimus_remaining_work_option() -> None:
    with pytest.raises(ValueError, match="remaining: expected 'fit' or 'epochs'"):
        create_elastic_policy("optimus", {"remaining": "oracle"})
    policy = create_elastic_policy("optimus", {"remaining": "epochs"})
    assert isinstance(policy, Optimus)
    job = job_at(0, "cifar10", 3)
    assert policy.remaining_examples(job) == job.epoch_size * (job.num_epochs - 3)


@dataclass
class LastRoundRecorded(Optimus):
    """Optimus, remembering the jobs of its last round and every job it fitted a curve for."""

    last: set[int] = field(default_factory=set)
    fitted: set[int] = field(default_factory=set)

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        answer = super().decide(now, jobs)
        self.last = {j.index for j in jobs}
        self.fitted |= set(self._curves)
        return answer


def test_optimus_forgets_finished_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    made = register(monkeypatch, LastRoundRecorded)
    result = run(MIXED, "2x4", "optimus")
    assert result.summary["jobs"] == len(MIXED)
    policy = made()[-1]
    assert isinstance(policy, LastRoundRecorded)
    # Jobs that finished before its last round were forgotten (those finishing after it are
    # told at the next round, which this run does not have).
    assert len(policy.fitted - policy.last) > 0
    assert set(policy._curves) <= policy.last
    assert all(index is None or index in policy.last for _, _, index in policy._speed)


@dataclass
class HoldChecked(Ones):
    """ONES, checking each answer: a running job's GPUs change only after an epoch and
    ``hold_s`` since its last change."""

    violations: list[str] = field(default_factory=list)
    moves: int = 0

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        answer = super().decide(now, jobs)
        for j in jobs:
            new = answer.get(j.name)
            if j.allocation is None or same_gpus(j.allocation, new):
                continue
            self.moves += 1
            assert j.last_change is not None
            if j.epoch - j.epoch_at_change < 1 or now - j.last_change < self.hold_s:
                self.violations.append(f"{j.name} at {now}")
        return answer


def test_ones_moves_a_running_job_only_after_an_epoch_and_the_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = register(monkeypatch, HoldChecked)
    run(MIXED, "2x4", "ones", {"hold_s": "120"})
    policy = made()[-1]
    assert isinstance(policy, HoldChecked) and policy.hold_s == 120.0
    assert policy.moves > 0
    assert policy.violations == []


@dataclass
class DrawsRecorded(Ones):
    """ONES, recording each round's progress quantile and GPUs (before the round) per job."""

    draws: list[dict[int, tuple[int, float]]] = field(default_factory=list)

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        answer = super().decide(now, jobs)
        self.draws.append({j.index: (j.gpus, self.quantiles[j.index]) for j in jobs})
        return answer


def test_ones_keeps_a_running_jobs_draw_and_redraws_a_waiting_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = register(monkeypatch, DrawsRecorded)
    run(MIXED, "2x4", "ones", {"hold_s": "120"})
    policy = made()[-1]
    assert isinstance(policy, DrawsRecorded)
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


def test_an_unprofiled_application_in_an_elastic_workload_is_named() -> None:
    # A Pollux-workload row (application and batch, no run time) whose application has no
    # profile is not silently taken for a rigid job without a run time: the error or the
    # set-aside reason names the application.
    columns = trace_of([("ncf", 0.0, 1), ("ncf", 5.0, 1)]).table.to_pydict()
    columns["application"] = ["resnet", "ncf"]
    try:
        result = simulate(Trace.from_columns(columns, "t.csv"), resolve_cluster("2x4"))
    except KindError as exc:
        assert "job 'ncf-0': application: 'resnet'" in str(exc)
        return
    reason = result.jobs.column("reason")[0].as_py()
    assert reason is not None and "application" in reason and "resnet" in reason, reason


@pytest.mark.parametrize("policy", ["pollux", "fifo"])
def test_run_time_and_slowdown_are_in_seconds(policy: str) -> None:
    # An elastic job's work is statistically efficient progress, not seconds: its recorded
    # run time is the time it ran (or null), so a slowdown is never below 1.
    result = run(SMALL, "2x4", policy)
    table = result.jobs.to_pydict()
    for start, end, run_time in zip(
        table["first_start_s"], table["end_s"], table["run_time_s"], strict=True
    ):
        assert run_time is None or 0 < run_time <= end - start + 1e-6, (start, end, run_time)
    slowdown = result.summary["avg_slowdown"]
    assert slowdown is None or slowdown >= 1.0
