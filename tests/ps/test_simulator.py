"""The PS simulator under every policy on a small Philly-arrival workload."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from dlsched.ps.simulator import SimResult, simulate

from dlsched.ps.job import PsJob
from dlsched.ps.machines import Machine, uniform_machines
from dlsched.ps.objective import sample_time
from dlsched.ps.placement import Option
from dlsched.ps.policies import POLICY_NAMES, make_policy
from dlsched.ps.policy_base import JobState
from dlsched.ps.workload import build_workload
from dlsched.ps.zoo import network

MACHINES = uniform_machines(2, gpus=4)


@pytest.fixture(scope="module")
def workload() -> tuple[PsJob, ...]:
    jobs = build_workload(7, MACHINES, seed=1, time_scale=0.01, max_s=1800.0)
    huge = PsJob("huge", network("gpt2_xl"), 4, 1e4, arrival=5.0)
    return (*jobs, huge)


@pytest.fixture(scope="module")
def results(workload: tuple[PsJob, ...]) -> dict[str, SimResult]:
    return {n: simulate(workload, MACHINES, make_policy(n)) for n in POLICY_NAMES}


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_every_feasible_job_completes_and_infeasible_ones_say_why(
    name: str, workload: tuple[PsJob, ...], results: dict[str, SimResult]
) -> None:
    result = results[name]
    assert len(result.outcomes) == len(workload)
    by_id = {o.job_id: o for o in result.outcomes}
    huge = by_id["huge"]
    assert huge.jct is None and huge.reason is not None and "GPU memory" in huge.reason
    for o in result.outcomes:
        if o.reason is None:
            assert o.jct is not None and o.finish is not None
            assert o.finish >= o.arrival and o.jct > 0


def test_smd_beats_fifo(results: dict[str, SimResult]) -> None:
    assert results["smd"].mean_jct < results["fifo"].mean_jct


def test_job_alone_takes_its_work_over_its_rate() -> None:
    job = PsJob("solo", network("resnet50"), 32, 3.2e5)
    result = simulate([job], MACHINES, make_policy("fifo"))
    option = Option((1, 0), (1, 0))
    expected = job.samples * sample_time(job, option, MACHINES, option.tasks())
    assert result.outcomes[0].jct == pytest.approx(expected, rel=1e-9)


class _Greedy:
    name = "overcommit"
    interval = None

    def decide(
        self, now: float, jobs: Sequence[JobState], machines: Sequence[Machine]
    ) -> Mapping[str, Option]:
        return {s.job.job_id: Option((4, 0), (1, 0)) for s in jobs}


def test_over_committing_policy_is_caught() -> None:
    jobs = [PsJob(f"j{i}", network("resnet50"), 32, 1e5, max_workers=4) for i in range(2)]
    with pytest.raises(RuntimeError, match="over-committed"):
        simulate(jobs, MACHINES, _Greedy())


def test_unknown_policy_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="smd"):
        make_policy("drf")
