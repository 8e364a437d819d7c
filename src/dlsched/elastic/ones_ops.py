"""The operators of ONES's evolutionary search over schedules (Bian et al., SC'21).

A schedule is a list with one slot per GPU of the cluster (slots ordered node by node), each
holding a job index or :data:`IDLE`. A job's GPU count is the number of its slots. These
functions are pure: they return new lists and draw randomness only from the generator given.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

IDLE = -1
BLOCKED = -2
"""A slot the schedule may not use this round (its GPU is down or reserved): held by this
pseudo-job, which every candidate pins in place."""
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


def pin(schedule: Sequence[int], fixed: Mapping[int, Sequence[int]]) -> Schedule:
    """``schedule`` with each job of ``fixed`` on exactly its given slots: its other slots
    become idle and any other job on those slots loses them."""
    out = [IDLE if j in fixed else j for j in schedule]
    for j, slots in fixed.items():
        for s in slots:
            out[s] = j
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


class _FreeSlots:
    """Free slots per node, with nodes found by free count in O(log nodes): the pool the
    reordering takes GPUs from."""

    def __init__(self, free_slots: Sequence[int], slot_node: Sequence[int]) -> None:
        self.slots: dict[int, list[int]] = {}
        for s in reversed(free_slots):  # popped from the end: lowest slot first
            self.slots.setdefault(slot_node[s], []).append(s)
        self.top = max((len(v) for v in self.slots.values()), default=0)
        self.heaps: list[list[int]] = [[] for _ in range(self.top + 1)]
        for node, v in self.slots.items():
            heapq.heappush(self.heaps[len(v)], node)

    def count(self, node: int) -> int:
        return len(self.slots.get(node, ()))

    def take(self, node: int, k: int) -> list[int]:
        """Up to ``k`` free slots of ``node``, lowest first."""
        v = self.slots.get(node)
        if not v or k <= 0:
            return []
        taken = [v.pop() for _ in range(min(k, len(v)))]
        heapq.heappush(self.heaps[len(v)], node)
        return taken

    def _lowest_with(self, c: int) -> int | None:
        """The lowest-numbered node with exactly ``c`` free slots (stale entries dropped)."""
        heap = self.heaps[c]
        while heap:
            node = heap[0]
            if self.count(node) == c:
                return node
            heapq.heappop(heap)
        return None

    def best_fit(self, k: int) -> int | None:
        """The node with the fewest free slots that still holds ``k`` (lowest on ties)."""
        for c in range(max(k, 1), self.top + 1):
            node = self._lowest_with(c)
            if node is not None:
                return node
        return None

    def fullest(self) -> int | None:
        """The node with the most free slots (lowest on ties); None when none is free."""
        for c in range(self.top, 0, -1):
            node = self._lowest_with(c)
            if node is not None:
                return node
        return None

    def take_fullest(self, k: int) -> list[int]:
        """``k`` slots (fewer if the pool runs dry), node by node from the fullest."""
        out: list[int] = []
        while len(out) < k:
            node = self.fullest()
            if node is None:
                break
            out.extend(self.take(node, k - len(out)))
        return out


def reorder(schedule: Sequence[int], current: Sequence[int], slot_node: Sequence[int]) -> Schedule:
    """The same GPU counts as ``schedule``, laid out to move as few GPUs as possible from
    ``current`` and keep each job's GPUs on few nodes.

    Every job keeps ``min(new, old)`` of its current slots, those on the nodes where it holds
    most; a job that grows takes free slots on its own nodes first, then those of the nodes
    with the most free slots; a job new to the schedule takes the node with the fewest free
    slots that holds it whole, else the nodes with the most free slots. So the moves are
    exactly the GPUs jobs gain, the fewest any layout with these counts can have. Runs in
    O(slots + jobs · log nodes) (plus the node size per job).
    """
    want = job_counts(schedule)
    out = [IDLE] * len(schedule)
    held: dict[int, list[int]] = {}
    for s, j in enumerate(current):
        if j != IDLE and want[j] > 0:
            held.setdefault(j, []).append(s)
    for j, slots in held.items():
        if len(slots) > want[j]:
            per_node = Counter(slot_node[s] for s in slots)
            slots = sorted(slots, key=lambda s: (-per_node[slot_node[s]], slot_node[s], s))
            slots = slots[: want[j]]
        for s in slots:
            out[s] = j
    have = job_counts(out)
    pool = _FreeSlots([s for s, x in enumerate(out) if x == IDLE], slot_node)
    growers = sorted(
        (j for j in want if have[j] and want[j] > have[j]), key=lambda j: (-(want[j] - have[j]), j)
    )
    for j in growers:
        need = want[j] - have[j]
        chosen: list[int] = []
        for node in sorted({slot_node[s] for s in held[j] if out[s] == j}):
            chosen.extend(pool.take(node, need - len(chosen)))
        chosen.extend(pool.take_fullest(need - len(chosen)))
        for s in chosen:
            out[s] = j
    newcomers = sorted((j for j in want if not have[j]), key=lambda j: (-want[j], j))
    for j in newcomers:
        fit = pool.best_fit(want[j])
        chosen = pool.take(fit, want[j]) if fit is not None else pool.take_fullest(want[j])
        for s in chosen:
            out[s] = j
    return out


def slots_by_job(schedule: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """Each job's slots, in increasing order."""
    out: dict[int, list[int]] = {}
    for s, j in enumerate(schedule):
        if j != IDLE:
            out.setdefault(j, []).append(s)
    return {j: tuple(v) for j, v in out.items()}


def restart_cost(
    schedule: Sequence[int], current: Mapping[int, tuple[int, ...]], restart_s: float
) -> float:
    """GPU-seconds lost to restarts if ``schedule`` replaced the schedule whose slots by job
    are ``current``: ``restart_s`` × the GPUs of every job whose slots differ (a job that
    starts or changes GPUs waits ``restart_s`` on all of its new GPUs)."""
    return restart_s * sum(
        len(slots) for j, slots in slots_by_job(schedule).items() if current.get(j) != slots
    )


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
