"""The exact optimum of the allocation problem by exhaustive search, for small instances.

Every combination of one candidate option per job is considered, except those a bound proves
cannot win: a job's iteration time only grows as more tasks share its machines, so the cost of
the jobs placed so far (with the tasks placed so far) plus each other job's cost alone on empty
machines is a lower bound. Exponential in the number of jobs: meant for ≤ 6 jobs on ≤ 4
machines, as a yardstick for :func:`dlsched.ps.smd.solve`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlsched.ps.job import PsJob
from dlsched.ps.machines import Machine
from dlsched.ps.objective import Evaluator, task_counts
from dlsched.ps.placement import Option, capacity, usage

_EPS = 1e-9


def brute_force(
    jobs: Sequence[PsJob],
    remaining: Sequence[float],
    machines: Sequence[Machine],
    candidates: Sequence[Sequence[Option]],
) -> tuple[tuple[Option, ...], float]:
    """The feasible choice of minimum ``Σ weight · remaining · iteration time`` and its value;
    ValueError if no combination fits."""
    n = len(jobs)
    evaluator = Evaluator(jobs, remaining, machines)
    alone = [
        [evaluator.cost(i, o, o.tasks()) for o in options] for i, options in enumerate(candidates)
    ]
    order = sorted(range(n), key=lambda i: -(max(alone[i]) - min(alone[i])))
    sorted_options = [sorted(range(len(alone[i])), key=lambda o: alone[i][o]) for i in order]
    floor = [min(alone[i]) for i in order]
    suffix = np.concatenate([np.cumsum(floor[::-1])[::-1], [0.0]])
    uses = [[usage(jobs[i], o) for o in candidates[i]] for i in order]
    best_value = float("inf")
    best: list[int] | None = None
    chosen: list[int] = [0] * n

    def partial(depth: int) -> float:
        options = [candidates[order[d]][chosen[d]] for d in range(depth)]
        counts = task_counts(options, len(machines))
        return sum(evaluator.cost(order[d], options[d], counts) for d in range(depth))

    def visit(depth: int, free: np.ndarray) -> None:
        nonlocal best_value, best
        if depth == n:
            value = partial(n)
            if value < best_value:
                best_value, best = value, list(chosen)
            return
        for o in sorted_options[depth]:
            if np.any(uses[depth][o] > free + _EPS):
                continue
            chosen[depth] = o
            if partial(depth + 1) + suffix[depth + 1] >= best_value:
                continue
            visit(depth + 1, free - uses[depth][o])

    visit(0, capacity(machines))
    if best is None:
        raise ValueError("no combination of the candidate options fits the machines")
    result: list[Option] = [candidates[0][0]] * n
    for d, o in enumerate(best):
        result[order[d]] = candidates[order[d]][o]
    return tuple(result), best_value
