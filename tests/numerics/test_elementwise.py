"""exp, log and pow of arrays through the C library: values, shapes and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlsched.numerics import elementwise


def test_values_are_the_scalar_functions_and_shapes_are_kept() -> None:
    x = np.linspace(0.1, 20.0, 12).reshape(3, 4)
    assert elementwise.exp(x).shape == (3, 4)
    assert [float(v) for v in elementwise.exp(x).ravel()] == [math.exp(v) for v in x.ravel()]
    assert [float(v) for v in elementwise.log(x).ravel()] == [math.log(v) for v in x.ravel()]
    assert [float(v) for v in elementwise.power(x, 2.5).ravel()] == [v**2.5 for v in x.ravel()]
    assert elementwise.exp([]).shape == (0,)


def test_overflow_is_inf_as_numpy_and_log_of_zero_is_refused() -> None:
    assert elementwise.exp([1000.0])[0] == math.inf
    assert elementwise.power([1e300], 10.0)[0] == math.inf
    with pytest.raises(ValueError):
        elementwise.log([0.0])
