"""Goodput: throughput × statistical efficiency, and the batch configuration that maximizes it.

For ``R`` replicas on ``N`` nodes with local batch ``b`` and ``s`` accumulation steps the global
batch is ``M = R·b·(s + 1)``; one optimizer step takes ``T`` seconds (from a
:class:`StepModel`: the measured-and-interpolated :class:`~dlsched.perf.steptime.StepTimeModel`
by default, or a fitted :class:`~dlsched.perf.pollux_fit.PolluxModel`) and advances training by
``gain(M)`` (:mod:`dlsched.perf.efficiency`). Then

- throughput = ``M / T`` examples per second,
- efficiency = ``gain / scale`` with ``scale = M / M0``,
- goodput = throughput × efficiency = ``M0·gain / T`` examples per second at ``M0``'s
  efficiency, and progress rate = ``gain / T`` (progress units per second).

Batch limits come from the profile: local batch within the measured range (and an
application's cap, yolov3 ≤ 8), global batch between the smallest and the largest validated
sizes, and at most :data:`MAX_ACCUM_STEPS` accumulation steps.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Protocol

from dlsched.perf.efficiency import LOCAL_BSZ_CAP, EfficiencyModel, efficiency_from_profile
from dlsched.perf.profiles import AppProfile, load_profile
from dlsched.perf.steptime import StepTimeModel

MAX_ACCUM_STEPS = 15
"""Default limit on extra micro-steps per optimizer step."""

_GRID_POINTS = 24
"""Geometric grid of local batches searched without accumulation."""
_ACCUM_GRID_POINTS = 6
"""Geometric grid of local batches searched with each number of accumulation steps."""
_REFINE_POINTS = 32
"""Most integer local batches tried around the best grid point."""


class StepModel(Protocol):
    """Anything that prices an optimizer step."""

    def iteration_time(
        self, nodes: int, replicas: int, local_bsz: float, accum_steps: int = 0
    ) -> float:
        """Seconds per optimizer step."""
        ...


@dataclass(frozen=True, slots=True)
class BatchConfig:
    """How a job splits its batch."""

    local_bsz: int  # examples per replica per micro-step
    accum_steps: int = 0  # extra micro-steps (gradient accumulation) per optimizer step

    def global_bsz(self, replicas: int) -> int:
        """``M = replicas·local_bsz·(accum_steps + 1)``."""
        return replicas * self.local_bsz * (self.accum_steps + 1)


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """What batch configurations an application may use."""

    min_local_bsz: int  # smallest measured local batch
    max_local_bsz: int  # min(largest measured local batch, LOCAL_BSZ_CAP of the app)
    min_global_bsz: int  # smallest validated global batch (M0): no smaller batch is validated
    max_global_bsz: int  # largest validated global batch
    max_accum_steps: int  # most extra micro-steps per optimizer step


@dataclass(frozen=True, slots=True)
class Goodput:
    """One batch configuration on one allocation, evaluated."""

    config: BatchConfig
    global_bsz: int  # M = R·b·(s + 1)
    step_time: float  # T, seconds per optimizer step
    throughput: float  # M / T, examples per second
    efficiency: float  # gain / scale, scale = M / M0
    goodput: float  # throughput × efficiency = M0·gain / T
    progress_rate: float  # gain / T, progress units per second


def batch_limits(profile: AppProfile, max_accum_steps: int = MAX_ACCUM_STEPS) -> BatchLimits:
    """The limits of :class:`BatchLimits` read from ``profile``."""
    lo, hi = profile.local_bsz_range
    hi = min(hi, LOCAL_BSZ_CAP.get(profile.app, hi))
    return BatchLimits(
        lo, max(hi, lo), profile.initial_bsz, profile.max_global_bsz, max_accum_steps
    )


class GoodputModel:
    """Goodput of one application on one GPU variant (module docstring)."""

    def __init__(
        self,
        profile: AppProfile,
        step_model: StepModel | None = None,
        efficiency: EfficiencyModel | None = None,
        limits: BatchLimits | None = None,
    ) -> None:
        self.profile = profile
        self.step_model: StepModel = step_model or StepTimeModel(profile)
        self.efficiency = efficiency or efficiency_from_profile(profile)
        self.limits = limits or batch_limits(profile)
        self._measured_sizes = frozenset(s.local_bsz for s in profile.samples)

    def evaluate(self, epoch: int, nodes: int, replicas: int, config: BatchConfig) -> Goodput:
        """Throughput, efficiency and goodput of ``config`` during ``epoch`` (no limit
        checks)."""
        m = config.global_bsz(replicas)
        t = self.step_model.iteration_time(nodes, replicas, config.local_bsz, config.accum_steps)
        g = self.efficiency.gain(epoch, m)
        m0 = self.efficiency.initial_bsz
        return Goodput(
            config=config,
            global_bsz=m,
            step_time=t,
            throughput=m / t,
            efficiency=g * m0 / m,
            goodput=m0 * g / t,
            progress_rate=g / t,
        )

    def best_batch(
        self, epoch: int, nodes: int, replicas: int, max_local_bsz: int | None = None
    ) -> Goodput:
        """The configuration with the highest goodput within the limits (``max_local_bsz``
        tightens the local limit, e.g. for GPU memory).

        For each number of accumulation steps ``s``, the local batches that keep the global
        batch within limits are searched: measured sizes, both ends and a geometric grid
        (:data:`_GRID_POINTS` points without accumulation, :data:`_ACCUM_GRID_POINTS` with),
        then the integers around the best one, at most :data:`_REFINE_POINTS` of them. Ties go
        to the smaller global batch, then fewer accumulation steps. When nothing fits the
        global limits (more replicas than the largest validated batch allows at the smallest
        local batch, or too few for the smallest validated batch), the nearest configuration is
        returned: the smallest local batch, or the largest with all accumulation steps.
        """
        lim = self.limits
        lo = lim.min_local_bsz
        hi = lim.max_local_bsz if max_local_bsz is None else min(lim.max_local_bsz, max_local_bsz)
        hi = max(hi, lo)
        best: Goodput | None = None
        for s in range(lim.max_accum_steps + 1):
            per_example = replicas * (s + 1)
            b_min = max(lo, -(-lim.min_global_bsz // per_example))
            b_max = min(hi, lim.max_global_bsz // per_example)
            if b_min > b_max:
                continue
            points = _GRID_POINTS if s == 0 else _ACCUM_GRID_POINTS
            found = self._search(epoch, nodes, replicas, s, b_min, b_max, points)
            if best is None or _rank(found) > _rank(best):
                best = found
        if best is None:
            too_many = replicas * lo > lim.max_global_bsz
            nearest = BatchConfig(lo) if too_many else BatchConfig(hi, lim.max_accum_steps)
            return self.evaluate(epoch, nodes, replicas, nearest)
        return best

    def _search(
        self, epoch: int, nodes: int, replicas: int, accum: int, lo: int, hi: int, points: int
    ) -> Goodput:
        measured = {b for b in self._measured_sizes if lo <= b <= hi}
        grid = {round(lo * math.pow(hi / lo, i / (points - 1))) for i in range(points)}
        sizes = sorted(measured | grid | {lo, hi})
        scored = [self.evaluate(epoch, nodes, replicas, BatchConfig(b, accum)) for b in sizes]
        i = max(range(len(scored)), key=lambda k: _rank(scored[k]))
        left, right = sizes[max(i - 1, 0)], sizes[min(i + 1, len(sizes) - 1)]
        step = max(1, (right - left) // _REFINE_POINTS)
        refined = [
            self.evaluate(epoch, nodes, replicas, BatchConfig(b, accum))
            for b in range(left + 1, right, step)
            if b != sizes[i]
        ]
        return max([scored[i], *refined], key=_rank)


def _rank(g: Goodput) -> tuple[float, int, int]:
    return (g.goodput, -g.global_bsz, -g.config.accum_steps)


@functools.cache
def goodput_model(app: str, variant: str = "t4") -> GoodputModel:
    """The default goodput model of a bundled application and variant."""
    return GoodputModel(load_profile(app, variant))


def goodput(
    app: str, epoch: int, nodes: int, replicas: int, config: BatchConfig, variant: str = "t4"
) -> float:
    """Goodput (examples per second at the initial batch's efficiency) of ``config``."""
    return goodput_model(app, variant).evaluate(epoch, nodes, replicas, config).goodput


def best_batch(
    app: str,
    epoch: int,
    nodes: int,
    replicas: int,
    max_local_bsz: int | None = None,
    variant: str = "t4",
) -> Goodput:
    """The goodput-maximizing batch configuration (see :meth:`GoodputModel.best_batch`)."""
    return goodput_model(app, variant).best_batch(epoch, nodes, replicas, max_local_bsz)
