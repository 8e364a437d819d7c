"""ElasticFlow's planner (minimum satisfactory share) and policy: admission control,
declines, marginal scaling, EDF allocation, and the deadline figures of a run."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.cluster.shorthand import parse_shorthand
from dlsched.elastic.deadline_plan import Timeline, min_share
from dlsched.sim.config import CheckpointConfig, SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace import bundled_trace_path, read_trace
from dlsched.trace.schema import Trace
from tests.elastic.test_table_jobs import RESNET50_256_A100, table_job

SIZES = (1, 2, 4, 8)
LINEAR = {1: 1.0, 2: 2.0, 4: 4.0, 8: 8.0}


def linear(g: int) -> float:
    return LINEAR[g]


def test_min_share_is_the_smallest_level_that_meets_the_deadline() -> None:
    line = Timeline(0.0, 8)
    # 400 iterations by t=100 need 4 GPUs at 1 iteration/s per GPU.
    plan = min_share(line, 400.0, 100.0, linear, SIZES, 8, 10.0)
    assert plan is not None
    assert max(s.gpus for s in plan.segments) == 4
    assert plan.end <= 100.0
    assert min_share(line, 900.0, 100.0, linear, SIZES, 8, 10.0) is None
    assert min_share(line, 900.0, 100.0, linear, SIZES, 4, 10.0) is None


def test_min_share_plans_around_reserved_gpus() -> None:
    line = Timeline(0.0, 8)
    first = min_share(line, 800.0, 100.0, linear, SIZES, 8, 10.0)  # the whole cluster
    assert first is not None
    line.add(first, -1)
    # Nothing is free until t=100: a job due at 150 can only use [100, 150).
    assert min_share(line, 500.0, 150.0, linear, SIZES, 8, 10.0) is None
    second = min_share(line, 300.0, 150.0, linear, SIZES, 8, 10.0)
    assert second is not None and second.segments[0].start >= 100.0
    assert second.end <= 150.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(1, 2000), st.floats(10, 1000)),
        min_size=1,
        max_size=8,
    )
)
def test_plans_never_overcommit_and_meet_their_deadlines(jobs: list[tuple[float, float]]) -> None:
    line = Timeline(0.0, 8)
    for work, deadline in sorted(jobs, key=lambda j: j[1]):
        plan = min_share(line, work, deadline, linear, SIZES, 8, 10.0)
        if plan is None:
            continue
        assert plan.end <= deadline + 1e-6
        done = sum(s.gpus * (min(s.end, plan.end) - s.start) for s in plan.segments)
        assert done >= work - 1e-6
        line.add(plan, -1)  # raises on over-commit
        assert min(line.free) >= 0


def run(trace: Trace, cluster: str, **options: str) -> dict[str, object]:
    config = SimConfig(
        policy="elasticflow",
        policy_options=options,
        checkpoint=CheckpointConfig(restart="none"),
    )
    return simulate(trace, parse_shorthand(cluster), config).summary


def test_admission_declines_a_job_whose_deadline_cannot_be_met() -> None:
    rate = RESNET50_256_A100[8]
    trace = Trace.from_jobs(
        [
            # Needs the whole node until about 1,000 s to meet its deadline.
            table_job("first", 0.0, 1, 990 * rate, deadline=1_000.0),
            # Arrives when nothing is left for it before its deadline.
            table_job("second", 60.0, 1, 500 * rate, deadline=700.0),
            table_job("best-effort", 60.0, 1, 100 * rate),
        ]
    )
    summary = run(trace, "a100:1x8")
    deadlines = summary["deadlines"]
    assert isinstance(deadlines, dict)
    assert deadlines["declined"] == 1
    assert deadlines["met"] == 1
    assert deadlines["jobs_with_deadline"] == 2
    assert deadlines["best_effort_jobs"] == 1
    assert summary["jobs"] == 2  # finished
    # Without admission control the second job runs, late, and delays nothing it is owed.
    loose = run(trace, "a100:1x8", admission="false")["deadlines"]
    assert isinstance(loose, dict)
    assert loose["declined"] == 0


@pytest.mark.parametrize("allocation", ["marginal", "edf"])
@pytest.mark.parametrize("admission", ["true", "false"])
def test_every_variant_runs_the_bundled_trace(admission: str, allocation: str) -> None:
    trace = read_trace(bundled_trace_path("elasticflow_100jobs_1500lam")).trace
    summary = run(trace, "a100:4x8", admission=admission, allocation=allocation, interval_s="240")
    deadlines = summary["deadlines"]
    assert isinstance(deadlines, dict)
    assert deadlines["jobs_with_deadline"] == 100
    assert deadlines["met"] + deadlines["missed_late"] + deadlines["declined"] == 100
    if admission == "false":
        assert deadlines["declined"] == 0


def test_elasticflow_meets_more_deadlines_than_edf_on_a_crowded_cluster() -> None:
    trace = read_trace(bundled_trace_path("elasticflow_100jobs_1500lam")).trace
    ef = run(trace, "a100:2x8", interval_s="240")["deadlines"]
    edf = run(trace, "a100:2x8", interval_s="240", admission="false", allocation="edf")["deadlines"]
    assert isinstance(ef, dict) and isinstance(edf, dict)
    assert ef["met"] > edf["met"]


def test_bad_options_are_refused() -> None:
    trace = Trace.from_jobs([table_job("a", 0.0, 1, 10.0)])
    with pytest.raises(ValueError, match="allocation 'fastest' unknown"):
        run(trace, "a100:1x8", allocation="fastest")
