"""Deadline plans over a timeline of future free GPUs: ElasticFlow's minimum satisfactory share.

A :class:`Timeline` holds how many GPUs are free from ``start`` on, piecewise constant. A job
with ``remaining`` iterations, a throughput curve (iterations per second by GPU count) and a
deadline is planned by :func:`min_share`: for each allowed GPU level ``q`` (ascending), the
timeline is filled *backwards* from the deadline, each interval taking ``q`` GPUs or the largest
allowed size still free there, until the iterations are covered from some point ``p``; the plan
then runs *forwards* from ``start``, at the previous level before ``p`` and at ``q`` from ``p``,
until the iterations are done. The smallest level whose plan ends by the deadline is the job's
minimum satisfactory share (Gu et al., ElasticFlow, ASPLOS'23, §4.2; our own code after the
semantics of the artifact's simulator, pkusys/ElasticFlow commit 04a0109a). A plan holds its
GPUs until its end rounded up to a scheduling slot, as in the artifact.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Rate = Callable[[int], float]
"""Iterations per second at a GPU count (a count the curve allows)."""


@dataclass(frozen=True, slots=True)
class Segment:
    start: float
    end: float
    gpus: int


@dataclass(frozen=True, slots=True)
class DeadlinePlan:
    """GPUs by interval from the planning time (``segments``, in time order, gpus > 0), when
    the work is done (``end``) and until when its GPUs are held (``held_until``, ``end`` up to
    a slot)."""

    segments: tuple[Segment, ...]
    end: float
    held_until: float

    def gpus_at(self, t: float) -> int:
        for s in self.segments:
            if s.start <= t < s.end:
                return s.gpus
        return 0

    def gpu_time(self) -> float:
        return sum(s.gpus * (s.end - s.start) for s in self.segments)

    def next_change(self, t: float) -> float | None:
        """The first time after ``t`` at which the planned GPU count changes."""
        for s in self.segments:
            for edge in (s.start, s.end):
                if edge > t + 1e-9:
                    return edge
        return None


class Timeline:
    """Free GPUs from ``start`` on: ``free[i]`` over ``[times[i], times[i+1])``, the last value
    forever."""

    def __init__(self, start: float, capacity: int) -> None:
        self.times = [start]
        self.free = [capacity]

    def copy(self) -> Timeline:
        other = Timeline(self.times[0], 0)
        other.times, other.free = list(self.times), list(self.free)
        return other

    def _split(self, t: float) -> int:
        """The index of the interval starting at ``t`` (made if needed)."""
        i = bisect.bisect_right(self.times, t) - 1
        if i < 0:
            raise ValueError(f"time {t} is before the timeline's start {self.times[0]}")
        if self.times[i] == t:
            return i
        self.times.insert(i + 1, t)
        self.free.insert(i + 1, self.free[i])
        return i + 1

    def add(self, plan: DeadlinePlan, sign: int) -> None:
        """Take (``sign`` -1) or give back (+1) ``plan``'s GPUs; ValueError on over-commit."""
        for s in plan.segments:
            a = self._split(s.start)
            b = self._split(s.end)
            for i in range(a, b):
                self.free[i] += sign * s.gpus
                if self.free[i] < 0:
                    raise ValueError("plan over-commits the timeline")

    def intervals(self, until: float) -> list[tuple[float, float, int]]:
        """``(start, end, free)`` from the start up to ``until``."""
        out = []
        for i, t in enumerate(self.times):
            if t >= until:
                break
            end = self.times[i + 1] if i + 1 < len(self.times) else math.inf
            out.append((t, min(end, until), self.free[i]))
        return out


def fit(sizes: Sequence[int], free: int, cap: int) -> int:
    """The largest allowed size at most ``min(free, cap)`` (0 if none)."""
    best = 0
    for s in sizes:
        if s <= free and s <= cap:
            best = s
    return best


def _forward(
    timeline: Timeline,
    remaining: float,
    rate: Rate,
    sizes: Sequence[int],
    level_at: Callable[[float], int],
    slot: float,
) -> DeadlinePlan | None:
    """Run from the timeline's start at ``min(level_at(t), largest free size)`` until the work
    is done; None if it never is (the timeline ends with too few GPUs)."""
    segments: list[Segment] = []
    left = remaining
    start = timeline.times[0]
    for a, b, free in timeline.intervals(math.inf):
        g = fit(sizes, free, level_at(a))
        if g == 0:
            continue
        r = rate(g)
        if r <= 0:
            continue
        if math.isinf(b) or (b - a) * r >= left:
            end = a + left / r
            segments.append(Segment(a, end, g))
            held = start + math.ceil((end - start) / slot - 1e-9) * slot
            room = min((f for x, y, f in timeline.intervals(held) if y > end), default=g)
            if room < g:
                held = end  # the GPUs are promised to others after the job ends
            return DeadlinePlan(_merge(segments, held), end, held)
        segments.append(Segment(a, b, g))
        left -= (b - a) * r
    return None


def _merge(segments: list[Segment], held: float) -> tuple[Segment, ...]:
    """Adjacent equal segments merged, the last held until ``held``."""
    out: list[Segment] = []
    for i, s in enumerate(segments):
        end = held if i == len(segments) - 1 else s.end
        if out and out[-1].gpus == s.gpus and out[-1].end == s.start:
            out[-1] = Segment(out[-1].start, end, s.gpus)
        else:
            out.append(Segment(s.start, end, s.gpus))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Step:
    """Level ``low`` before ``point``, ``high`` from it."""

    point: float
    low: int
    high: int

    def __call__(self, t: float) -> int:
        return self.high if t >= self.point else self.low


def min_share(
    timeline: Timeline,
    remaining: float,
    deadline: float,
    rate: Rate,
    sizes: Sequence[int],
    cap: int,
    slot: float,
) -> DeadlinePlan | None:
    """The minimum satisfactory share (module docstring), or None if no allowed level up to
    ``cap`` ends the work by ``deadline`` on ``timeline``."""
    if remaining <= 0:
        return DeadlinePlan((), timeline.times[0], timeline.times[0])
    usable = timeline.intervals(deadline)
    previous = 0
    for q in [s for s in sizes if s <= cap]:
        covered = 0.0
        point = None
        for a, b, free in reversed(usable):
            g = fit(sizes, free, q)
            if g == 0:
                continue
            covered += (b - a) * rate(g)
            if covered >= remaining:
                point = a
                break
        if point is not None:
            plan = _forward(timeline, remaining, rate, sizes, _Step(point, previous, q), slot)
            if plan is not None and plan.end <= deadline + 1e-6:
                return plan
        previous = q
    return None


def constant_plan(
    timeline: Timeline, remaining: float, rate: Rate, sizes: Sequence[int], level: int, slot: float
) -> DeadlinePlan | None:
    """Run at ``level`` (or the largest free size below it) from now until done."""
    return _forward(timeline, remaining, rate, sizes, lambda t: level, slot)
