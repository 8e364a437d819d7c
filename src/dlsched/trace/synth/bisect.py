"""Bisection, the one-dimensional solver of the Helios-like generator's calibration."""

from __future__ import annotations

from collections.abc import Callable

_BISECTION_STEPS = 48


def bisect(
    f: Callable[[float], float], low: float, high: float, steps: int = _BISECTION_STEPS
) -> float:
    """A root of non-decreasing ``f`` on ``[low, high]`` after ``steps`` halvings; the nearer
    end if ``f`` keeps one sign on the interval."""
    if f(low) >= 0:
        return low
    if f(high) <= 0:
        return high
    for _ in range(steps):
        mid = (low + high) / 2
        if f(mid) < 0:
            low = mid
        else:
            high = mid
    return (low + high) / 2
