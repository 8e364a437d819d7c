"""The load-parametric outer loop of SMD's allocation step.

The ratios ``weight · remaining / rate`` of the jobs are coupled only through the number of
tasks sharing each machine's NIC. Fix a load vector K (tasks per machine): if machine m held
exactly ``K[m]`` tasks, every job's ratio would depend on its own option alone. A job's
iteration time never falls when more tasks share its machines, so a choice that puts at most
``K[m]`` tasks on every machine m costs at most its ratios priced at K. The subproblem

    minimize Σ_i ratio_i(option_i; K)  subject to GPUs, CPUs, memory, and ≤ K[m] tasks on m

is therefore a multiple-choice multi-dimensional knapsack whose value bounds the true objective
of its solution from above, and at K = the optimum's own loads its value is the optimum. So
``min over K`` of the subproblem is the exact optimum over the candidate options. The searches:

- :func:`descend`: re-solve at the loads of the current choice. The current choice is feasible
  there at its true value, so the true objective never rises; stop when it does not fall.
- :func:`neighbours`: one machine's load one lower or higher, two machines' one lower each, or
  one task's worth moved between two machines; each solved exactly below the current value (no
  starting choice needed, since the current one may not fit the new loads), then
  :func:`descend`, while that helps.
- :func:`enumerate_loads`: every load vector of the box (when it is small), pruned by the sum
  of each job's cheapest admissible option; with every subproblem solved to the end the result
  is the optimum.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from dlsched.ps.knapsack import FloatArray, Knapsack, solve_exact_below
from dlsched.ps.objective import Evaluator
from dlsched.ps.placement import Option

Solver = Callable[[Knapsack, Sequence[int]], Sequence[int]]
"""A knapsack solver: the knapsack and a feasible start, returning a feasible choice no worse."""

_TOL = 1e-12


class LoadProblem:
    """The jobs' candidate options as arrays, priced at any load vector (module docstring).

    ``uses[i]``: option o's GPUs, CPUs and memory per machine, flattened (as in
    :func:`dlsched.ps.placement.usage` ``.ravel()``); ``capacity`` likewise."""

    def __init__(
        self,
        evaluator: Evaluator,
        candidates: Sequence[Sequence[Option]],
        uses: Sequence[FloatArray],
        capacity: FloatArray,
    ) -> None:
        self.evaluator = evaluator
        self.candidates = candidates
        machines = evaluator.machines
        self.bandwidth = np.array([m.bytes_per_second for m in machines], dtype=float)
        tflops = np.array([m.gpu_tflops for m in machines], dtype=float)
        self.workers = [np.array([o.workers for o in c], dtype=float) for c in candidates]
        self.servers = [np.array([o.servers for o in c], dtype=float) for c in candidates]
        self.tasks = [w + s for w, s in zip(self.workers, self.servers, strict=True)]
        self.rate = [np.where(w > 0, tflops[None, :], np.inf).min(axis=1) for w in self.workers]
        self.ext_uses = [np.hstack([u, t]) for u, t in zip(uses, self.tasks, strict=True)]
        self.capacity = capacity
        self.max_loads = _max_loads(self.tasks, uses, capacity)
        self.scale = [
            job.weight * left / job.batch
            for job, left in zip(evaluator.jobs, evaluator.remaining, strict=True)
        ]

    def loads(self, choice: Sequence[int]) -> FloatArray:
        """Tasks per machine under ``choice``."""
        return np.asarray(
            np.sum([t[o] for t, o in zip(self.tasks, choice, strict=True)], axis=0), dtype=float
        )

    def costs(self, loads: FloatArray) -> list[FloatArray]:
        """Every job's ratio for each of its options if machine m held ``loads[m]`` tasks."""
        per_task = self.bandwidth / np.maximum(loads, 1.0)
        out = []
        for i in range(len(self.candidates)):
            seconds, w = self.iteration(i, per_task)
            out.append(self.scale[i] * seconds / w)
        return out

    def iteration(self, i: int, per_task: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Seconds per iteration of each of job i's options, and its workers, when every task
        on machine m gets ``per_task[m]`` bytes per second (or ``per_task[o, m]`` for option
        o)."""
        workers, servers = self.workers[i], self.servers[i]
        w_bw = np.where(workers > 0, per_task, np.inf).min(axis=1)
        s_bw = np.where(servers > 0, per_task, np.inf).min(axis=1)
        w = workers.sum(axis=1)
        job = self.evaluator.jobs[i]
        return job.model.times(w, servers.sum(axis=1), self.rate[i], w_bw, s_bw), w

    def knapsack(self, loads: FloatArray) -> Knapsack:
        """The subproblem at ``loads`` (module docstring)."""
        cap = np.concatenate([self.capacity, loads])
        return Knapsack(self.costs(loads), self.ext_uses, cap)

    def true(self, choice: Sequence[int]) -> float:
        """The coupled objective of ``choice``."""
        return self.evaluator.total([c[o] for c, o in zip(self.candidates, choice, strict=True)])


def descend(
    problem: LoadProblem, choice: Sequence[int], value: float, solver: Solver, limit: int
) -> tuple[list[int], float]:
    """Re-solve at the current choice's loads at most ``limit`` times while the true
    objective ``value`` (of ``choice``) falls."""
    current = list(choice)
    for _ in range(limit):
        trial = list(solver(problem.knapsack(problem.loads(current)), current))
        trial_value = problem.true(trial)
        if trial_value >= value - _TOL * max(1.0, value):
            break
        current, value = trial, trial_value
    return current, value


def neighbours(
    problem: LoadProblem,
    choice: Sequence[int],
    value: float,
    solver: Solver,
    node_limit: int,
    rounds: int,
) -> tuple[list[int], float]:
    """Move to the first load change (:func:`_moves`) whose exact subproblem has a choice
    cheaper than ``value`` (so its true objective is too), descend from it, and repeat at
    most ``rounds`` times."""
    current = list(choice)
    for _ in range(rounds):
        loads = problem.loads(current)
        moved = False
        for delta in _moves(loads.size):
            trial_loads = loads + delta
            if np.any(trial_loads < 0) or np.any(trial_loads > problem.max_loads):
                continue
            k = problem.knapsack(trial_loads)
            if _floor(k) >= value - _TOL * max(1.0, value):
                continue
            found, _ = solve_exact_below(k, value, node_limit)
            if found is None:
                continue
            trial, trial_value = descend(
                problem, found.choice, problem.true(found.choice), solver, rounds
            )
            if trial_value < value - _TOL * max(1.0, value):
                current, value, moved = trial, trial_value, True
                break
        if not moved:
            break
    return current, value


def _floor(k: Knapsack) -> float:
    """Sum of each item's cheapest option that fits the empty knapsack (inf if one has none):
    no choice costs less."""
    floor = 0.0
    for costs, uses in zip(k.costs, k.uses, strict=True):
        fits = np.all(uses <= k.capacity + 1e-9, axis=1)
        if not fits.any():
            return np.inf
        floor += float(costs[fits].min())
    return floor


def _moves(machines: int) -> list[FloatArray]:
    """Load changes to try: one machine one lower or higher, then two machines one lower each
    or one task moved from one to the other (emptying two machines at once is how a large job
    gets machines to itself)."""
    unit = np.eye(machines)
    moves = [sign * unit[m] for m in range(machines) for sign in (-1.0, 1.0)]
    for a, b in itertools.combinations(range(machines), 2):
        moves += [-unit[a] - unit[b], unit[a] - unit[b], unit[b] - unit[a]]
    return moves


def box_size(problem: LoadProblem) -> int:
    """How many load vectors :func:`enumerate_loads` would visit."""
    return int(np.prod(problem.max_loads + 1.0))


def enumerate_loads(
    problem: LoadProblem, choice: Sequence[int], value: float, node_limit: int
) -> tuple[list[int], float, bool]:
    """The best choice over every load vector of the box (module docstring), starting from
    ``choice`` of true objective ``value``; the flag says whether every subproblem was solved
    to the end (then the result is the optimum over the candidates)."""
    best, best_value = list(choice), value
    exact = True
    fewest = sum(float(t.sum(axis=1).min()) for t in problem.tasks)
    ranges = [range(int(k) + 1) for k in problem.max_loads]
    for combo in itertools.product(*ranges):
        if sum(combo) < fewest:
            continue
        loads = np.array(combo, dtype=float)
        k = problem.knapsack(loads)
        if _floor(k) >= best_value - _TOL * max(1.0, best_value):
            continue
        found, finished = solve_exact_below(k, best_value, node_limit)
        exact = exact and finished
        if found is None:
            continue
        found_value = problem.true(found.choice)
        if found_value < best_value:
            best, best_value = list(found.choice), found_value
    return best, best_value, exact


def _max_loads(
    tasks: Sequence[FloatArray], uses: Sequence[FloatArray], capacity: FloatArray
) -> FloatArray:
    """Most tasks machine m can ever hold: no more than all jobs could put there at once, nor
    than its capacity over the least any task takes of a resource."""
    machines = tasks[0].shape[1]
    most = np.sum([t.max(axis=0) for t in tasks], axis=0)
    cap = capacity.reshape(machines, -1)
    least = np.full(cap.shape[1], np.inf)
    for t, u in zip(tasks, uses, strict=True):
        per_task = u.reshape(t.shape[0], machines, -1) / np.maximum(t, 1.0)[:, :, None]
        least = np.minimum(least, np.where(t[:, :, None] > 0, per_task, np.inf).min(axis=(0, 1)))
    bounded = least > 1e-9
    if bounded.any():
        room = np.floor(cap[:, bounded] / least[bounded] + 1e-9).min(axis=1)
        most = np.minimum(most, room)
    return np.asarray(most, dtype=float)
