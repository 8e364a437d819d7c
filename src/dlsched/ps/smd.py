"""SMD's allocation step: choose every admitted job's workers, PS and machines to minimize the
sum of ratios ``Σ weight · remaining / rate`` (see :mod:`dlsched.ps.objective`).

Our reconstruction of Yu et al. (INFOCOM'21), whose exact algorithm was not available to us.
The ratios are coupled only through shared NIC bandwidth (a job's rate depends on how many
tasks share its machines). Fixing that coupling turns the problem into a multiple-choice
multi-dimensional knapsack over (machine × GPU/CPU/memory) capacities. Three stages:

1. A Dinkelbach-style parametric loop prices each job's options with the other jobs' tasks
   held at the average of the iterates so far, solves the knapsack, and repeats (two starting
   parameter sets: the admission's placement, and every job alone). Cheap; a starting point.
2. The load-parametric loop (:mod:`dlsched.ps.load_search`): the parameter is the number of
   tasks per machine, also imposed as a knapsack capacity, which makes every subproblem's value
   an upper bound on the true objective of its solution and the minimum over load vectors the
   exact optimum. Descent at the current loads for every solver; with the exact solver, every
   load vector when they are few, else a neighbourhood of load changes.
3. Local search on the true objective: one job at a time, and pairs of jobs when few.

The knapsack is solved exactly (branch-and-bound) for small instances and by LP relaxation
with rounding or greedily at scale. The result is never worse than the feasible ``base``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.ps.job import PsJob
from dlsched.ps.knapsack import Knapsack, KnapsackResult, solve_exact, solve_greedy, solve_lp
from dlsched.ps.load_search import LoadProblem, box_size, descend, enumerate_loads, neighbours
from dlsched.ps.machines import Machine
from dlsched.ps.objective import Evaluator
from dlsched.ps.placement import FloatArray, Option, capacity, usages

SOLVERS = ("auto", "exact", "lp", "greedy")


@dataclass(frozen=True)
class SmdConfig:
    """``solver``: one of :data:`SOLVERS`; "auto" is exact (branch-and-bound, at most
    ``node_limit`` nodes) up to ``exact_jobs`` jobs, LP rounding up to ``lp_jobs``, greedy
    beyond. With the exact solver every load vector is enumerated when there are at most
    ``load_budget`` of them (:mod:`dlsched.ps.load_search`), else the load neighbourhood is
    searched on clusters of at most ``neighbour_machines`` machines (its moves grow with the
    square of the machines). Local search moves single jobs up to ``polish_jobs`` jobs, and
    pairs of jobs up to ``exact_jobs`` jobs when the pairs' option combinations number at most
    ``pair_budget``."""

    solver: str = "auto"
    max_iterations: int = 8
    exact_jobs: int = 6
    lp_jobs: int = 400
    polish_jobs: int = 8
    pair_budget: int = 5_000
    node_limit: int = 5_000
    load_budget: int = 3_000
    neighbour_machines: int = 16

    def __post_init__(self) -> None:
        if self.solver not in SOLVERS:
            raise ValueError(f"unknown solver {self.solver!r}; known: {', '.join(SOLVERS)}")
        if self.max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1, got {self.max_iterations}")
        budgets = ("exact_jobs", "lp_jobs", "polish_jobs", "pair_budget", "load_budget")
        for name in (*budgets, "neighbour_machines"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.node_limit < 1:
            raise ValueError(f"node_limit must be >= 1, got {self.node_limit}")


@dataclass(frozen=True)
class SmdResult:
    """The chosen option per job (input order), its objective, outer iterations run, the
    knapsack solver used, and whether the result is proven optimal over the candidates (every
    load vector enumerated with every subproblem solved to the end)."""

    options: tuple[Option, ...]
    objective: float
    iterations: int
    solver: str
    optimal: bool = False


def solve(
    jobs: Sequence[PsJob],
    remaining: Sequence[float],
    machines: Sequence[Machine],
    candidates: Sequence[Sequence[Option]],
    base: Sequence[Option],
    config: SmdConfig | None = None,
    free: FloatArray | None = None,
) -> SmdResult:
    """Choose one of ``candidates[i]`` for every job (module docstring). ``base`` is a
    feasible choice (each ``base[i]`` among ``candidates[i]``) the result never does worse
    than. ``free`` is what the jobs may take per machine (default: the whole machines)."""
    config = config or SmdConfig()
    if not jobs:
        return SmdResult((), 0.0, 0, "none")
    index = [list(c).index(b) for c, b in zip(candidates, base, strict=True)]
    uses = [usages(j, c) for j, c in zip(jobs, candidates, strict=True)]
    cap = (capacity(machines) if free is None else np.asarray(free, dtype=float)).ravel()
    evaluator = Evaluator(jobs, remaining, machines)
    problem = LoadProblem(evaluator, candidates, uses, cap)
    method = _method(config, len(jobs))
    best = list(index)
    best_obj = _true(evaluator, candidates, best)
    iterations = 0
    # Two starting parameter sets: the other jobs' tasks where the admission put them, and no
    # other tasks at all (every job priced alone).
    starts = [_others(candidates, index, len(machines)), np.zeros((len(jobs), len(machines)))]
    for start in starts:
        current = list(index)
        seen = [start]
        for _ in range(config.max_iterations):
            iterations += 1
            # The parameters are the average over the iterates (fictitious play): using only
            # the last one makes the loop swing between packing machines and emptying them.
            costs = _costs(problem, np.mean(seen, axis=0))
            result = _knapsack(Knapsack(costs, uses, cap), index, current, method, config)
            choice = list(result.choice)
            value = _true(evaluator, candidates, choice)
            if value < best_obj - 1e-12:
                best, best_obj = choice, value
            if choice == current:
                break
            current = choice
            seen.append(_others(candidates, current, len(machines)))

    def step(k: Knapsack, start: Sequence[int]) -> Sequence[int]:
        return _knapsack(k, list(start), list(start), method, config).choice

    best, best_obj = descend(problem, best, best_obj, step, config.max_iterations)
    optimal = False
    if method == "exact":
        if box_size(problem) <= config.load_budget:
            best, best_obj, optimal = enumerate_loads(problem, best, best_obj, config.node_limit)
        elif len(machines) <= config.neighbour_machines:
            best, best_obj = neighbours(
                problem, best, best_obj, step, config.node_limit, config.max_iterations
            )
    if len(jobs) <= config.polish_jobs:
        best, best_obj = _polish(evaluator, candidates, uses, cap, best)
    sizes = [len(c) for c in candidates]
    pairs = (sum(sizes) ** 2 - sum(s * s for s in sizes)) // 2
    if len(jobs) <= config.exact_jobs and pairs <= config.pair_budget:
        while True:
            paired, value = _polish_pairs(evaluator, candidates, uses, cap, best)
            paired, value = _polish(evaluator, candidates, uses, cap, paired)
            if value >= best_obj - 1e-12:
                break
            best, best_obj = paired, value
    options = tuple(c[o] for c, o in zip(candidates, best, strict=True))
    return SmdResult(options, best_obj, iterations, method, optimal)


def _method(config: SmdConfig, jobs: int) -> str:
    if config.solver != "auto":
        return config.solver
    if jobs <= config.exact_jobs:
        return "exact"
    return "lp" if jobs <= config.lp_jobs else "greedy"


def _knapsack(
    k: Knapsack, base: list[int], current: list[int], method: str, config: SmdConfig
) -> KnapsackResult:
    # Start from the better of the admission choice and the current one (both feasible).
    start = current if k.total(current) <= k.total(base) else base
    if method == "exact":
        return solve_exact(k, start, config.node_limit)
    if method == "lp":
        return solve_lp(k, start)
    return solve_greedy(k, start)


def _others(
    candidates: Sequence[Sequence[Option]], choice: Sequence[int], machines: int
) -> np.ndarray:
    """Row i: tasks per machine of every job but i under ``choice``."""
    own = np.array([c[o].tasks() for c, o in zip(candidates, choice, strict=True)], dtype=float)
    return np.asarray(own.sum(axis=0)[None, :] - own, dtype=float)


def _costs(problem: LoadProblem, others: np.ndarray) -> list[np.ndarray]:
    """Each job's ratio for each of its options with the other jobs' tasks at ``others``."""
    evaluator = problem.evaluator
    out = []
    for i, job in enumerate(evaluator.jobs):
        load = others[i] + problem.workers[i] + problem.servers[i]
        seconds, w = problem.iteration(i, problem.bandwidth / np.maximum(load, 1.0))
        out.append(job.weight * evaluator.remaining[i] * seconds / (w * job.batch))
    return out


def _true(
    evaluator: Evaluator, candidates: Sequence[Sequence[Option]], choice: Sequence[int]
) -> float:
    return evaluator.total([c[o] for c, o in zip(candidates, choice, strict=True)])


def _free(uses: Sequence[np.ndarray], cap: np.ndarray, choice: Sequence[int]) -> np.ndarray:
    used = sum((u[o] for u, o in zip(uses, choice, strict=True)), np.zeros_like(cap))
    return np.asarray(cap - used, dtype=float)


def _polish(
    evaluator: Evaluator,
    candidates: Sequence[Sequence[Option]],
    uses: Sequence[np.ndarray],
    cap: np.ndarray,
    choice: list[int],
) -> tuple[list[int], float]:
    """Move one job at a time to the option that lowers the true objective, while any does."""
    best = _true(evaluator, candidates, choice)
    improved = True
    while improved:
        improved = False
        for i in range(len(choice)):
            room = _free(uses, cap, choice) + uses[i][choice[i]]
            for o in np.flatnonzero(np.all(uses[i] <= room + 1e-9, axis=1)):
                trial = [*choice[:i], int(o), *choice[i + 1 :]]
                value = _true(evaluator, candidates, trial)
                if value < best - 1e-12:
                    choice, best, improved = trial, value, True
    return choice, best


def _polish_pairs(
    evaluator: Evaluator,
    candidates: Sequence[Sequence[Option]],
    uses: Sequence[np.ndarray],
    cap: np.ndarray,
    choice: list[int],
) -> tuple[list[int], float]:
    """Move two jobs at once (every feasible pair of their options), taking the best move of
    each pair while it lowers the true objective."""
    best = _true(evaluator, candidates, choice)
    for i in range(len(choice)):
        for j in range(i + 1, len(choice)):
            room = _free(uses, cap, choice) + uses[i][choice[i]] + uses[j][choice[j]]
            fits_i = np.flatnonzero(np.all(uses[i] <= room + 1e-9, axis=1))
            for a in fits_i:
                left = room - uses[i][a]
                for b in np.flatnonzero(np.all(uses[j] <= left + 1e-9, axis=1)):
                    trial = list(choice)
                    trial[i], trial[j] = int(a), int(b)
                    value = _true(evaluator, candidates, trial)
                    if value < best - 1e-12:
                        choice, best = trial, value
    return choice, best
