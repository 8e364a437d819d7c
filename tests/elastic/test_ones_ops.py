"""The ONES operators: caps and the cluster are never exceeded, fitness is the documented sum,
and reordering never moves more GPUs than laying jobs out naively."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.elastic.ones_ops import (
    IDLE,
    crossover,
    fill,
    fitness,
    interpolate_throughput,
    job_counts,
    moves,
    mutate,
    naive_layout,
    pin,
    reorder,
    restart_cost,
    slots_by_job,
    trim,
)

SLOTS = 12
SLOT_NODE = [s // 4 for s in range(SLOTS)]
schedules = st.lists(st.integers(min_value=-1, max_value=5), min_size=SLOTS, max_size=SLOTS)
caps_st = st.dictionaries(st.integers(0, 5), st.integers(1, 6), min_size=1)


def within(schedule: list[int], caps: dict[int, int]) -> bool:
    return len(schedule) == SLOTS and all(
        n <= caps.get(j, 0) for j, n in job_counts(schedule).items()
    )


@settings(max_examples=100, deadline=None)
@given(schedules, schedules, caps_st, st.integers(0, 2**31))
def test_operators_never_exceed_caps_or_the_cluster(
    a: list[int], b: list[int], caps: dict[int, int], seed: int
) -> None:
    rng = random.Random(seed)
    child = trim(crossover(trim(a, caps), trim(b, caps), rng), caps)
    assert within(child, caps)
    mutated = mutate(child, set(caps), rng, 0.3)
    assert within(mutated, caps)
    assert set(job_counts(mutated)) <= set(job_counts(child))
    new_jobs = sorted(caps)[:2]
    filled = fill(mutated, new_jobs, sorted(caps, reverse=True), caps)
    assert within(filled, caps)
    # fill only adds: every slot held before is still held by the same job
    assert all(x == y for x, y in zip(mutated, filled, strict=True) if x != IDLE)
    idle = filled.count(IDLE)
    # idle slots remain only when every job sits at its cap
    assert idle == 0 or all(job_counts(filled)[j] == c for j, c in caps.items())
    ordered = reorder(filled, trim(a, caps), SLOT_NODE)
    assert job_counts(ordered) == job_counts(filled)


def test_mutation_removes_only_eligible_jobs() -> None:
    schedule = [0, 0, 1, 1, 2, 2]
    for seed in range(20):
        out = mutate(schedule, {1}, random.Random(seed), 1.0)
        assert out == [0, 0, IDLE, IDLE, 2, 2]


def test_fitness_matches_a_hand_computation() -> None:
    schedule = [0, 0, 1, IDLE, 2]
    samples = {0: 100.0, 1: 50.0, 2: 10.0}
    rho = {0: 0.5, 1: 0.25}  # job 2 has no prediction yet: adds 0
    speeds = {(0, 2): 10.0, (1, 1): 5.0, (2, 1): 1.0}

    def throughput(j: int, n: int) -> float | None:
        return speeds.get((j, n))

    # 100·2·(1/0.5 − 1)/10 + 50·1·(1/0.25 − 1)/5 = 20 + 30
    assert fitness(schedule, samples, rho, throughput) == 50.0


def test_fill_gives_new_jobs_one_gpu_then_grows_by_remaining_time() -> None:
    out = fill([IDLE] * 6, [3, 4], [1, 3, 4], {1: 3, 3: 2, 4: 4})
    assert job_counts(out) == {3: 2, 4: 1, 1: 3}


@settings(max_examples=120, deadline=None)
@given(schedules, schedules)
def test_reorder_never_moves_more_than_a_naive_layout(cand: list[int], current: list[int]) -> None:
    ordered = reorder(cand, current, SLOT_NODE)
    naive = naive_layout(job_counts(cand), SLOTS)
    assert job_counts(ordered) == job_counts(cand)
    assert moves(ordered, current) <= moves(naive, current)
    # the moves are exactly the GPUs jobs gain
    gained = sum(max(n - job_counts(current)[j], 0) for j, n in job_counts(cand).items())
    assert moves(ordered, current) == gained


def test_reorder_puts_a_new_job_on_one_node_when_one_holds_it() -> None:
    current = [0, 0, IDLE, IDLE, IDLE, 1, IDLE, IDLE]
    slot_node = [s // 4 for s in range(8)]
    out = reorder([0, 0, 1, 2, 2, 2, IDLE, IDLE], current, slot_node)
    assert [s for s, j in enumerate(out) if j == 2] == [4, 6, 7]
    assert out[0] == out[1] == 0 and out[5] == 1


def test_reorder_grows_a_job_on_its_own_node_first() -> None:
    current = [IDLE, 0, IDLE, IDLE, IDLE, IDLE, IDLE, IDLE]
    out = reorder([0, 0, 0, IDLE, IDLE, IDLE, IDLE, IDLE], current, [s // 4 for s in range(8)])
    assert [s for s, j in enumerate(out) if j == 0] == [0, 1, 2]


def test_throughput_interpolation() -> None:
    history = {1: (9.0, 11.0), 4: (30.0,)}
    assert interpolate_throughput(history, 1) == 10.0
    assert interpolate_throughput(history, 2) == 10.0 + 20.0 / 3
    assert interpolate_throughput(history, 8) == pytest.approx(10.0 + 20.0 / 3 * 7)
    assert interpolate_throughput({2: (8.0,)}, 4) == 16.0
    assert interpolate_throughput({}, 4) is None


def test_restart_cost_charges_every_job_whose_slots_change() -> None:
    current = slots_by_job([0, 0, 1, 1, IDLE, IDLE])
    # job 0 keeps its slots (free), job 1 moves to 1 other slot, job 2 starts on 2 GPUs
    schedule = [0, 0, 1, IDLE, 2, 2]
    assert restart_cost(schedule, current, 30.0) == 30.0 * (1 + 2)
    assert restart_cost([0, 0, 1, 1, IDLE, IDLE], current, 30.0) == 0.0


@settings(max_examples=100, deadline=None)
@given(schedules, schedules)
def test_pin_puts_held_jobs_on_exactly_their_slots(cand: list[int], current: list[int]) -> None:
    held = slots_by_job(current)
    fixed = {j: s for j, s in held.items() if j % 2 == 0}
    out = pin(cand, fixed)
    assert {j: s for j, s in slots_by_job(out).items() if j in fixed} == fixed
    # every other slot keeps its job or turns idle
    fixed_slots = {s for slots in fixed.values() for s in slots}
    for s, (x, y) in enumerate(zip(cand, out, strict=True)):
        if s not in fixed_slots:
            assert y == x or (y == IDLE and x in fixed)
