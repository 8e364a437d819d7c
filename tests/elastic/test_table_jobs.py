"""Jobs of the ElasticFlow throughput tables (``elasticflow/<model>``) in the elastic kind, the
EDF ordering policy, and declines by an allocation policy's admission control."""

from __future__ import annotations

import math

import pytest

from dlsched.cluster.shorthand import parse_shorthand
from dlsched.cluster.state import ClusterState, Demand
from dlsched.perf.throughput_tables import (
    TableError,
    baseline_max_gpus,
    elasticflow_max_gpus,
    throughput_curve,
)
from dlsched.scheduler.allocation import AllocationAdapter, AllocationScheduler, Want
from dlsched.sim.config import CheckpointConfig, SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.schema import JobSpec, Trace

# ElasticFlow artifact, ElasticFlow/scheduler/throughputs_A100/resnet50.csv (pkusys/ElasticFlow
# commit 04a0109a6acdd7d89f4cb31b6a6a7a128bee6bb0), global batch 256.
RESNET50_256_A100 = {1: 1.843374951404324, 8: 10.378702644353233, 64: 18.845304488737906}
NO_RESTART = CheckpointConfig(restart="none")


def table_job(
    job_id: str,
    submit: float,
    gpus: int,
    iterations: float,
    deadline: float | None = None,
    model: str = "resnet50",
    batch: int = 256,
) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        submit_time=submit,
        num_gpus=gpus,
        application=f"elasticflow/{model}",
        batch_size=batch,
        work=iterations,
        work_unit="iterations",
        kind="elastic",
        deadline=deadline,
    )


def test_curves_read_the_published_tables() -> None:
    curve = throughput_curve("elasticflow/resnet50", 256, "A100")
    for gpus, rate in RESNET50_256_A100.items():
        assert curve.rate(gpus) == rate
    assert curve.rate(3) is None
    # Empty and nan cells are not runnable: T4 yolov3 at batch 64 stops at 16 GPUs.
    assert throughput_curve("elasticflow/yolov3", 64, "T4").sizes == (1, 2, 4, 8, 16)
    # 0 cells too: resnet50 on CIFAR-10 was measured only up to 8 GPUs.
    assert throughput_curve("elasticflow/resnet50_cifar10", 64, "A100").largest == 8


def test_unknown_models_batches_and_classes_are_refused() -> None:
    with pytest.raises(TableError, match="global batch 100 not in the A100 table"):
        throughput_curve("elasticflow/resnet50", 100, "A100")
    with pytest.raises(TableError, match="no T4 throughput table"):
        throughput_curve("elasticflow/gpt2", 128, "T4")
    with pytest.raises(TableError, match="GPU class 'V100'"):
        throughput_curve("elasticflow/gpt2", 128, "V100")


def test_gpu_limits_follow_the_artifact() -> None:
    assert elasticflow_max_gpus(throughput_curve("elasticflow/gpt2", 128, "A100")) == 16
    assert elasticflow_max_gpus(throughput_curve("elasticflow/bert", 64, "A100")) == 8
    assert elasticflow_max_gpus(throughput_curve("elasticflow/deepspeech2", 32, "A100")) == 32
    assert elasticflow_max_gpus(throughput_curve("elasticflow/ncf", 32768, "T4")) == 1
    assert baseline_max_gpus(throughput_curve("elasticflow/deepspeech2", 32, "A100")) == 32
    assert baseline_max_gpus(throughput_curve("elasticflow/resnet50", 256, "A100")) == 64


@pytest.mark.parametrize("gpus", [1, 8, 64])
def test_a_table_job_runs_iterations_over_the_table_rate(gpus: int) -> None:
    iterations = 50_000.0
    trace = Trace.from_jobs([table_job("a", 0.0, gpus, iterations)])
    result = simulate(
        trace, parse_shorthand("a100:8x8"), SimConfig(policy="fifo", checkpoint=NO_RESTART)
    )
    jobs = result.jobs.to_pylist()
    assert jobs[0]["end_s"] == pytest.approx(iterations / RESNET50_256_A100[gpus], rel=1e-9)


def test_table_jobs_without_a_table_for_the_gpus_are_set_aside() -> None:
    trace = Trace.from_jobs([table_job("a", 0.0, 1, 100.0), table_job("b", 0.0, 3, 100.0)])
    result = simulate(trace, parse_shorthand("v100:2x8"), SimConfig(policy="fifo"))
    reasons = result.summary["set_aside_reasons"]
    assert result.summary["jobs_set_aside"] == 2
    assert any("no ElasticFlow throughput table" in r for r in reasons)
    result = simulate(trace, parse_shorthand("a100:2x8"), SimConfig(policy="fifo"))
    assert result.summary["jobs_set_aside"] == 1
    assert any("3 GPUs not runnable on A100" in r for r in result.summary["set_aside_reasons"])


def test_pollux_profile_policies_refuse_table_jobs() -> None:
    trace = Trace.from_jobs([table_job("a", 0.0, 1, 100.0)])
    config = SimConfig(policy="fifo", kind_policies={"elastic": "pollux"})
    result = simulate(trace, parse_shorthand("a100:1x8"), config)
    assert result.summary["jobs_set_aside"] == 1
    assert any("ElasticFlow throughput table" in r for r in result.summary["set_aside_reasons"])


def test_edf_runs_the_earliest_deadline_first_and_best_effort_last() -> None:
    rate = RESNET50_256_A100[8]
    work = 1000 * rate  # 1,000 s on 8 GPUs
    trace = Trace.from_jobs(
        [
            table_job("best-effort", 0.0, 8, work),
            table_job("late", 10.0, 8, work, deadline=50_000.0),
            table_job("urgent", 20.0, 8, work, deadline=2_000.0),
        ]
    )
    result = simulate(
        trace, parse_shorthand("a100:1x8"), SimConfig(policy="edf", checkpoint=NO_RESTART)
    )
    end = {r["job_id"]: r["end_s"] for r in result.jobs.to_pylist()}
    # The best-effort job starts alone at 0 and is preempted by each job with a deadline.
    assert end["urgent"] == pytest.approx(1020.0)
    assert end["late"] == pytest.approx(2010.0)  # 10 s done before "urgent" came
    assert end["best-effort"] == pytest.approx(3000.0)


class DecliningAdapter(AllocationAdapter):
    """Declines every job it is shown (the plumbing of admission control)."""

    name = "decline-all"

    @property
    def interval(self) -> float | None:
        return None

    def never_fits(self, pool: int, job: object) -> str | None:  # type: ignore[override]
        return None

    def decide(self, pool, now, jobs, available):  # type: ignore[no-untyped-def]
        self._last = list(jobs)
        return {}

    def take_declined(self, pool: int):  # type: ignore[no-untyped-def]
        return {job: "cannot meet its deadline" for job in self._last}

    def current_config(self, job):  # type: ignore[no-untyped-def]
        return None


class View:
    def __init__(self, job_id: str) -> None:
        self.job_id, self.seq, self.submit_time, self.gpus = job_id, 0, 0.0, 1
        self.demand = Demand(1)
        self.pool, self.running, self.placement = 0, False, None

    def __hash__(self) -> int:
        return hash(self.job_id)


def test_a_declined_job_leaves_the_scheduler_and_the_plan_names_it() -> None:
    state = ClusterState(parse_shorthand("1x8"))
    sched = AllocationScheduler(DecliningAdapter(), state)
    job = View("j")
    sched.on_submitted(job, 0.0)  # type: ignore[arg-type]
    plan = sched.cycle(0, 0.0)
    assert plan.declines == ((job, "cannot meet its deadline"),)
    assert bool(plan)
    assert not sched.active[0]
    assert sched.pools[0].pending_jobs == 0 and sched.pools[0].pending_gpus == 0
    assert sched.cycle(0, 1.0).declines == ()


def test_want_is_unchanged_by_declines() -> None:
    assert Want((), None).config is None
    assert math.isfinite(RESNET50_256_A100[1])
