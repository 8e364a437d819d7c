"""Linear and non-negative least squares for problems of a few columns, the same bits on every
CPU (see :mod:`dlsched.numerics`).

A matrix is given as its columns (sequences of equal length ``m``). :func:`lstsq` triangularizes
them by Householder reflections in the order given and skips a column whose part orthogonal to
the ones before is at most ``rtol`` times its norm (a column that adds nothing new gets the
coefficient 0, so a rank-deficient system has a definite answer: the one using the earliest
independent columns). Inner products are :func:`math.fsum` of the products, so they do not
depend on an order of summation. :func:`nnls` is Lawson and Hanson's active-set algorithm
(*Solving Least Squares Problems*, 1974, ch. 23) over :func:`lstsq`.

Meant for up to some ten columns and a few thousand rows; the cost is ``O(m·n²)`` Python float
operations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

RTOL = 1e-10
"""A column whose part not explained by the earlier ones is at most this fraction of its norm
counts as dependent on them."""

_EPS = 2.220446049250313e-16


@dataclass(frozen=True, slots=True)
class LstsqResult:
    """The solution (0 for every dependent column) and which columns were independent."""

    x: tuple[float, ...]
    independent: tuple[int, ...]


def dot(u: Sequence[float] | FloatArray, v: Sequence[float] | FloatArray) -> float:
    """``Σ u_i·v_i``, each product rounded once and the sum correctly rounded (sequences or
    NumPy arrays of equal length; NumPy's products are IEEE products too)."""
    if isinstance(u, np.ndarray) or isinstance(v, np.ndarray):
        if len(u) != len(v):
            raise ValueError(f"dot of lengths {len(u)} and {len(v)}")
        return math.fsum(np.multiply(u, v).tolist())
    return math.fsum([a * b for a, b in zip(u, v, strict=True)])


def norm(u: Sequence[float]) -> float:
    """The Euclidean norm of ``u``."""
    return math.sqrt(math.fsum([a * a for a in u]))


def _check(columns: Sequence[Sequence[float]], b: Sequence[float]) -> int:
    m = len(b)
    if not columns:
        raise ValueError("least squares needs at least one column")
    for j, column in enumerate(columns):
        if len(column) != m:
            raise ValueError(f"column {j} has {len(column)} rows, the right-hand side {m}")
    values = [float(v) for c in columns for v in c] + [float(v) for v in b]
    if not all(math.isfinite(v) for v in values):
        raise ValueError("least squares needs finite values")
    return m


def lstsq(
    columns: Sequence[Sequence[float]], b: Sequence[float], rtol: float = RTOL
) -> LstsqResult:
    """Minimize ``‖A·x − b‖`` for ``A`` given by ``columns`` (module docstring).

    ValueError for no columns, columns of another length than ``b``, or a value that is not
    finite.
    """
    m = _check(columns, b)
    work = [[float(v) for v in c] for c in columns]
    rhs = [float(v) for v in b]
    independent: list[int] = []
    for j, column in enumerate(work):
        k = len(independent)
        full = norm(column)
        if k >= m or full == 0.0:
            continue
        tail = norm(column[k:])
        if tail <= rtol * full:
            continue
        alpha = -math.copysign(tail, column[k])
        v = [column[k] - alpha, *column[k + 1 :]]
        vv = math.fsum([t * t for t in v])
        column[k] = alpha
        for i in range(k + 1, m):
            column[i] = 0.0
        for target in (*work[j + 1 :], rhs):
            scale = 2.0 * dot(v, target[k:]) / vv
            for i, t in enumerate(v, start=k):
                target[i] -= scale * t
        independent.append(j)
    x = [0.0] * len(columns)
    for row in range(len(independent) - 1, -1, -1):
        j = independent[row]
        known = math.fsum(
            [
                work[independent[c]][row] * x[independent[c]]
                for c in range(row + 1, len(independent))
            ]
        )
        x[j] = (rhs[row] - known) / work[j][row]
    return LstsqResult(tuple(x), tuple(independent))


def nnls(
    columns: Sequence[Sequence[float]], b: Sequence[float], max_iter: int | None = None
) -> tuple[float, ...]:
    """Minimize ``‖A·x − b‖`` subject to ``x ≥ 0`` (Lawson–Hanson; module docstring).

    Returns ``x``; a column dependent on the columns in use keeps 0. After ``max_iter`` (by
    default ``3·n``) columns have entered without reaching the optimum, which exact arithmetic
    rules out, it returns the feasible point reached. ValueError as for :func:`lstsq`.
    """
    m = _check(columns, b)
    n = len(columns)
    cols = [[float(v) for v in c] for c in columns]
    rhs = [float(v) for v in b]
    limit = 3 * n if max_iter is None else max_iter
    # A column's gradient is noise below this: rounding in the residual, scaled by the column
    # (per column, so a column of small norm can still enter).
    size = 10.0 * _EPS * max(m, n) * max(norm(rhs), 1e-300)
    tol = [size * norm(c) for c in cols]
    x = [0.0] * n
    passive: list[int] = []
    excluded: set[int] = set()
    for _ in range(limit + 1):
        residual = [
            bi - math.fsum([cols[j][i] * x[j] for j in passive]) for i, bi in enumerate(rhs)
        ]
        gradient = [dot(c, residual) for c in cols]
        candidates = [
            j for j in range(n) if j not in passive and j not in excluded and gradient[j] > tol[j]
        ]
        if not candidates:
            return tuple(x)
        passive.append(max(candidates, key=lambda j: (gradient[j], -j)))
        passive.sort()
        while True:
            found = lstsq([cols[j] for j in passive], rhs)
            z = dict.fromkeys(passive, 0.0)
            for position in found.independent:
                z[passive[position]] = found.x[position]
            dependent = [passive[p] for p in range(len(passive)) if p not in found.independent]
            if dependent:
                # A column the others already span adds nothing: keep it at 0 until a column
                # leaves the passive set.
                excluded.update(dependent)
                passive = [j for j in passive if j not in excluded]
                for j in dependent:
                    x[j] = 0.0
                if not passive:
                    break
                continue
            if all(z[j] > 0.0 for j in passive):
                for j in passive:
                    x[j] = z[j]
                break
            ratios = {j: x[j] / (x[j] - z[j]) for j in passive if z[j] <= 0.0}
            step = min(ratios.values())
            for j in passive:
                x[j] += step * (z[j] - x[j])
            # The columns that reached 0 first leave exactly; rounding may leave others at or
            # just below 0, and they leave too.
            leaving = {j for j, r in ratios.items() if r == step} | {
                j for j in passive if x[j] <= 0
            }
            for j in leaving:
                x[j] = 0.0
            passive = [j for j in passive if j not in leaving]
            excluded.clear()
            if not passive:
                break
    return tuple(x)
