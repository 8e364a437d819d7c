"""Greedy allocation of GPU counts to jobs under a separable cost, in steps of any size.

Each job ``j`` has a cost ``cost[j][n]`` for every count ``n`` from 0 to its cap. Starting from
zero GPUs everywhere, the step with the largest cost decrease per GPU (over every job and every
larger count that the free GPUs allow) is taken until no step lowers the cost. Steps of several
GPUs at once let a job cross a bump in its cost (e.g. the restart penalty of leaving its current
count). Ties go to the earlier job, then the smaller step. Lazy re-evaluation keeps a round at
O(GPUs × cap × log jobs).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence


def _best_step(costs: Sequence[float], n: int, free: int) -> tuple[float, int]:
    best, target = 0.0, n
    base = costs[n]
    for m in range(n + 1, min(len(costs) - 1, n + free) + 1):
        gain = (base - costs[m]) / (m - n)
        if gain > best + 1e-15:
            best, target = gain, m
    return best, target


def greedy_counts(costs: Sequence[Sequence[float]], capacity: int) -> list[int]:
    """Counts per job (module docstring); ``costs[j]`` has one entry per count 0..cap_j."""
    counts = [0] * len(costs)
    free = capacity
    heap: list[tuple[float, int, int, int]] = []
    for j, c in enumerate(costs):
        gain, target = _best_step(c, 0, free)
        if target > 0:
            heap.append((-gain, j, target, free))
    heapq.heapify(heap)
    while heap and free > 0:
        _, j, target, seen_free = heapq.heappop(heap)
        if target - counts[j] > free or (seen_free != free and target - counts[j] <= 0):
            gain, target = _best_step(costs[j], counts[j], free)
            if target > counts[j]:
                heapq.heappush(heap, (-gain, j, target, free))
            continue
        free -= target - counts[j]
        counts[j] = target
        gain, target = _best_step(costs[j], counts[j], free)
        if target > counts[j]:
            heapq.heappush(heap, (-gain, j, target, free))
    return counts
