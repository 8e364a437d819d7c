"""Monotone curves through measured knots, shaped by a fitted form between and beyond them.

A :class:`ShapedCurve` through knots ``(x_i, y_i)`` (``x`` increasing, ``y`` non-decreasing)
with the fitted form ``f(x) = fixed + slope·x``:

- between two knots it is ``f(x)·r(x)``, where ``r = y/f`` (the form's residual ratio) is
  interpolated linearly in ``log x`` (geometrically) from one knot's ratio to the next's: an
  unmeasured point follows the form, corrected as its neighbours are; it is kept between the
  two knots' values (``f·r`` is quasi-convex in ``log x`` there, as ``f``'s elasticity grows
  with ``x``, so the floor at the left knot's value keeps it monotone without moving a knot);
- beyond the last knot it grows by the form's marginal cost: ``y_last + slope·(x − x_last)``;
- below the first knot it falls by the first segment's marginal cost, ``y_0 − s_0·(x_0 − x)``
  (the measured flattening of small batches: an iteration below the smallest measured one
  costs about as much), but never below the form scaled by the first knot's ratio,
  ``f(x)·r_0`` (positive).

So the curve passes through every knot, is continuous, positive for ``x > 0`` and
non-decreasing. A form that is 0 at the first knot is replaced by ``f = 1`` (plain geometric
interpolation). Evaluation uses only ``+ − × ÷``, comparisons and the C library's ``pow``, and
construction its ``log``, so a curve gives the same bits on every CPU (:mod:`dlsched.numerics`).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise


@dataclass(frozen=True, slots=True)
class ShapedCurve:
    """Build with :func:`shaped_curve`; ``ratios[i] = ys[i] / form(xs[i])``, ``powers[i]`` the
    exponent of the ratio's geometric interpolation between knots ``i`` and ``i + 1``, and
    ``low_slope`` the first segment's slope (the form's for a single knot)."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]
    fixed: float
    slope: float
    ratios: tuple[float, ...]
    powers: tuple[float, ...]
    low_slope: float

    def form(self, x: float) -> float:
        """The fitted form at ``x``."""
        return self.fixed + self.slope * x

    def __call__(self, x: float) -> float:
        xs = self.xs
        ys = self.ys
        # Knots give their values exactly and a segment stays between its knots' values (as
        # it does without rounding), so rounding cannot make the curve fall.
        if x <= xs[0]:
            shaped = (self.fixed + self.slope * x) * self.ratios[0]
            return min(ys[0], max(shaped, ys[0] - self.low_slope * (xs[0] - x)))
        if x >= xs[-1]:
            return ys[-1] + self.slope * (x - xs[-1])
        i = bisect_right(xs, x) - 1
        if x == xs[i]:
            return ys[i]
        ratio = self.ratios[i] * math.pow(x / xs[i], self.powers[i])
        return min(ys[i + 1], max(ys[i], (self.fixed + self.slope * x) * ratio))


def shaped_curve(
    xs: Sequence[float], ys: Sequence[float], fixed: float = 0.0, slope: float = 0.0
) -> ShapedCurve:
    """The curve through knots ``(xs[i], ys[i])`` shaped by ``fixed + slope·x``. ValueError
    unless there is a knot, ``xs`` is positive and increasing, ``ys`` positive and
    non-decreasing (see :func:`isotonic`), and ``fixed, slope >= 0``."""
    if not xs or len(xs) != len(ys):
        raise ValueError(f"a curve needs knots with one value each, got {len(xs)} and {len(ys)}")
    if xs[0] <= 0 or any(b <= a for a, b in pairwise(xs)):
        raise ValueError(f"knots must be positive and increasing: {list(xs)}")
    if ys[0] <= 0 or any(b < a for a, b in pairwise(ys)):
        raise ValueError(f"knot values must be positive and non-decreasing: {list(ys)}")
    if fixed < 0 or slope < 0:
        raise ValueError(f"the form must not decrease: fixed {fixed}, slope {slope}")
    if fixed + slope * xs[0] <= 0:
        fixed, slope = 1.0, 0.0
    ratios = [y / (fixed + slope * x) for x, y in zip(xs, ys, strict=True)]
    powers = [
        math.log(r1 / r0) / math.log(x1 / x0)
        for x0, x1, r0, r1 in zip(xs, xs[1:], ratios, ratios[1:], strict=False)
    ]
    return ShapedCurve(
        tuple(float(x) for x in xs),
        tuple(float(y) for y in ys),
        float(fixed),
        float(slope),
        tuple(ratios),
        tuple(powers),
        (ys[1] - ys[0]) / (xs[1] - xs[0]) if len(xs) > 1 else slope,
    )


def isotonic(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The non-decreasing sequence nearest ``values`` in weighted least squares (pool
    adjacent violators): a run of values that falls is replaced by its weighted mean. Values
    already non-decreasing come back unchanged."""
    if len(values) != len(weights):
        raise ValueError(f"{len(values)} values but {len(weights)} weights")
    blocks: list[tuple[float, float, int]] = []  # (mean, weight, count)
    for v, w in zip(values, weights, strict=True):
        mean, weight, count = float(v), float(w), 1
        while blocks and blocks[-1][0] > mean:
            m0, w0, c0 = blocks.pop()
            mean = (m0 * w0 + mean * weight) / (w0 + weight)
            weight, count = w0 + weight, c0 + count
        blocks.append((mean, weight, count))
    return [mean for mean, _, count in blocks for _ in range(count)]
