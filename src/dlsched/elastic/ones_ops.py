"""The operators of ONES's evolutionary search over schedules (Bian et al., SC'21).

A schedule is a list with one slot per GPU of the cluster (slots ordered node by node), each
holding a job index or :data:`IDLE`. A job's GPU count is the number of its slots. These
functions are pure: they return new lists and draw randomness only from the generator given.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

IDLE = -1
Schedule = list[int]


def job_counts(schedule: Sequence[int]) -> Counter[int]:
    """GPUs per job."""
    counts: Counter[int] = Counter(schedule)
    counts.pop(IDLE, None)
    return counts


def trim(schedule: Sequence[int], caps: Mapping[int, int]) -> Schedule:
    """Drop jobs without a cap (finished or unknown) and each job's slots beyond its cap (its
    highest-numbered slots go first)."""
    seen: dict[int, int] = {}
    out = []
    for j in schedule:
        if j != IDLE:
            c = seen.get(j, 0)
            if c < caps.get(j, 0):
                seen[j] = c + 1
                out.append(j)
                continue
        out.append(IDLE)
    return out


def crossover(a: Sequence[int], b: Sequence[int], rng: random.Random) -> Schedule:
    """Uniform crossover: each slot from ``b`` with probability 0.5, else from ``a``."""
    return [y if rng.random() < 0.5 else x for x, y in zip(a, b, strict=True)]


def mutate(
    schedule: Sequence[int], eligible: set[int], rng: random.Random, p: float = 0.3
) -> Schedule:
    """Remove every slot of each eligible job present, independently with probability ``p``
    (jobs drawn in increasing index order, so the draw is deterministic)."""
    present = sorted(set(schedule) & eligible)
    gone = {j for j in present if rng.random() < p}
    return [IDLE if j in gone else j for j in schedule]


def fill(
    schedule: Sequence[int],
    new_jobs: Sequence[int],
    by_remaining: Sequence[int],
    caps: Mapping[int, int],
) -> Schedule:
    """Fill idle slots: each job of ``new_jobs`` absent from the schedule gets one GPU (in
    order); then the jobs of ``by_remaining`` (ascending predicted single-GPU remaining time)
    grow, each up to its cap, while idle slots remain. Never exceeds a cap or the slots."""
    out = list(schedule)
    idle = [s for s, j in enumerate(out) if j == IDLE]
    counts = job_counts(out)
    pos = 0
    for j in new_jobs:
        if pos == len(idle):
            return out
        if counts[j] == 0 and caps.get(j, 0) >= 1:
            out[idle[pos]] = j
            counts[j] += 1
            pos += 1
    for j in by_remaining:
        while pos < len(idle) and counts[j] < caps.get(j, 0):
            out[idle[pos]] = j
            counts[j] += 1
            pos += 1
    return out


def moves(new: Sequence[int], current: Sequence[int]) -> int:
    """GPUs that change hands: slots a job holds in ``new`` that it did not hold before."""
    return sum(1 for x, y in zip(new, current, strict=True) if x != IDLE and x != y)


def naive_layout(counts: Mapping[int, int], slots: int) -> Schedule:
    """Jobs laid out contiguously in increasing job order from slot 0 (the baseline the
    reordering must never do worse than)."""
    out = [IDLE] * slots
    pos = 0
    for j in sorted(counts):
        for _ in range(counts[j]):
            out[pos] = j
            pos += 1
    return out


def _runs(free: Sequence[bool]) -> list[tuple[int, int]]:
    """(start, length) of each maximal run of free slots."""
    runs, start = [], None
    for s, f in enumerate([*free, False]):
        if f and start is None:
            start = s
        elif not f and start is not None:
            runs.append((start, s - start))
            start = None
    return runs


def reorder(schedule: Sequence[int], current: Sequence[int], slot_node: Sequence[int]) -> Schedule:
    """The same GPU counts as ``schedule``, laid out to move as few GPUs as possible from
    ``current`` and keep each job's GPUs together.

    Every job keeps ``min(new, old)`` of its current slots, those on the nodes where it holds
    most; a job that grows takes free slots on its own nodes first, then the free slots of
    the fullest-free nodes; a job new to the schedule takes the smallest run of free slots that
    holds it whole, else the longest runs. So the moves are exactly the GPUs jobs gain, the
    fewest any layout with these counts can have.
    """
    want = job_counts(schedule)
    out = [IDLE] * len(schedule)
    held: dict[int, list[int]] = {}
    for s, j in enumerate(current):
        if j != IDLE and want[j] > 0:
            held.setdefault(j, []).append(s)
    for j, slots in held.items():
        per_node = Counter(slot_node[s] for s in slots)
        ranked = sorted(slots, key=lambda s: (-per_node[slot_node[s]], slot_node[s], s))
        for s in ranked[: want[j]]:
            out[s] = j
    have = job_counts(out)
    growers = sorted(
        (j for j in want if have[j] and want[j] > have[j]), key=lambda j: (-(want[j] - have[j]), j)
    )
    for j in growers:
        nodes = {slot_node[s] for s, x in enumerate(out) if x == j}
        free_own = [s for s, x in enumerate(out) if x == IDLE and slot_node[s] in nodes]
        free_node: Counter[int] = Counter(slot_node[s] for s, x in enumerate(out) if x == IDLE)
        others = sorted(
            (s for s, x in enumerate(out) if x == IDLE and slot_node[s] not in nodes),
            key=lambda s: (-free_node[slot_node[s]], s),
        )
        for s in (free_own + others)[: want[j] - have[j]]:
            out[s] = j
    newcomers = sorted((j for j in want if not have[j]), key=lambda j: (-want[j], j))
    for j in newcomers:
        need = want[j]
        runs = _runs([x == IDLE for x in out])
        whole = [r for r in runs if r[1] >= need]
        if whole:
            start, _ = min(whole, key=lambda r: (r[1], r[0]))
            chosen = list(range(start, start + need))
        else:
            chosen = []
            for start, length in sorted(runs, key=lambda r: (-r[1], r[0])):
                chosen.extend(range(start, start + min(length, need - len(chosen))))
                if len(chosen) == need:
                    break
        for s in chosen:
            out[s] = j
    return out


def interpolate_throughput(history: Mapping[int, Sequence[float]], n: int) -> float | None:
    """Throughput at ``n`` GPUs from measurements: the mean of the (last five) measurements at
    ``n``; else linear inter- or extrapolation over the sizes measured (through the origin
    when only one size was), never below a tenth of the smallest measured mean. None when
    nothing was measured."""
    means = {k: sum(v) / len(v) for k, v in history.items() if v}
    if not means:
        return None
    if n in means:
        return means[n]
    sizes = sorted(means)
    if len(sizes) == 1:
        value = means[sizes[0]] * n / sizes[0]
    else:
        lo_i = max((i for i, k in enumerate(sizes) if k < n), default=0)
        lo_i = min(lo_i, len(sizes) - 2)
        a, b = sizes[lo_i], sizes[lo_i + 1]
        value = means[a] + (means[b] - means[a]) * (n - a) / (b - a)
    return max(value, 0.1 * min(means.values()))


def fitness(
    schedule: Sequence[int],
    samples_done: Mapping[int, float],
    rho: Mapping[int, float],
    throughput: Callable[[int, int], float | None],
) -> float:
    """Total predicted remaining GPU-seconds, lower is better:
    ``Σ_j y_j · n_j · (1/ρ_j − 1) / x_j(n_j)`` over jobs with a progress prediction ``ρ_j``
    and a throughput estimate; other jobs add 0."""
    total = 0.0
    for j, n in job_counts(schedule).items():
        r = rho.get(j)
        if r is None:
            continue
        x = throughput(j, n)
        if x is None or x <= 0:
            continue
        total += samples_done.get(j, 0.0) * n * (1.0 / r - 1.0) / x
    return total if math.isfinite(total) else math.inf
