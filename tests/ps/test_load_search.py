"""The load-parametric subproblem bounds the true objective, and its searches reach the
brute-force optimum on small seeded instances."""

from __future__ import annotations

import random

import pytest

from dlsched.ps.brute import brute_force
from dlsched.ps.instances import Instance, random_instance
from dlsched.ps.load_search import LoadProblem
from dlsched.ps.objective import Evaluator
from dlsched.ps.placement import capacity, usages
from dlsched.ps.smd import SmdConfig, solve


def problem_of(instance: Instance) -> LoadProblem:
    uses = [usages(j, c) for j, c in zip(instance.jobs, instance.candidates, strict=True)]
    evaluator = Evaluator(instance.jobs, instance.remaining, instance.machines)
    return LoadProblem(evaluator, instance.candidates, uses, capacity(instance.machines).ravel())


@pytest.mark.parametrize("seed", range(3))
def test_subproblem_value_bounds_the_true_objective(seed: int) -> None:
    instance = random_instance(random.Random(seed), max_jobs=4, max_machines=3)
    problem = problem_of(instance)
    choice = [c.index(b) for c, b in zip(instance.candidates, instance.base, strict=True)]
    loads = problem.loads(choice)
    true = problem.true(choice)
    assert problem.knapsack(loads).total(choice) == pytest.approx(true)
    # More tasks assumed on a machine the job uses can only make it look slower.
    for m in range(loads.size):
        bumped = loads.copy()
        bumped[m] += 2
        assert problem.knapsack(bumped).total(choice) >= true * (1 - 1e-12)
    heavier = problem.knapsack(loads + 3).total(choice)
    assert heavier > true


def test_load_bound_respects_cpus() -> None:
    instance = random_instance(random.Random(1), max_jobs=4, max_machines=3)
    problem = problem_of(instance)
    least_cpus = min(min(j.worker.cpus, j.server(1).cpus) for j in instance.jobs)
    for m, machine in enumerate(instance.machines):
        assert problem.max_loads[m] <= machine.cpus // least_cpus


@pytest.mark.parametrize("seed", range(4))
def test_enumeration_reaches_the_brute_force_optimum(seed: int) -> None:
    instance = random_instance(random.Random(seed), max_jobs=4, max_machines=3)
    args = (instance.jobs, instance.remaining, instance.machines, instance.candidates)
    result = solve(*args, instance.base, SmdConfig(polish_jobs=0, pair_budget=0))
    _, best = brute_force(*args)
    assert result.optimal
    assert result.objective == pytest.approx(best, rel=1e-9)


def test_neighbourhood_escapes_where_single_and_pair_moves_stall() -> None:
    # Instance 24 of seed 0 (bench/smd_gap.py): the optimum gives the largest job two machines
    # to itself, three jobs away from the equal split single and pair moves stop at (15% worse).
    rng = random.Random(0)
    instance = [random_instance(rng) for _ in range(25)][-1]
    args = (instance.jobs, instance.remaining, instance.machines, instance.candidates)
    searched = solve(*args, instance.base, SmdConfig(load_budget=0))
    _, best = brute_force(*args)
    assert not searched.optimal
    assert searched.objective <= best * 1.05
