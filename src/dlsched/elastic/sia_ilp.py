"""Sia's assignment problem: at most one configuration per job, within each GPU type's capacity.

After Jayaram Subramanya et al., "Sia: Heterogeneity-aware, goodput-optimized ML-cluster
scheduling", SOSP 2023, §4.2: a binary variable per (job, configuration), a configuration being
a GPU type with a GPU count (and the nodes that count takes); each job takes at most one; the
GPUs chosen on each type fit the GPUs free there. We add one constraint the paper's simulator
does not need (it ignores placement): configurations of several whole nodes fit the whole
nodes free on their type, so that every answer can be placed. Solved exactly (relative gap
1e-4, as the artifact's solver) with :func:`scipy.optimize.milp` (HiGHS branch and cut).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from dlsched.numerics.solver_stdout import solver_prints_to_stderr


@dataclass(frozen=True, slots=True)
class Option:
    """One configuration a job may take: ``gpus`` GPUs of type ``variant`` (an index), of
    which ``whole_nodes`` whole nodes (0 when the GPUs sit inside one node), at ``cost`` (the
    objective term; the solver minimizes, so only negative costs are worth taking)."""

    job: int
    variant: int
    gpus: int
    whole_nodes: int
    cost: float


def choose(
    options: Sequence[Option],
    jobs: int,
    free_gpus: Sequence[int],
    free_nodes: Sequence[int],
) -> list[int | None]:
    """The option index each of ``jobs`` jobs takes (None: no GPUs), minimizing the sum of
    chosen costs: at most one option per job, per type at most ``free_gpus`` GPUs and at most
    ``free_nodes`` whole nodes. Options with a cost of 0 or more are never taken. RuntimeError
    if the solver fails (it cannot for a feasible input: choosing nothing is feasible)."""
    worth = [i for i, o in enumerate(options) if o.cost < 0]
    answer: list[int | None] = [None] * jobs
    if not worth:
        return answer
    types = len(free_gpus)
    rows, cols, data = [], [], []
    for col, i in enumerate(worth):
        o = options[i]
        rows += [o.job, jobs + o.variant]
        cols += [col, col]
        data += [1.0, float(o.gpus)]
        if o.whole_nodes:
            rows.append(jobs + types + o.variant)
            cols.append(col)
            data.append(float(o.whole_nodes))
    matrix = sparse.coo_array(
        (np.array(data), (np.array(rows), np.array(cols))), shape=(jobs + 2 * types, len(worth))
    ).tocsr()
    upper = np.concatenate(
        [np.ones(jobs), np.asarray(free_gpus, dtype=float), np.asarray(free_nodes, dtype=float)]
    )
    with solver_prints_to_stderr():
        result = milp(
            np.array([options[i].cost for i in worth]),
            constraints=LinearConstraint(matrix, -np.inf, upper),
            integrality=np.ones(len(worth), dtype=np.int64),
            bounds=Bounds(0.0, 1.0),
            options={"mip_rel_gap": 1e-4},
        )
    if result.x is None:
        raise RuntimeError(f"Sia's assignment ILP failed: {result.message}")
    for col, value in enumerate(result.x):
        if value > 0.5:
            answer[options[worth[col]].job] = worth[col]
    return answer
