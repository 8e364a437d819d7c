"""Least squares of dlsched.numerics: the optimum (against SciPy and by its optimality
conditions), rank deficiency, bad input, and that the answer does not depend on BLAS."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import nnls as scipy_nnls

from dlsched.numerics.lstsq import dot, lstsq, nnls


@st.composite
def problems(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """A random ``A`` (columns of very different scales, sometimes a repeated or constant
    column) and ``b`` (sometimes exactly in the non-negative cone of ``A``)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    m = draw(st.integers(3, 30))
    n = draw(st.integers(1, 7))
    a = rng.normal(size=(m, n)) * np.exp(rng.normal(size=n) * 3)
    if n > 1 and draw(st.booleans()):
        a[:, -1] = a[:, 0]
    if draw(st.booleans()):
        a[:, 0] = 1.0
    b = rng.normal(size=m)
    if draw(st.booleans()):
        b = a @ np.abs(rng.normal(size=n))
    return a, b


def residual(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
    return float(np.linalg.norm(a @ x - b))


@settings(max_examples=300, deadline=None)
@given(problems())
def test_nnls_reaches_the_optimum(problem: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = problem
    x = np.array(nnls(a.T.tolist(), b.tolist()))
    assert np.all(x >= 0)
    reference, _ = scipy_nnls(a, b)
    slack = 1e-9 * max(residual(a, b, reference), float(np.linalg.norm(b)))
    assert residual(a, b, x) <= residual(a, b, reference) + slack
    # Optimality (KKT): no used column can improve, no unused column points downhill.
    gradient = a.T @ (b - a @ x)
    scale = np.linalg.norm(a, axis=0) * max(float(np.linalg.norm(b)), 1.0) * 1e-7
    assert np.all(gradient <= scale)
    assert np.all(np.abs(gradient[x > 0]) <= scale[x > 0])


@settings(max_examples=200, deadline=None)
@given(problems())
def test_lstsq_matches_numpy_on_full_rank_problems(
    problem: tuple[np.ndarray, np.ndarray],
) -> None:
    a, b = problem
    if np.linalg.matrix_rank(a) < a.shape[1] or np.linalg.cond(a) > 1e8:
        return
    found = lstsq(a.T.tolist(), b.tolist())
    assert found.independent == tuple(range(a.shape[1]))
    expected = np.linalg.lstsq(a, b, rcond=None)[0]
    slack = 1e-10 * float(np.linalg.norm(b))
    assert residual(a, b, np.array(found.x)) <= residual(a, b, expected) * (1 + 1e-9) + slack


def test_a_dependent_column_gets_zero_and_the_earliest_columns_are_kept() -> None:
    ones = [1.0] * 5
    k = [1.0, 2.0, 3.0, 4.0, 5.0]
    y = [3.0 + 2.0 * v for v in k]
    found = lstsq([ones, k, ones, [2.0 * v for v in k]], y)
    assert found.independent == (0, 1)
    assert found.x[0] == pytest.approx(3.0) and found.x[1] == pytest.approx(2.0)
    assert found.x[2:] == (0.0, 0.0)
    # NNLS on the same columns: the prediction is exact and the twins stay at 0.
    x = nnls([ones, k, ones, [2.0 * v for v in k]], y)
    predicted = [x[0] + x[1] * v + x[2] + 2 * x[3] * v for v in k]
    assert predicted == pytest.approx(y)
    assert sum(1 for v in x if v > 0) == 2


def test_nnls_keeps_negative_coefficients_at_zero() -> None:
    # The unconstrained fit is y = 4 − 1·k; with x ≥ 0 the slope must be 0 and the intercept
    # the mean.
    k = [1.0, 2.0, 3.0]
    x = nnls([[1.0, 1.0, 1.0], k], [3.0, 2.0, 1.0])
    assert x == (pytest.approx(2.0), 0.0)


def test_the_answer_is_exactly_repeatable() -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(size=(40, 5))
    b = rng.normal(size=40)
    first = nnls(a.T.tolist(), b.tolist())
    assert all(nnls(a.T.tolist(), b.tolist()) == first for _ in range(5))


def test_dot_is_correctly_rounded() -> None:
    # A naive sum gives 0 here; the exact value is 1.
    u = [1e100, 1.0, -1e100]
    assert dot(u, [1.0, 1.0, 1.0]) == 1.0
    assert dot(np.array(u), np.ones(3)) == 1.0
    with pytest.raises(ValueError):
        dot(np.ones(2), np.ones(3))


@pytest.mark.parametrize(
    ("columns", "b", "message"),
    [
        ([], [1.0], "at least one column"),
        ([[1.0, 2.0]], [1.0], "has 2 rows"),
        ([[1.0, math.nan]], [1.0, 2.0], "finite"),
        ([[1.0, 2.0]], [1.0, math.inf], "finite"),
    ],
)
def test_bad_input_is_refused(columns: list[list[float]], b: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        lstsq(columns, b)
    with pytest.raises(ValueError, match=message):
        nnls(columns, b)
