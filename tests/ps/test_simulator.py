"""Parameter-server jobs on the one simulator under every policy that schedules them, on a
small Philly-arrival workload."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

import dlsched.sim.groups
from dlsched.cluster.parse import resolve_cluster
from dlsched.ps.job import PsJob
from dlsched.ps.machines import Machine, machines_from_cluster, uniform_machines
from dlsched.ps.objective import sample_time
from dlsched.ps.placement import FloatArray, Option
from dlsched.ps.policies import POLICY_NAMES, make_policy
from dlsched.ps.policy_base import JobState, PsPolicy
from dlsched.ps.workload import build_workload, workload_trace
from dlsched.ps.zoo import network
from dlsched.sim.config import SimConfig
from dlsched.sim.groups import PolicyChoiceError
from dlsched.sim.simulator import RunResult, simulate, with_task_resources

CLUSTER = resolve_cluster("2x4")
MACHINES = uniform_machines(2, gpus=4)
POLICIES = (*POLICY_NAMES, "fifo", "tiresias")
"""PS allocation policies, and ordering policies (at the requested workers and PS)."""


def run(jobs: Sequence[PsJob], policy: str) -> RunResult:
    return simulate(workload_trace(tuple(jobs)), CLUSTER, SimConfig(policy=policy))


def test_the_cluster_gives_the_workloads_machines() -> None:
    # What the simulator makes of "2x4" is what the workload was sized for.
    made = machines_from_cluster(with_task_resources(CLUSTER))
    key = [(m.gpus, m.cpus, m.memory_gib, m.bandwidth_gbps, m.gpu_tflops) for m in MACHINES]
    assert [(m.gpus, m.cpus, m.memory_gib, m.bandwidth_gbps, m.gpu_tflops) for m in made] == key


@pytest.fixture(scope="module")
def workload() -> tuple[PsJob, ...]:
    jobs = build_workload(7, MACHINES, seed=1, time_scale=0.01, max_s=1800.0)
    huge = PsJob("huge", network("gpt2_xl"), 4, 1e4, arrival=5.0)
    return tuple(sorted((*jobs, huge), key=lambda j: j.arrival))


@pytest.fixture(scope="module")
def results(workload: tuple[PsJob, ...]) -> dict[str, RunResult]:
    return {name: run(workload, name) for name in POLICIES}


@pytest.mark.parametrize("name", POLICIES)
def test_every_feasible_job_completes_and_infeasible_ones_say_why(
    name: str, workload: tuple[PsJob, ...], results: dict[str, RunResult]
) -> None:
    result = results[name]
    rows = {r["job_id"]: r for r in result.jobs.to_pylist()}
    assert set(rows) == {j.job_id for j in workload}
    huge = rows["huge"]
    assert huge["status"] == "set_aside" and huge["jct_s"] is None
    assert "GPU memory" in huge["reason"]
    for job_id, r in rows.items():
        if job_id == "huge":
            continue
        assert r["status"] == "finished" and r["reason"] is None, r
        assert r["end_s"] >= r["first_start_s"] >= r["submit_s"] and r["jct_s"] > 0
    assert result.summary["jobs"] == len(workload) - 1 and result.summary["jobs_set_aside"] == 1
    assert result.summary["kind_policies"] == {"ps": name}


def test_smd_beats_fifo(results: dict[str, RunResult]) -> None:
    assert results["smd"].summary["avg_jct_s"] < results["fifo"].summary["avg_jct_s"]


def test_job_alone_takes_its_work_over_its_rate() -> None:
    job = PsJob("solo", network("resnet50"), 32, 3.2e5)
    result = run([job], "fifo")
    option = Option((1, 0), (1, 0))
    expected = job.samples * sample_time(job, option, MACHINES, option.tasks())
    assert result.jobs.column("jct_s")[0].as_py() == pytest.approx(expected, rel=1e-9)


def test_run_time_and_slowdown_are_in_seconds(results: dict[str, RunResult]) -> None:
    # A PS job's work is samples, not seconds: its recorded run time is the time it ran (or
    # null), so a slowdown is never below 1.
    for result in results.values():
        for r in result.jobs.to_pylist():
            if r["status"] == "finished" and r["run_time_s"] is not None:
                assert r["run_time_s"] <= r["end_s"] - r["first_start_s"] + 1e-6, r
        slowdown = result.summary["avg_slowdown"]
        assert slowdown is None or slowdown >= 1.0


class _GreedyGpus:
    """Every job on 4 GPUs of the first machine."""

    name = "overcommit"
    interval = None

    def decide(
        self,
        now: float,
        jobs: Sequence[JobState],
        machines: Sequence[Machine],
        free: FloatArray | None = None,
    ) -> Mapping[str, Option]:
        return {s.job.job_id: Option((4, 0), (1, 0)) for s in jobs}


class _GreedyCpus(_GreedyGpus):
    """Every job one worker and 4 PS on the first machine: GPUs fit, CPUs do not."""

    def decide(
        self,
        now: float,
        jobs: Sequence[JobState],
        machines: Sequence[Machine],
        free: FloatArray | None = None,
    ) -> Mapping[str, Option]:
        return {s.job.job_id: Option((1, 0), (4, 0)) for s in jobs}


def use_policy(monkeypatch: pytest.MonkeyPatch, name: str, factory: type[PsPolicy]) -> None:
    """Make the test's PS policy ``factory`` available to the simulator as ``name``."""
    real = dlsched.sim.groups.make_ps_policy
    monkeypatch.setattr(dlsched.sim.groups, "PS_POLICY_NAMES", (*POLICY_NAMES, name))
    monkeypatch.setattr(
        dlsched.sim.groups, "make_ps_policy", lambda n: factory() if n == name else real(n)
    )


@pytest.mark.parametrize(
    ("greedy", "net", "count"), [(_GreedyGpus, "resnet50", 2), (_GreedyCpus, "vgg16", 4)]
)
def test_over_committing_policy_is_caught(
    monkeypatch: pytest.MonkeyPatch, greedy: type[PsPolicy], net: str, count: int
) -> None:
    use_policy(monkeypatch, "overcommit", greedy)
    jobs = [PsJob(f"j{i}", network(net), 32, 1e5, max_workers=4) for i in range(count)]
    with pytest.raises(RuntimeError, match="policy 'overcommit' over-committed"):
        run(jobs, "overcommit")


def test_unknown_policy_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="smd"):
        make_policy("drf")
    jobs = [PsJob("j", network("resnet50"), 32, 1e5)]
    with pytest.raises(PolicyChoiceError, match=r"unknown policy 'drf' cannot schedule ps .*smd"):
        run(jobs, "drf")


def test_the_policies_offered_for_ps_jobs_can_schedule_them() -> None:
    jobs = [PsJob("j", network("resnet50"), 32, 1e5)]
    with pytest.raises(PolicyChoiceError) as refused:
        run(jobs, "drf")
    offered = str(refused.value).rsplit("policies that can: ", 1)[1].split(", ")
    assert {"smd", "optimus", "fifo", "tiresias"} <= set(offered)
    for name in offered:
        run(jobs, name)
