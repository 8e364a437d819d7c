"""Pollux and Optimus follow the Pollux artifact (petuum/adaptdl, simulator/) where dlsched
departed from it: speedups from the current epoch's statistics and relative to a fair share;
Optimus's step times from the profile and its local-batch cap."""

from __future__ import annotations

import itertools

import pytest

from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policies.optimus import Optimus
from dlsched.elastic.policies.pollux import Pollux
from dlsched.elastic.types import ClusterView, JobInfo, cluster_view
from dlsched.perf.goodput import GoodputModel
from dlsched.perf.perfbook import PerfBook, consolidated_counts
from dlsched.perf.profiles import load_profile
from dlsched.perf.steptime import StepTimeModel
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.schema import Trace

ARTIFACT_OPTIMUS = {"remaining": "epochs", "speed": "profile"}


def waiting_job(
    app: str, epoch: int, batch: int | None = None, index: int = 0, seen: int = 0
) -> JobInfo:
    """A job of ``app`` holding no GPUs after ``epoch`` epochs, at global batch ``batch``
    (default: the smallest validated one), having held at most ``seen`` GPUs."""
    perf = PerfBook()
    eff = perf.efficiency(app)
    curve = load_profile(app).validation[0]
    size = float(curve.iteration[0] * curve.global_bsz)
    return JobInfo(
        name=f"{app}-{index}",
        index=index,
        application=app,
        submit_time=0.0,
        requested_gpus=1,
        requested_bsz=curve.global_bsz if batch is None else batch,
        attained_service=0.0,
        progress=eff.required[epoch - 1] if epoch else 0.0,
        total_progress=eff.total_progress,
        epoch=epoch,
        num_epochs=eff.num_epochs,
        samples=size * epoch,
        allocation=None,
        restarts=0,
        last_change=None,
        epoch_at_change=0,
        max_gpus_seen=seen,
        epoch_size=size,
    )


def bound(policy: Pollux | Optimus, cluster: str) -> tuple[ClusterView, PerfBook]:
    view = cluster_view(resolve_cluster(cluster))
    perf = PerfBook()
    policy.bind(view, perf, 0)
    return view, perf


def goodput(perf: PerfBook, job: JobInfo, epoch: int, gpus: int) -> float:
    return perf.best_batch(job.application, "t4", epoch, -(-gpus // 4), gpus).goodput


def step_times(perf: PerfBook, app: str, batch: int, most: int) -> dict[int, float]:
    """Seconds per step of ``app`` at a fixed global ``batch`` on 1..most consolidated T4s."""
    out = {}
    for n in range(1, most + 1):
        config = perf.fixed_batch(app, n, batch)
        counts = consolidated_counts(n, 4)
        out[n] = perf.iteration_time(app, "t4", counts, config.local_bsz, config.accum_steps)
    return out


def test_pollux_speedups_use_the_current_epochs_statistics() -> None:
    policy = Pollux()
    _, perf = bound(policy, "4x4")
    job = waiting_job("cifar10", 37, seen=8)
    expected = [0.0] + [goodput(perf, job, 37, n) / goodput(perf, job, 37, 1) for n in (1, 2, 4)]
    speed = policy.speedups(job, 4)
    assert [speed[n] for n in (0, 1, 2, 4)] == pytest.approx(expected, rel=1e-12)
    # The start of the job's tenth of training (dlsched's old default) gives other speedups;
    # epoch_buckets keeps that choice available.
    tenth = [goodput(perf, job, 30, n) / goodput(perf, job, 30, 1) for n in (2, 4)]
    assert [speed[2], speed[4]] != pytest.approx(tenth, rel=1e-3)
    bucketed = Pollux(epoch_buckets=10)
    bound(bucketed, "4x4")
    assert bucketed.speedups(job, 4)[2:5:2] == pytest.approx(tenth, rel=1e-12)


def test_pollux_speedups_are_relative_to_a_fair_share() -> None:
    """Two jobs on 16 GPUs: the counts minimize the sum of inverse speedups over a fair share
    (8 GPUs each), which here is not what speedups over one GPU would choose."""
    jobs = [
        waiting_job("bert", 0, index=0, seen=16),
        waiting_job("yolov3", 20, index=1, seen=16),
    ]
    policy = Pollux()
    _, perf = bound(policy, "4x4")
    answer = policy.decide(1e6, jobs)
    counts = tuple(answer[j.name].num_gpus if j.name in answer else 0 for j in jobs)

    def best_over(base: int) -> tuple[int, int]:
        def cost(c: tuple[int, int]) -> float:
            return sum(
                goodput(perf, j, j.epoch, base) / goodput(perf, j, j.epoch, n)
                for j, n in zip(jobs, c, strict=True)
            )

        pairs = [c for c in itertools.product(range(1, 17), repeat=2) if sum(c) <= 16]
        return min(pairs, key=cost)

    assert counts == best_over(8)
    assert best_over(8) != best_over(1)
    one = Pollux(base="one")
    bound(one, "4x4")
    answer = one.decide(1e6, jobs)
    assert tuple(answer[j.name].num_gpus for j in jobs) == best_over(1)


def test_pollux_refuses_bad_options() -> None:
    with pytest.raises(ValueError, match="epoch_buckets"):
        Pollux(epoch_buckets=-1)
    with pytest.raises(ValueError, match="base"):
        Pollux(base="half")


def yolov3_alone(policy: str, options: dict[str, str]) -> tuple[float, int]:
    trace = Trace.from_columns(
        {
            "job_id": ["yolov3-0"],
            "submit_time": [0.0],
            "num_gpus": [4],
            "application": ["yolov3"],
            "batch_size": [64],
        },
        source="test",
    )
    result = simulate(
        trace, resolve_cluster("4x4"), SimConfig(policy=policy, policy_options=options)
    )
    (row,) = result.jobs.to_pylist()
    return row["jct_s"], row["restarts"]


def test_optimus_with_profiled_step_times_keeps_yolov3_on_one_node() -> None:
    """yolov3 at global batch 64 is fastest on one full node (spanning two nodes slows its
    step); the artifact's Optimus keeps it there, as long as Tiresias running it on its four
    requested GPUs. The fitted PS model, smooth in the GPU count, spreads it over two."""
    tiresias, _ = yolov3_alone("tiresias", {})
    profiled, restarts = yolov3_alone("optimus", ARTIFACT_OPTIMUS)
    assert profiled == pytest.approx(tiresias, abs=1e-6)
    assert restarts == 0
    fitted, _ = yolov3_alone("optimus", {"remaining": "epochs"})
    assert fitted > 1.5 * tiresias


def test_optimus_gives_no_job_a_local_batch_below_the_profiled_range() -> None:
    """bert at global batch 12 steps faster on every GPU up to 4, but 4 GPUs would run a local
    batch of 3, below the smallest profiled (4): as in the artifact it gets 3."""
    policy = Optimus(**ARTIFACT_OPTIMUS)
    _, perf = bound(policy, "4x4")
    times = step_times(perf, "bert", 12, 4)
    assert times[1] > times[2] > times[3] > times[4]
    answer = policy.decide(0.0, [waiting_job("bert", 0, 12)])
    assert answer["bert-0"].num_gpus == 12 // perf.limits("bert").min_local_bsz == 3


def test_optimus_refuses_an_unknown_speed_model() -> None:
    with pytest.raises(ValueError, match="speed"):
        Optimus(speed="oracle")


def test_the_batch_search_answers_alike_in_any_epoch_order() -> None:
    """Per-epoch speedups reuse each allocation's searched grid across epochs: the answers do
    not depend on which epochs were asked before."""
    profile = load_profile("cifar10")
    steps = StepTimeModel(profile)
    shapes = [(1, 1), (1, 3), (2, 8), (4, 13)]
    epochs = [0, 57, 3, 99, 57, 20]
    forward, backward = GoodputModel(profile, steps), GoodputModel(profile, steps)
    ahead = {(e, s): forward.best_batch(e, *s) for e in epochs for s in shapes}
    behind = {(e, s): backward.best_batch(e, *s) for e in reversed(epochs) for s in shapes}
    assert ahead == behind
    for e, shape in itertools.product((57, 99), shapes):
        assert GoodputModel(profile, steps).best_batch(e, *shape) == ahead[(e, shape)]
