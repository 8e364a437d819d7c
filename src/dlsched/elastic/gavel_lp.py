"""Gavel's allocation policies as linear programs over GPU types (Narayanan et al., OSDI'20).

``A[j, t]`` is the fraction of time job ``j`` runs on type ``t``: each job's fractions sum to at
most 1, and on each type the jobs' GPU demands weighted by their fractions fit its GPUs. A job's
effective throughput is ``Σ_t X[j, t]·A[j, t]``, normalized by its best single-type throughput.
Solved with :func:`scipy.optimize.linprog` (HiGHS) on sparse constraint matrices.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.optimize import linprog

FloatArray = npt.NDArray[np.float64]
Bounds = list[tuple[float, float | None]]


def _normalized(x: FloatArray) -> FloatArray:
    best = x.max(axis=1, keepdims=True)
    out: FloatArray = np.divide(x, best, out=np.zeros_like(x), where=best > 0)
    return out


def _rows(xn: FloatArray, gpus: FloatArray, fair_rows: bool, floor_sign: float) -> tuple[Any, int]:
    """Constraint rows over variables ``A`` (row-major) and, with ``fair_rows``, one more
    variable ``z``: per job ``Σ_t A ≤ 1``; per type ``Σ_j g_j A ≤ C``; per job
    ``floor_sign · Σ_t xn A (+ z) ≤ …``. Returns the sparse matrix and its row count."""
    jobs, types = xn.shape
    j_idx, t_idx = np.divmod(np.arange(jobs * types), types)
    var = np.arange(jobs * types)
    rows = [j_idx, jobs + t_idx, jobs + types + j_idx]
    cols = [var, var, var]
    data = [np.ones(jobs * types), gpus[j_idx], floor_sign * xn.ravel()]
    n_vars = jobs * types
    if fair_rows:
        rows.append(jobs + types + np.arange(jobs))
        cols.append(np.full(jobs, n_vars))
        data.append(np.ones(jobs))
        n_vars += 1
    n_rows = 2 * jobs + types
    matrix = sparse.coo_array(
        (np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_rows, n_vars),
    ).tocsr()
    return matrix, n_rows


def _solve(c: FloatArray, a: Any, b: FloatArray, bounds: Bounds) -> FloatArray:
    result = linprog(c, A_ub=cast(Any, a), b_ub=b, bounds=bounds, method="highs")
    if result.status != 0:
        raise RuntimeError(f"Gavel LP failed: {result.message}")
    return np.asarray(result.x, dtype=np.float64)


def _bounds(xn: FloatArray) -> Bounds:
    return [(0.0, 1.0 if v > 0 else 0.0) for v in xn.ravel()]


def max_min_fairness(x: FloatArray, gpus: FloatArray, capacity: FloatArray) -> FloatArray:
    """Fractions maximizing the smallest normalized throughput, then (keeping that minimum)
    the sum of normalized throughputs, so no capacity is left that some job could use."""
    jobs, types = x.shape
    if jobs == 0:
        return np.zeros((0, types))
    xn = _normalized(x)
    base = np.concatenate([np.ones(jobs), capacity])
    # Phase 1: maximize z with z − Σ_t xn·A ≤ 0 for every job.
    a1, _ = _rows(xn, gpus, fair_rows=True, floor_sign=-1.0)
    c1 = np.zeros(jobs * types + 1)
    c1[-1] = -1.0
    x1 = _solve(c1, a1, np.concatenate([base, np.zeros(jobs)]), [*_bounds(xn), (0.0, None)])
    z = float(x1[-1])
    # Phase 2: keep every job at or above z, maximize the total.
    a2, _ = _rows(xn, gpus, fair_rows=False, floor_sign=-1.0)
    b2 = np.concatenate([base, -z * (1 - 1e-7) * np.ones(jobs)])
    return _solve(-xn.ravel(), a2, b2, _bounds(xn)).reshape(jobs, types)


def min_jct(
    x: FloatArray, gpus: FloatArray, capacity: FloatArray, remaining_s: FloatArray
) -> FloatArray:
    """Our reconstruction of a JCT-minimizing objective: maximize the sum of normalized
    throughputs weighted by ``1 / remaining time`` (shortest remaining work first, in rate)."""
    jobs, types = x.shape
    if jobs == 0:
        return np.zeros((0, types))
    xn = _normalized(x)
    weight = 1.0 / np.maximum(remaining_s, 1.0)
    a, _ = _rows(xn, gpus, fair_rows=False, floor_sign=0.0)
    b = np.concatenate([np.ones(jobs), capacity, np.zeros(jobs)])
    return _solve(-(xn * weight[:, None]).ravel(), a, b, _bounds(xn)).reshape(jobs, types)
