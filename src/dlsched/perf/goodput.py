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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from dlsched.perf.efficiency import LOCAL_BSZ_CAP, EfficiencyModel, efficiency_from_profile
from dlsched.perf.profiles import AppProfile, load_profile
from dlsched.perf.steptime import StepTimeModel

FloatArray = npt.NDArray[np.float64]

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
        self._var = np.array(self.efficiency.grad_var, dtype=float)
        self._sqr = np.array(self.efficiency.grad_sqr, dtype=float)
        self._grids: dict[tuple[int, int, int], _Grid] = {}
        self._points: dict[tuple[int, int, int, int], tuple[int, float, int, int, float]] = {}

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

        The grid of each ``(nodes, replicas, local limit)`` and its step times are kept by the
        model (they do not depend on the epoch), so the step model must not change under it.
        """
        lim = self.limits
        lo = lim.min_local_bsz
        hi = lim.max_local_bsz if max_local_bsz is None else min(lim.max_local_bsz, max_local_bsz)
        hi = max(hi, lo)
        grid = self._grid(nodes, replicas, hi)
        if not grid.levels:
            too_many = replicas * lo > lim.max_global_bsz
            nearest = BatchConfig(lo) if too_many else BatchConfig(hi, lim.max_accum_steps)
            return self.evaluate(epoch, nodes, replicas, nearest)
        scores = self._goodputs(epoch, grid.candidates)
        # The best grid point of every level, and the integers around it to refine with.
        picks: list[int] = []
        refine: list[tuple[int, int]] = []
        spans: list[tuple[int, int]] = []
        for start, end in grid.levels:
            i = start + int(np.argmax(scores[start:end]))
            picks.append(i)
            sizes = grid.candidates.local_bsz
            left = sizes[max(i - 1, start)]
            right = sizes[min(i + 1, end - 1)]
            step = max(1, (right - left) // _REFINE_POINTS)
            first = len(refine)
            accum = grid.candidates.accum[i]
            refine.extend((b, accum) for b in range(left + 1, right, step) if b != sizes[i])
            spans.append((first, len(refine)))
        extra = self._candidates(nodes, replicas, refine)
        extra_scores = self._goodputs(epoch, extra)
        best: tuple[float, int, int] | None = None
        chosen = BatchConfig(lo)
        for i, (first, last) in zip(picks, spans, strict=True):
            c = grid.candidates
            rank = (float(scores[i]), -c.global_bsz[i], -c.accum[i])
            config = BatchConfig(c.local_bsz[i], c.accum[i])
            for k in range(first, last):
                other = (float(extra_scores[k]), -extra.global_bsz[k], -extra.accum[k])
                if other > rank:
                    rank, config = other, BatchConfig(extra.local_bsz[k], extra.accum[k])
            if best is None or rank > best:
                best, chosen = rank, config
        return self.evaluate(epoch, nodes, replicas, chosen)

    def _grid(self, nodes: int, replicas: int, hi: int) -> _Grid:
        """The searched grid for ``replicas`` GPUs on ``nodes`` nodes, local batches up to
        ``hi``: every accumulation count whose global batches fit the limits, one level each."""
        key = (nodes, replicas, hi)
        found = self._grids.get(key)
        if found is not None:
            return found
        lim = self.limits
        points: list[tuple[int, int]] = []
        levels: list[tuple[int, int]] = []
        for s in range(lim.max_accum_steps + 1):
            per_example = replicas * (s + 1)
            b_min = max(lim.min_local_bsz, -(-lim.min_global_bsz // per_example))
            b_max = min(hi, lim.max_global_bsz // per_example)
            if b_min > b_max:
                continue
            count = _GRID_POINTS if s == 0 else _ACCUM_GRID_POINTS
            measured = {b for b in self._measured_sizes if b_min <= b <= b_max}
            grid = {round(b_min * math.pow(b_max / b_min, i / (count - 1))) for i in range(count)}
            start = len(points)
            points.extend((b, s) for b in sorted(measured | grid | {b_min, b_max}))
            levels.append((start, len(points)))
        found = _Grid(self._candidates(nodes, replicas, points), tuple(levels))
        self._grids[key] = found
        return found

    def _candidates(
        self, nodes: int, replicas: int, points: Sequence[tuple[int, int]]
    ) -> _Candidates:
        """``(local batch, accumulation steps)`` points with what scoring them needs."""
        rows = [self._point(nodes, replicas, b, s) for b, s in points]
        return _Candidates(
            local_bsz=[b for b, _ in points],
            accum=[s for _, s in points],
            global_bsz=[r[0] for r in rows],
            step_time=np.array([r[1] for r in rows], dtype=float),
            scale=np.array([r[0] for r in rows], dtype=float) / self.efficiency.initial_bsz,
            lo=np.array([r[2] for r in rows], dtype=np.intp),
            hi=np.array([r[3] for r in rows], dtype=np.intp),
            weight=np.array([r[4] for r in rows], dtype=float),
        )

    def _point(
        self, nodes: int, replicas: int, local_bsz: int, accum: int
    ) -> tuple[int, float, int, int, float]:
        """Global batch, step time and statistics position of one configuration, kept: the
        refinement asks for the same ones epoch after epoch."""
        key = (nodes, replicas, local_bsz, accum)
        found = self._points.get(key)
        if found is None:
            m = replicas * local_bsz * (accum + 1)
            t = self.step_model.iteration_time(nodes, replicas, local_bsz, accum)
            found = (m, t, *self.efficiency.position(m))
            self._points[key] = found
        return found

    def _goodputs(self, epoch: int, c: _Candidates) -> FloatArray:
        """Goodput of every candidate during ``epoch``: the arithmetic of :meth:`evaluate`
        (and :func:`~dlsched.perf.efficiency.gain_from_stats`) on arrays, so each value is
        exactly what :meth:`evaluate` gives."""
        e = self.efficiency.clamp_epoch(epoch)
        var = (1 - c.weight) * self._var[c.lo, e] + c.weight * self._var[c.hi, e]
        sqr = (1 - c.weight) * self._sqr[c.lo, e] + c.weight * self._sqr[c.hi, e]
        denominator = var / c.scale + sqr
        positive = denominator > 0
        gain = np.ones_like(denominator)
        np.divide(var + sqr, denominator, out=gain, where=positive)
        result: FloatArray = self.efficiency.initial_bsz * gain / c.step_time
        return result


@dataclass(frozen=True, slots=True)
class _Candidates:
    """Batch configurations of one (nodes, replicas) to score, in parallel lists/arrays."""

    local_bsz: list[int]
    accum: list[int]
    global_bsz: list[int]
    step_time: FloatArray
    scale: FloatArray  # global batch / M0
    lo: npt.NDArray[np.intp]  # statistics rows and weight (EfficiencyModel.position)
    hi: npt.NDArray[np.intp]
    weight: FloatArray


@dataclass(frozen=True, slots=True)
class _Grid:
    """The searched grid: candidates ordered by accumulation steps, then local batch;
    ``levels`` gives each accumulation count's ``[start, end)`` among them."""

    candidates: _Candidates
    levels: tuple[tuple[int, int], ...]


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
