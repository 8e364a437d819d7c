"""Optimus models: the loss-curve fit and the parameter-server speed fit recover what made the
data."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dlsched.perf.optimus import (
    LossCurve,
    PsSpeedModel,
    PsSpeedParams,
    fit_loss_curve,
    fit_ps_speed,
    loss_from_metric,
)
from dlsched.perf.profiles import load_profile

CURVES = [
    LossCurve(2e-3, 0.5, 0.3),
    LossCurve(5e-5, 0.02, 1.7),  # slow, high floor
    LossCurve(0.1, 2.0, 0.0),  # converges to zero loss
]


@pytest.mark.parametrize("true", CURVES)
def test_loss_fit_recovers_known_parameters(true: LossCurve) -> None:
    steps = np.linspace(0, 20 / true.beta0 * true.beta1, 60)
    losses = [true(k) for k in steps]
    fitted = fit_loss_curve(steps.tolist(), losses)
    assert fitted.beta0 == pytest.approx(true.beta0, rel=1e-4)
    assert fitted.beta1 == pytest.approx(true.beta1, rel=1e-4)
    assert fitted.beta2 == pytest.approx(true.beta2, rel=1e-4, abs=1e-6)


def test_loss_fit_with_noise() -> None:
    true = CURVES[0]
    rng = np.random.default_rng(7)
    steps = np.arange(0, 5000, 25.0)
    losses = [true(k) * (1 + 0.01 * rng.standard_normal()) for k in steps]
    fitted = fit_loss_curve(steps.tolist(), losses)
    assert fitted.beta2 == pytest.approx(true.beta2, rel=0.02)
    assert fitted(10_000) == pytest.approx(true(10_000), rel=0.02)
    assert fit_loss_curve(steps.tolist(), losses) == fitted  # deterministic


def test_remaining_steps_inverts_the_curve() -> None:
    curve = CURVES[0]
    k = curve.steps_to(0.4)
    assert curve(k) == pytest.approx(0.4)
    assert curve.remaining_steps(1000, 0.4) == pytest.approx(k - 1000)
    assert curve.remaining_steps(k + 5, 0.4) == 0.0
    assert curve.steps_to(curve(0) + 1) == 0.0
    assert math.isinf(curve.steps_to(0.3)) and math.isinf(curve.steps_to(0.1))


def test_loss_fit_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        fit_loss_curve([1, 2], [1.0, 0.5])
    with pytest.raises(ValueError):
        fit_loss_curve([1, 2, 3], [1.0, 0.0, 0.5])


def test_loss_fit_on_a_measured_curve() -> None:
    # cifar10's error rate (1 − accuracy) per epoch at batch 128: the fit follows the curve
    # within 15% (root mean square relative error) despite the learning-rate steps.
    curve = load_profile("cifar10").validation[0]
    loss = loss_from_metric("cifar10", curve.metric)
    assert loss[-1] == pytest.approx(1 - curve.metric[-1])
    fitted = fit_loss_curve(curve.iteration, loss)
    pred = np.array([fitted(k) for k in curve.iteration])
    assert np.sqrt(np.mean(((pred - loss) / loss) ** 2)) < 0.15
    # Word error rate already decreases.
    assert loss_from_metric("deepspeech2", [30.0]) == (30.0,)
    with pytest.raises(ValueError):
        loss_from_metric("gpt", [1.0])


THETA = PsSpeedParams(theta0=0.002, theta1=0.05, theta2=0.03, theta3=0.004, theta4=0.01)
GRID = [(p, w) for p in range(1, 6) for w in range(1, 9)]


@pytest.mark.parametrize(
    "theta", [THETA, dataclasses.replace(THETA, theta3=0.0, theta4=0.0)], ids=["all", "sparse"]
)
def test_speed_fit_recovers_known_theta(theta: PsSpeedParams) -> None:
    truth = PsSpeedModel(theta, global_bsz=256)
    fitted = fit_ps_speed([(p, w, truth(p, w)) for p, w in GRID], 256)
    for field in dataclasses.fields(PsSpeedParams):
        assert getattr(fitted.params, field.name) == pytest.approx(
            getattr(theta, field.name), rel=1e-6, abs=1e-12
        )
    assert fitted(3, 7) == pytest.approx(truth(3, 7))


def test_speed_fit_with_noise_predicts_unseen_allocations() -> None:
    truth = PsSpeedModel(THETA, global_bsz=512)
    rng = np.random.default_rng(3)
    samples = [(p, w, truth(p, w) * (1 + 0.02 * rng.standard_normal())) for p, w in GRID]
    fitted = fit_ps_speed(samples, 512)
    for p, w in [(8, 16), (2, 12), (6, 4)]:
        assert fitted(p, w) == pytest.approx(truth(p, w), rel=0.1)


def test_speed_model_contract() -> None:
    model = PsSpeedModel(THETA, 256)
    assert model.step_time(2, 4) == pytest.approx(
        0.002 * 256 / 4 + 0.05 + 0.03 * 4 / 2 + 0.004 * 4 + 0.01 * 2
    )
    assert model(2, 4) == pytest.approx(1 / model.step_time(2, 4))
    with pytest.raises(ValueError):
        model.step_time(0, 4)
    with pytest.raises(ValueError):
        fit_ps_speed([(1, 1, 1.0)] * 4, 256)
    with pytest.raises(ValueError):
        fit_ps_speed([(1, 1, 0.0)] * 5, 256)
