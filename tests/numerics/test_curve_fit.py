"""Bounded nonlinear least squares of dlsched.numerics: known optima, bounds, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import least_squares

from dlsched.numerics.curve_fit import fit_bounded


def exponential(t: list[float], y: list[float]):  # type: ignore[no-untyped-def]
    """Residuals of ``a·exp(−k·t) + c`` and their Jacobian."""

    def model(x: tuple[float, ...]) -> tuple[list[float], list[list[float]]]:
        a, k, c = x
        e = [math.exp(-k * v) for v in t]
        r = [a * ei + c - yi for ei, yi in zip(e, y, strict=True)]
        return r, [e, [-a * v * ei for v, ei in zip(t, e, strict=True)], [1.0] * len(t)]

    return model


@settings(max_examples=60, deadline=None)
@given(st.floats(0.5, 20.0), st.floats(0.05, 2.0), st.floats(0.0, 5.0), st.integers(0, 2**32 - 1))
def test_recovers_an_exponential_and_is_at_least_as_good_as_scipy(
    a: float, k: float, c: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 10.0, 25)
    y = a * np.exp(-k * t) + c + rng.normal(scale=0.01 * a, size=t.size)
    model = exponential(t.tolist(), y.tolist())
    fit = fit_bounded(model, (1.0, 0.5, 0.0), (0.0, 0.0, 0.0), (math.inf, math.inf, math.inf))
    reference = least_squares(
        lambda x: np.asarray(model(tuple(x))[0]),
        (1.0, 0.5, 0.0),
        bounds=(0.0, np.inf),
        method="trf",
    )
    assert fit.cost <= reference.cost * (1 + 1e-6) + 1e-15
    # The fitted curve follows the true one to within the noise.
    a_fit, k_fit, c_fit = fit.x
    assert np.allclose(a_fit * np.exp(-k_fit * t) + c_fit, a * np.exp(-k * t) + c, atol=0.05 * a)


def test_a_bound_holds_a_parameter_the_data_push_beyond_it() -> None:
    # y = −2 + 3·t, fitted with an intercept bounded below by 0: the intercept stays at 0 and
    # the slope is the best one through the origin.
    t = [1.0, 2.0, 3.0, 4.0]
    y = [-2.0 + 3.0 * v for v in t]

    def model(x: tuple[float, ...]) -> tuple[list[float], list[list[float]]]:
        return [x[0] + x[1] * v - yi for v, yi in zip(t, y, strict=True)], [[1.0] * 4, t]

    fit = fit_bounded(model, (1.0, 1.0), (0.0, -math.inf), (math.inf, math.inf))
    assert fit.x[0] == 0.0
    slope = sum(v * w for v, w in zip(t, y, strict=True)) / sum(v * v for v in t)
    assert fit.x[1] == pytest.approx(slope, rel=1e-12)


def test_a_start_outside_the_box_is_clipped_and_the_run_is_repeatable() -> None:
    model = exponential([0.0, 1.0, 2.0, 3.0], [5.0, 3.0, 2.0, 1.5])
    first = fit_bounded(model, (-3.0, 9.0, 0.0), (0.0, 0.0, 0.0), (10.0, 1.0, 10.0))
    assert all(v >= 0.0 for v in first.x) and first.x[1] <= 1.0
    again = fit_bounded(model, (-3.0, 9.0, 0.0), (0.0, 0.0, 0.0), (10.0, 1.0, 10.0))
    assert again == first


def test_bad_bounds_and_a_bad_start_are_refused() -> None:
    model = exponential([0.0, 1.0], [1.0, 0.5])
    with pytest.raises(ValueError, match="bounds"):
        fit_bounded(model, (1.0, 1.0, 0.0), (0.0, 0.0), (1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="above"):
        fit_bounded(model, (1.0, 1.0, 0.0), (0.0, 2.0, 0.0), (1.0, 1.0, 1.0))

    def nan(x: tuple[float, ...]) -> tuple[list[float], list[list[float]]]:
        return [math.nan], [[1.0]]

    with pytest.raises(ValueError, match="not finite"):
        fit_bounded(nan, (1.0,), (0.0,), (2.0,))
