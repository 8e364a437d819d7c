"""The live performance model: measured step times where a job has run, the profile scaled by
its measured/profile ratio elsewhere, and policies reading it (Optimus refits on new
measurements)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlsched.elastic.policies.optimus import Optimus
from dlsched.perf.perfbook import PerfBook
from dlsched.service.control.live_perf import LiveApplication, LivePerfBook
from tests.elastic.helpers import job_at, view

APP = "cifar10"
VARIANT = "t4"


def profile_step(nodes: int, gpus: int, batch: int) -> float:
    return PerfBook().step_model(APP, VARIANT).iteration_time(nodes, gpus, batch, 0)


def test_a_job_without_measurements_reads_the_profile() -> None:
    book, plain = LivePerfBook(), PerfBook()
    app = LiveApplication(APP, 7)
    assert app == APP and hash(app) == hash(APP) and book.revision(app) == 0
    assert book.iteration_time(app, VARIANT, (2,), 64) == plain.iteration_time(
        APP, VARIANT, (2,), 64
    )
    assert book.best_batch(app, VARIANT, 3, 1, 2) == plain.best_batch(APP, VARIANT, 3, 1, 2)


def test_measured_shapes_give_the_measured_step_time() -> None:
    book = LivePerfBook()
    app = LiveApplication(APP, 1)
    for rate in (40.0, 60.0):
        book.record(1, 1, 2, 64, rate)
    # 2 GPUs × 64 examples at a mean of 50 examples/s.
    assert book.iteration_time(app, VARIANT, (2,), 64) == pytest.approx(128 / 50)
    # The same examples per GPU split into micro-steps is the same measured step.
    assert book.iteration_time(app, VARIANT, (2,), 32, 1) == pytest.approx(128 / 50)
    # Another job of the same application still reads the profile.
    other = LiveApplication(APP, 2)
    assert book.iteration_time(other, VARIANT, (2,), 64) == pytest.approx(profile_step(1, 2, 64))


def test_unmeasured_shapes_scale_the_profile_by_the_measured_ratio() -> None:
    book = LivePerfBook()
    app = LiveApplication(APP, 1)
    book.record(1, 1, 1, 128, 100.0)
    ratio = (128 / 100.0) / profile_step(1, 1, 128)
    for gpus, batch in [(1, 256), (2, 64), (4, 200)]:
        got = book.iteration_time(app, VARIANT, (gpus,), batch)
        assert got == pytest.approx(profile_step(1, gpus, batch) * ratio)


def test_a_job_that_does_not_speed_up_is_not_predicted_to_speed_up() -> None:
    book = LivePerfBook()
    app = LiveApplication(APP, 1)
    # The same 50 examples/s on one GPU and on two, at the same examples per GPU.
    book.record(1, 1, 1, 64, 50.0)
    book.record(1, 1, 2, 64, 50.0)
    r1 = (64 / 50.0) / profile_step(1, 1, 64)
    r2 = (128 / 50.0) / profile_step(1, 2, 64)
    assert book.ratio(app, VARIANT, 3) == pytest.approx(r2 + (r2 - r1))
    assert book.ratio(app, VARIANT, 4) == pytest.approx(r2 + 2 * (r2 - r1))
    throughput = {n: n * 64 / book.iteration_time(app, VARIANT, (n,), 64) for n in (1, 2, 4)}
    assert throughput[4] == pytest.approx(50.0, rel=0.15)
    scaled = {n: n * 64 / PerfBook().iteration_time(APP, VARIANT, (n,), 64) for n in (1, 4)}
    assert scaled[4] > 3 * scaled[1]  # the profile alone says it would


def test_the_ratio_never_drops_below_the_smallest_measured_one() -> None:
    book = LivePerfBook()
    app = LiveApplication(APP, 1)
    # Faster than profiled at two GPUs: extrapolating the falling ratio would go negative.
    book.record(1, 1, 1, 64, 10.0)
    book.record(1, 1, 2, 64, 400.0)
    r2 = (128 / 400.0) / profile_step(1, 2, 64)
    assert book.ratio(app, VARIANT, 4) == pytest.approx(r2)
    assert book.iteration_time(app, VARIANT, (4,), 64) > 0


def test_revisions_change_when_a_mean_moves_and_forget_drops_a_job() -> None:
    book = LivePerfBook()
    app = LiveApplication(APP, 1)
    book.record(1, 1, 1, 64, 50.0)
    first = book.revision(app)
    book.record(1, 1, 1, 64, 50.0)
    assert book.revision(app) == first  # same mean, same answers
    book.record(1, 1, 1, 64, 51.5)  # the mean moves by 1%: noise, the answers stand
    assert book.revision(app) == first
    assert book.iteration_time(app, VARIANT, (1,), 64) == pytest.approx(64 / 50.0)
    book.record(1, 1, 1, 64, 80.0)
    assert book.revision(app) not in (0, first)
    book.record(2, 1, 1, 64, 80.0)
    assert book.revision(LiveApplication(APP, 2)) != book.revision(app)
    book.forget(1)
    assert book.revision(app) == 0 and book.measured(1) == {}
    assert book.iteration_time(app, VARIANT, (1,), 64) == pytest.approx(profile_step(1, 1, 64))


def test_only_the_last_five_throughputs_of_a_shape_count() -> None:
    book = LivePerfBook()
    app = LiveApplication(APP, 1)
    for rate in (1.0, 100.0, 100.0, 100.0, 100.0, 100.0):
        book.record(1, 1, 1, 100, rate)
    assert book.measured(1) == {(1, 1, 100): (100.0,) * 5}
    assert book.iteration_time(app, VARIANT, (1,), 100) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("args", "field"),
    [((0, 1, 8, 1.0), "nodes"), ((2, 1, 8, 1.0), "nodes"), ((1, 1, 0, 1.0), "batch_size")]
    + [((1, 1, 8, r), "rate") for r in (0.0, -1.0, float("nan"), float("inf"))],
)
def test_impossible_measurements_are_refused_naming_the_field(
    args: tuple[int, int, int, float], field: str
) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        LivePerfBook().record(1, *args)


def test_optimus_refits_its_speed_model_on_new_measurements() -> None:
    book = LivePerfBook()
    policy = Optimus(remaining="epochs")
    policy.bind(view("1x4"), book, 0)
    base = job_at(1, APP, 2)
    job = replace(base, application=LiveApplication(APP, base.index))
    bsz = job.requested_bsz
    assert policy.decide(0.0, [job])[job.name].num_gpus > 1
    # Measured: one and two GPUs process the same examples per second.
    book.record(job.index, 1, 1, bsz, 50.0)
    book.record(job.index, 1, 2, bsz // 2, 50.0)
    assert policy.decide(60.0, [job])[job.name].num_gpus == 1
