"""Decisions as data: what one scheduling cycle wants done. A plan never mutates anything."""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.cluster.state import Placement
from dlsched.scheduler.view import JobView


@dataclass(frozen=True, slots=True)
class Start:
    """Start (or resume) ``job`` on ``placement``."""

    job: JobView
    placement: Placement


@dataclass(frozen=True, slots=True)
class Plan:
    """The outcome of a cycle for one pool. Preemptions are applied before starts: the starts'
    placements assume the preempted jobs' resources are free. ``wake_at`` asks for another
    cycle at that time even if no event happens (e.g. a job crossing a priority threshold)."""

    starts: tuple[Start, ...] = ()
    preempts: tuple[JobView, ...] = ()
    wake_at: float | None = None

    def __bool__(self) -> bool:
        return bool(self.starts or self.preempts)


EMPTY_PLAN = Plan()
