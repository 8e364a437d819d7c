"""``exp``, ``log`` and ``pow`` of arrays through the C library's scalar functions.

NumPy evaluates these with vector code chosen for the CPU at run time (AVX-512 on one machine,
AVX2 on another), and the two differ in the last bit for some inputs; these map the scalar
functions of :mod:`math` over the array instead, so an input gives the same output on every CPU
(see :mod:`dlsched.numerics`). They are slower than NumPy's (about 50 ns an element): use them
where the result decides something, not for plotting.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import repeat

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def _unary(function: Callable[[float], float], x: npt.ArrayLike) -> FloatArray:
    a = np.asarray(x, dtype=np.float64)
    return np.fromiter(map(function, a.ravel().tolist()), np.float64, a.size).reshape(a.shape)


def _exp(value: float) -> float:
    try:
        return math.exp(value)
    except OverflowError:
        return math.inf


def exp(x: npt.ArrayLike) -> FloatArray:
    """``e**x`` element by element; ``inf`` where it overflows (above about 709.78), as NumPy."""
    return _unary(_exp, x)


def log(x: npt.ArrayLike) -> FloatArray:
    """The natural logarithm element by element; ValueError for an element ≤ 0."""
    return _unary(math.log, x)


def _pow(base: float, exponent: float) -> float:
    try:
        return math.pow(base, exponent)
    except OverflowError:
        return math.inf


def power(base: npt.ArrayLike, exponent: float) -> FloatArray:
    """``base**exponent`` element by element, one exponent for all (as :func:`math.pow`, but
    ``inf`` where it overflows, as NumPy; ValueError for a negative base and a fractional
    exponent)."""
    b = np.asarray(base, dtype=np.float64)
    values = map(_pow, b.ravel().tolist(), repeat(float(exponent)))
    return np.fromiter(values, np.float64, b.size).reshape(b.shape)
