"""The knapsack solvers against enumeration of every choice."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dlsched.ps.knapsack import Knapsack, solve_exact, solve_exact_below, solve_greedy, solve_lp


def random_knapsack(seed: int) -> Knapsack:
    rng = np.random.default_rng(seed)
    items = int(rng.integers(2, 5))
    costs = [rng.uniform(1.0, 10.0, size=int(rng.integers(2, 6))) for _ in range(items)]
    # Option 0 of every item is small, so choosing it everywhere is feasible.
    uses = []
    for c in costs:
        use = rng.uniform(0.0, 4.0, size=(c.size, 3))
        use[0] = 0.1
        uses.append(use)
    return Knapsack(costs, uses, np.full(3, 5.0))


def enumerate_best(k: Knapsack) -> float:
    best = np.inf
    for choice in itertools.product(*(range(c.size) for c in k.costs)):
        if k.feasible(choice):
            best = min(best, k.total(choice))
    return float(best)


@pytest.mark.parametrize("seed", range(12))
def test_exact_finds_the_optimum(seed: int) -> None:
    k = random_knapsack(seed)
    base = [0] * len(k.costs)
    result = solve_exact(k, base)
    assert result.exact
    assert k.feasible(result.choice)
    assert result.cost == pytest.approx(enumerate_best(k))


@pytest.mark.parametrize("seed", range(12))
def test_lp_and_greedy_are_feasible_and_no_worse_than_base(seed: int) -> None:
    k = random_knapsack(seed)
    base = [0] * len(k.costs)
    for result in (solve_lp(k, base), solve_greedy(k, base)):
        assert k.feasible(result.choice)
        assert enumerate_best(k) - 1e-9 <= result.cost <= k.total(base) + 1e-9


def test_infeasible_base_is_rejected() -> None:
    one = np.ones((1, 1))
    k = Knapsack([np.ones(1), np.ones(1)], [one, one], np.ones(1))
    with pytest.raises(ValueError, match="feasible"):
        solve_exact(k, [0, 0])


@pytest.mark.parametrize("seed", range(6))
def test_exact_below_finds_the_optimum_without_a_start(seed: int) -> None:
    k = random_knapsack(seed)
    best = enumerate_best(k)
    found, finished = solve_exact_below(k, np.inf)
    assert finished and found is not None
    assert k.feasible(found.choice)
    assert found.cost == pytest.approx(best)
    nothing, finished = solve_exact_below(k, best)
    assert finished and nothing is None
