"""Non-negative least squares on relative error, for the fitted forms of the performance models.

A form ``y ≈ Σ_j c_j·x_j`` with every ``c_j >= 0`` is fitted so that each point's relative
residual counts alike (a 100 ms point weighs as much as a 10 s one). A column that the points
cannot tell from the columns before it (e.g. attention pairs when every point has one prompt
length) gets the coefficient 0 rather than an arbitrary split. Computed by
:mod:`dlsched.numerics`, so the same bits on every CPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dlsched.numerics.lstsq import lstsq, nnls, norm


def relative_nnls(
    rows: Sequence[Sequence[float]], y: Sequence[float], weights: Sequence[float] | None = None
) -> tuple[float, ...]:
    """Coefficients ``c >= 0`` minimizing ``Σ w_i·((row_i·c − y_i) / y_i)²`` (``w`` 1 by
    default). ValueError without a row, or for a time that is not positive."""
    if not rows or len(rows) != len(y):
        raise ValueError(f"fitting needs rows with one value each, got {len(rows)} and {len(y)}")
    if any(t <= 0 for t in y):
        raise ValueError("fitting relative error needs positive values")
    w = [1.0] * len(y) if weights is None else [math.sqrt(v) for v in weights]
    weighted = [[v * s / t for v in row] for row, t, s in zip(rows, y, w, strict=True)]
    columns = [list(c) for c in zip(*weighted, strict=True)]
    # Columns are scaled to unit norm first: token and pair counts differ by 10^7.
    scale = [norm(c) or 1.0 for c in columns]
    scaled = [[v / s for v in c] for c, s in zip(columns, scale, strict=True)]
    target = list(w)
    independent = lstsq(scaled, target, rtol=1e-9).independent
    solution = nnls([scaled[j] for j in independent], target)
    out = [0.0] * len(columns)
    for j, v in zip(independent, solution, strict=True):
        out[j] = v / scale[j]
    return tuple(out)
