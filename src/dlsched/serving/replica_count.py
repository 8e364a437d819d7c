"""Replicas serving over time, as a step series: ``[[time, replicas from then on], ...]``."""

from __future__ import annotations

from collections.abc import Iterable


def replica_steps(lifetimes: Iterable[tuple[float, float]]) -> list[list[float]]:
    """The number of replicas alive after each change, from ``(ready, end)`` lifetimes (a
    replica serves from ``ready`` until ``end``; ``end`` may be infinite: to the run's end)."""
    changes: dict[float, int] = {}
    for ready, end in lifetimes:
        if end <= ready:
            continue
        changes[ready] = changes.get(ready, 0) + 1
        if end != float("inf"):
            changes[end] = changes.get(end, 0) - 1
    steps: list[list[float]] = []
    alive = 0
    for at in sorted(changes):
        alive += changes[at]
        steps.append([at, alive])
    return steps
