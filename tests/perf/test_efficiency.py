"""Statistical efficiency from the validation curves: gain, epochs and progress."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dlsched.perf.efficiency import (
    EPOCHS,
    efficiency_model,
    epoch_of,
    gain,
    gain_from_stats,
    total_progress,
)
from dlsched.perf.goodput import (
    MAX_ACCUM_STEPS,
    BatchConfig,
    BatchLimits,
    GoodputModel,
    batch_limits,
    best_batch,
    goodput,
    goodput_model,
)
from dlsched.perf.pollux_fit import fitted_model
from dlsched.perf.profiles import APPLICATIONS, load_profile
from dlsched.perf.steptime import StepTimeModel

stat = st.floats(min_value=0.0, max_value=1e16, allow_nan=False)


@given(var=stat, sqr=stat, scale=st.floats(min_value=1.0, max_value=1e4))
def test_gain_formula_bounds(var: float, sqr: float, scale: float) -> None:
    g = gain_from_stats(var, sqr, scale)
    assert 1.0 - 1e-9 <= g <= scale * (1 + 1e-9)
    assert gain_from_stats(var, sqr, 1.0) == pytest.approx(1.0)
    assert gain_from_stats(var, sqr, scale * 2) >= g * (1 - 1e-12)


def test_gain_formula_values() -> None:
    # Pure noise scales perfectly, a noiseless gradient not at all.
    assert gain_from_stats(1.0, 0.0, 8.0) == pytest.approx(8.0)
    assert gain_from_stats(0.0, 1.0, 8.0) == pytest.approx(1.0)
    assert gain_from_stats(3.0, 1.0, 4.0) == pytest.approx(4.0 / (0.75 + 1.0))
    assert gain_from_stats(0.0, 0.0, 4.0) == 1.0
    with pytest.raises(ValueError):
        gain_from_stats(1.0, 1.0, 0.0)


@pytest.mark.parametrize("app", APPLICATIONS)
def test_gain_is_one_at_the_initial_batch_and_sublinear(app: str) -> None:
    m = efficiency_model(app)
    sizes = np.geomspace(m.initial_bsz, m.batch_sizes[-1] * 2, 40)
    for epoch in range(m.num_epochs):
        assert gain(app, epoch, m.initial_bsz) == pytest.approx(1.0)
        gains = [m.gain(epoch, float(b)) for b in sizes]
        scales = sizes / m.initial_bsz
        assert all(1.0 - 1e-12 <= g <= s * (1 + 1e-12) for g, s in zip(gains, scales, strict=True))
        assert gains[-1] > 1.0
        assert all(0 < m.efficiency(epoch, float(b)) <= 1 + 1e-12 for b in sizes)


@pytest.mark.parametrize("app", APPLICATIONS)
def test_gain_grows_with_batch(app: str) -> None:
    # In the first epochs the measured noise ratio var/sqr falls with batch size for some
    # sizes (cifar10 epoch 0: 0.75 at 1024, 0.51 at 2048), so the gain dips there as the data
    # do; where the data rise, interpolation dips by < 1%, and from epoch 4 on it never dips.
    m = efficiency_model(app)
    sizes = np.geomspace(m.initial_bsz, m.batch_sizes[-1], 200)
    for epoch in range(m.num_epochs):
        gains = np.array([m.gain(epoch, float(b)) for b in sizes])
        at_validated = np.array([m.gain(epoch, float(b)) for b in m.batch_sizes])
        if epoch >= 4:
            assert np.all(np.diff(gains) >= -1e-12), epoch
        elif np.all(np.diff(at_validated) >= 0):
            assert np.all(gains >= np.maximum.accumulate(gains) * 0.99), epoch


def test_stats_interpolate_in_log_batch() -> None:
    m = efficiency_model("cifar10")
    p = load_profile("cifar10")
    c256, c512 = p.validation[1], p.validation[2]
    var, sqr = m.stats(10, 256 * math.sqrt(2))
    assert var == pytest.approx((c256.grad_var[10] + c512.grad_var[10]) / 2)
    assert sqr == pytest.approx((c256.grad_sqr[10] + c512.grad_sqr[10]) / 2)
    # Outside the validated range: the nearest curve; epochs clamp to the measured ones.
    assert m.stats(3, 64) == (p.validation[0].grad_var[3], p.validation[0].grad_sqr[3])
    assert m.stats(500, 10**6) == (p.validation[-1].grad_var[-1], p.validation[-1].grad_sqr[-1])


@pytest.mark.parametrize("app", APPLICATIONS)
def test_epochs_and_progress(app: str) -> None:
    m = efficiency_model(app)
    curves = load_profile(app).validation
    assert m.num_epochs == EPOCHS[app]
    for e, need in enumerate(m.required):
        assert need == min(c.progress[e] for c in curves)
        assert epoch_of(app, need * (1 - 1e-12)) == e
        assert epoch_of(app, need) == e + 1
    assert epoch_of(app, 0.0) == 0
    assert total_progress(app) == m.required[-1]
    assert epoch_of(app, total_progress(app)) == m.num_epochs
    assert all(b > a for a, b in itertools.pairwise(m.required))


def test_known_totals() -> None:
    # The progress column is in steps at the initial batch: an epoch of bert at batch 12 is
    # 7,387 steps, so two epochs need 14,774.
    assert total_progress("bert") == 14774.0
    assert total_progress("ncf") == 194174.0
    assert total_progress("deepspeech2") == 28536.0
    assert efficiency_model("yolov3").initial_bsz == 8


# ---- goodput: throughput × efficiency, and the best batch configuration ------------------


def test_goodput_is_throughput_times_efficiency() -> None:
    model = goodput_model("cifar10")
    steps = StepTimeModel(load_profile("cifar10"))
    g = model.evaluate(30, 2, 8, BatchConfig(128, accum_steps=2))
    assert g.global_bsz == 8 * 128 * 3
    assert g.step_time == pytest.approx(steps(2, 8, 128).with_accumulation(2))
    assert g.throughput == pytest.approx(g.global_bsz / g.step_time)
    assert g.goodput == pytest.approx(g.throughput * g.efficiency)
    assert g.progress_rate == pytest.approx(gain("cifar10", 30, g.global_bsz) / g.step_time)
    assert goodput("cifar10", 30, 2, 8, BatchConfig(128, 2)) == pytest.approx(g.goodput)


def test_batch_limits_from_profiles() -> None:
    assert batch_limits(load_profile("yolov3")) == BatchLimits(4, 8, 8, 512, MAX_ACCUM_STEPS)
    assert batch_limits(load_profile("imagenet")) == BatchLimits(20, 200, 200, 12800, 15)
    assert batch_limits(load_profile("imagenet", "dgx-ext")).max_local_bsz == 800


@pytest.mark.parametrize("app", APPLICATIONS)
def test_best_batch_respects_limits(app: str) -> None:
    lim = batch_limits(load_profile(app))
    for replicas in (1, 3, 8, 32):
        nodes = -(-replicas // 4)
        best = best_batch(app, 1, nodes, replicas)
        assert lim.min_global_bsz <= best.global_bsz <= lim.max_global_bsz
        assert lim.min_local_bsz <= best.config.local_bsz <= lim.max_local_bsz
        assert best.config.accum_steps <= lim.max_accum_steps
        capped = best_batch(app, 1, nodes, replicas, max_local_bsz=lim.min_local_bsz)
        assert capped.config.local_bsz == lim.min_local_bsz


def test_best_batch_beats_every_configuration() -> None:
    # bert's local batch range is small enough to try every configuration.
    model = goodput_model("bert")
    lim = model.limits
    for epoch, nodes, replicas in [(0, 1, 1), (1, 1, 3), (0, 2, 8)]:
        best = model.best_batch(epoch, nodes, replicas)
        for b in range(lim.min_local_bsz, lim.max_local_bsz + 1):
            for s in range(lim.max_accum_steps + 1):
                config = BatchConfig(b, s)
                if lim.min_global_bsz <= config.global_bsz(replicas) <= lim.max_global_bsz:
                    other = model.evaluate(epoch, nodes, replicas, config)
                    assert best.goodput >= other.goodput * (1 - 1e-12)


@pytest.mark.parametrize("app", APPLICATIONS)
def test_best_batch_grows_with_replicas(app: str) -> None:
    # With the fitted (smooth) Pollux model the goodput-optimal global batch never shrinks as
    # replicas double, four per node; the measured table is noisier, so there only the large
    # allocation's batch is checked against the single replica's.
    profile = load_profile(app)
    smooth = GoodputModel(profile, fitted_model(app))
    table = goodput_model(app)
    replicas = (1, 2, 4, 8, 16, 32, 64)
    for epoch in (0, EPOCHS[app] // 2, EPOCHS[app] - 1):
        sizes = [smooth.best_batch(epoch, -(-r // 4), r).global_bsz for r in replicas]
        assert sizes == sorted(sizes), (epoch, sizes)
        measured = [table.best_batch(epoch, -(-r // 4), r).global_bsz for r in replicas]
        if measured[0] < profile.max_global_bsz:
            assert min(measured) == measured[0] < measured[-1], (epoch, measured)


def test_best_batch_when_nothing_fits() -> None:
    # 256 yolov3 replicas at the smallest local batch exceed the largest validated batch.
    best = best_batch("yolov3", 10, 64, 256)
    assert best.config == BatchConfig(4, 0)
