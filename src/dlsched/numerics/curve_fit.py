"""Bounded nonlinear least squares, the same bits on every CPU (see :mod:`dlsched.numerics`).

:func:`fit_bounded` minimizes ``½·Σ r_i(x)²`` over a box ``lower ≤ x ≤ upper`` by
Levenberg–Marquardt with Marquardt's scaling (the damping is a multiple of the diagonal of
``JᵀJ``, so the steps do not depend on the units of the parameters). Bounds are kept by an
active set: a parameter on a bound whose gradient pushes it outward is held there for the step,
the others take the damped Gauss–Newton step, and the result is clipped to the box. A step is
taken only when it lowers the cost; the damping shrinks after a success and grows after a
failure. It stops when a step lowers the cost by less than ``ftol`` of it, when no parameter
moves by more than ``xtol`` of its size, when the projected gradient vanishes, or when no
damping finds a lower cost.

The caller gives the residuals and their Jacobian by columns (one per parameter), computed with
the operations :mod:`dlsched.numerics` allows. Meant for up to some ten parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dlsched.numerics.lstsq import FloatArray, dot

Vector = Sequence[float] | FloatArray
Residuals = Callable[[tuple[float, ...]], tuple[Vector, Sequence[Vector]]]
"""``x ↦ (residuals, Jacobian columns)``: ``columns[j][i] = ∂r_i/∂x_j`` (sequences or NumPy
arrays)."""


@dataclass(frozen=True, slots=True)
class BoundedFit:
    """Where the fit stopped: the parameters, ``½·Σ r²`` there, and the steps it took."""

    x: tuple[float, ...]
    cost: float
    steps: int


def _cost(residuals: Vector) -> float:
    return 0.5 * dot(residuals, residuals)


def _solve_spd(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """``matrix⁻¹·rhs`` by Cholesky; None when ``matrix`` is not positive definite."""
    n = len(rhs)
    low = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            s = matrix[i][j] - math.fsum([low[i][k] * low[j][k] for k in range(j)])
            if i == j:
                if not s > 0.0:
                    return None
                low[i][i] = math.sqrt(s)
            else:
                low[i][j] = s / low[j][j]
    y = [0.0] * n
    for i in range(n):
        y[i] = (rhs[i] - math.fsum([low[i][k] * y[k] for k in range(i)])) / low[i][i]
    x = [0.0] * n
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - math.fsum([low[k][i] * x[k] for k in range(i + 1, n)])) / low[i][i]
    return x


def fit_bounded(
    model: Residuals,
    x0: Sequence[float],
    lower: Sequence[float],
    upper: Sequence[float],
    *,
    max_steps: int = 500,
    ftol: float = 1e-15,
    xtol: float = 1e-15,
) -> BoundedFit:
    """Minimize ``½·Σ r(x)²`` for ``lower ≤ x ≤ upper`` from ``x0`` (module docstring).

    ``x0`` is clipped into the box first. ValueError when the bounds do not match ``x0`` or
    cross, or when the residuals at the start are not finite.
    """
    n = len(x0)
    if len(lower) != n or len(upper) != n:
        raise ValueError(f"{n} parameters but {len(lower)} lower and {len(upper)} upper bounds")
    if any(lo > hi for lo, hi in zip(lower, upper, strict=True)):
        raise ValueError("a lower bound is above its upper bound")

    def clip(values: Sequence[float]) -> tuple[float, ...]:
        return tuple(min(max(v, lo), hi) for v, lo, hi in zip(values, lower, upper, strict=True))

    x = clip(x0)
    residuals, jacobian = model(x)
    cost = _cost(residuals)
    if not math.isfinite(cost):
        raise ValueError("the residuals at the starting point are not finite")
    damping = 1e-3
    steps = 0
    while steps < max_steps:
        gradient = [dot(column, residuals) for column in jacobian]
        free = [
            j
            for j in range(n)
            if not (x[j] <= lower[j] and gradient[j] > 0.0)
            and not (x[j] >= upper[j] and gradient[j] < 0.0)
        ]
        if not free or all(gradient[j] == 0.0 for j in free):
            break
        normal = [[dot(jacobian[a], jacobian[b]) for b in free] for a in free]
        diagonal = [max(normal[i][i], 1e-300) for i in range(len(free))]
        accepted = False
        while damping <= 1e16:
            damped = [
                [v + (damping * diagonal[i] if i == k else 0.0) for k, v in enumerate(row)]
                for i, row in enumerate(normal)
            ]
            delta = _solve_spd(damped, [-gradient[j] for j in free])
            if delta is None:
                damping *= 10.0
                continue
            trial = list(x)
            for i, j in enumerate(free):
                trial[j] += delta[i]
            candidate = clip(trial)
            new_residuals, new_jacobian = model(candidate)
            new_cost = _cost(new_residuals)
            if math.isfinite(new_cost) and new_cost < cost:
                accepted = True
                break
            damping *= 10.0
        if not accepted:
            break
        steps += 1
        moved = max(abs(c - v) / max(abs(v), 1e-300) for c, v in zip(candidate, x, strict=True))
        gained = (cost - new_cost) / cost if cost > 0.0 else 0.0
        x, residuals, jacobian, cost = candidate, new_residuals, new_jacobian, new_cost
        damping = max(damping / 3.0, 1e-15)
        if gained <= ftol or moved <= xtol or cost == 0.0:
            break
    return BoundedFit(x, cost, steps)
