"""SMD's allocation step: feasible, never worse than its start, and within 5% of the brute-force
optimum on small seeded instances (the same code as bench/smd_gap.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dlsched.ps.brute import brute_force
from dlsched.ps.instances import gap, random_instance
from dlsched.ps.objective import objective
from dlsched.ps.placement import capacity, usage, usages
from dlsched.ps.smd import SmdConfig, solve


@pytest.mark.parametrize("seed", range(6))
def test_gap_to_brute_force_within_five_percent(seed: int) -> None:
    instance = random_instance(random.Random(seed), max_jobs=4, max_machines=3)
    smd, best, relative = gap(instance)
    assert best <= smd + 1e-6 * best  # brute force is exact
    assert relative <= 0.05


def test_result_is_feasible_and_no_worse_than_base() -> None:
    instance = random_instance(random.Random(7), max_jobs=4, max_machines=3)
    args = (instance.jobs, instance.remaining, instance.machines, instance.candidates)
    for solver in ("exact", "lp", "greedy"):
        result = solve(*args, instance.base, SmdConfig(solver=solver, polish_jobs=0))
        used = sum(
            (usage(j, o) for j, o in zip(instance.jobs, result.options, strict=True)),
            np.zeros_like(capacity(instance.machines)),
        )
        assert np.all(used <= capacity(instance.machines) + 1e-9)
        base = objective(instance.jobs, instance.remaining, instance.base, instance.machines)
        assert result.objective <= base + 1e-9
        assert result.objective == pytest.approx(
            objective(instance.jobs, instance.remaining, result.options, instance.machines)
        )


def test_brute_force_beats_every_single_option_change() -> None:
    instance = random_instance(random.Random(3), max_jobs=3, max_machines=2)
    options, value = brute_force(
        instance.jobs, instance.remaining, instance.machines, instance.candidates
    )
    cap = capacity(instance.machines)
    for i, candidates in enumerate(instance.candidates):
        for other in candidates:
            trial = [*options[:i], other, *options[i + 1 :]]
            used = sum((usage(j, o) for j, o in zip(instance.jobs, trial, strict=True)), 0 * cap)
            if np.all(used <= cap + 1e-9):
                assert (
                    value
                    <= objective(instance.jobs, instance.remaining, trial, instance.machines)
                    + 1e-6 * value
                )


def test_unknown_solver_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown solver"):
        SmdConfig(solver="magic")


def test_usages_match_usage_option_by_option() -> None:
    instance = random_instance(random.Random(11))
    for job, options in zip(instance.jobs, instance.candidates, strict=True):
        expected = np.array([usage(job, o).ravel() for o in options])
        assert np.array_equal(usages(job, options), expected)
