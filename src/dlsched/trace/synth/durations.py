"""Run times of the Helios-like generator's jobs for trial parameters, and the fits of those
parameters to the published mean and median run time and GPU-time per job.

A job's intended run time (what it would run to completion) is log-normal around its class's
median: ``log D = log m + sigma * latent + coupling * (log g - mean log g) + vc_offset``, where
``m`` and ``sigma`` belong to the job's class (debug or training, by template; see
:func:`~dlsched.trace.synth.gpus.job_level_ranks`), ``latent`` is the job's
standard-normal draw (template + variant + job parts), ``g`` its GPU count. ``D`` is clipped to
``[1, max_duration_s]``. A completed job runs ``D``; a cancelled or failed one the fraction
``fraction`` of it. Run times are whole seconds, at least 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from dlsched.trace.synth.bisect import bisect
from dlsched.trace.synth.data import ClusterTargets
from dlsched.trace.synth.states import COMPLETED

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

COUPLING_RANGE = (-1.0, 3.0)
_FIT_STEPS = 32
_FIT_ROUNDS = 4
_FIT_SETTLED = 1e-6
_SECANT_STEPS = 8
_SECANT_TOLERANCE = 1e-3
_FIRST_COUPLING_STEP = 0.25
_OFFSET_LIMIT = math.log(4.0)
_DEBUG_SHARE_RANGE = (0.0, 0.98)


@dataclass(frozen=True)
class RunTimeShape:
    """The fixed part of the run-time law: the debug class's median and log-sd, the training
    class's log-sd, and the clip ``max_duration_s``."""

    debug_median_s: float
    debug_sigma: float
    train_sigma: float
    max_duration_s: float


@dataclass(frozen=True)
class RunTimeFit:
    """Fitted run-time parameters: the share of debug jobs, the log median of training run
    times and the GPU coupling."""

    debug_share: float
    log_median: float
    coupling: float


class RunTimes:
    """Evaluates the jobs' run times for trial parameters on fixed draws.

    ``latent`` (per job), ``log_gpus`` (per job), ``class_ranks`` (per job: below the debug
    share means debug), ``vc`` (per job), ``fraction`` (per job). The
    mutable ``state`` (per job) and ``vc_offset`` (per VC) are set by the calibration; call
    :meth:`set_coupling` after changing ``vc_offset``.
    """

    def __init__(
        self,
        shape: RunTimeShape,
        latent: FloatArray,
        log_gpus: FloatArray,
        class_ranks: FloatArray,
        vc: IntArray,
        n_vcs: int,
        fraction: FloatArray,
    ) -> None:
        self.shape = shape
        self.latent = latent
        self.log_gpus = log_gpus - log_gpus.mean()
        self.class_ranks = class_ranks
        self.vc = vc
        self.fraction = fraction
        self.state: IntArray = np.zeros(latent.size, dtype=np.int64)
        self.vc_offset: FloatArray = np.zeros(n_vcs)
        self.coupling = 0.0
        self._debug_d = np.zeros(latent.size)
        self._train_d = np.zeros(latent.size)
        self.set_coupling(0.0)

    def set_coupling(self, coupling: float) -> None:
        """Fix the GPU coupling (and the current VC offsets) for the following evaluations."""
        self.coupling = coupling
        common = coupling * self.log_gpus + self.vc_offset[self.vc]
        s = self.shape
        self._debug_d = np.exp(math.log(s.debug_median_s) + s.debug_sigma * self.latent + common)
        self._train_d = np.exp(s.train_sigma * self.latent + common)

    def intended(self, fit: RunTimeFit) -> FloatArray:
        """Per job: the run time to completion under ``fit`` (at the coupling last set)."""
        debug = self.class_ranks < fit.debug_share
        train = self._train_d * math.exp(fit.log_median)
        result: FloatArray = np.clip(
            np.where(debug, self._debug_d, train), 1.0, self.shape.max_duration_s
        )
        return result

    def ran(self, intended: FloatArray) -> FloatArray:
        """Per job: the run time given its state."""
        run = np.where(self.state == COMPLETED, intended, intended * self.fraction)
        result: FloatArray = np.maximum(1.0, np.rint(run))
        return result


def fit_median_and_mean(times: RunTimes, targets: ClusterTargets, start: RunTimeFit) -> RunTimeFit:
    """Debug share and training median that put the median and mean run time on target at the
    current coupling: alternate bisections, the debug share on the median (more debug jobs,
    shorter median), then the training median on the mean, until neither moves by 1e-6 (at
    most 4 rounds)."""
    log_max = math.log(times.shape.max_duration_s)
    fit = start
    for _ in range(_FIT_ROUNDS):
        before = fit

        def median_shortfall(share: float, f: RunTimeFit = fit) -> float:
            ran = times.ran(times.intended(replace(f, debug_share=share)))
            return targets.median_run_s - float(np.median(ran))

        fit = replace(fit, debug_share=bisect(median_shortfall, *_DEBUG_SHARE_RANGE, _FIT_STEPS))

        def mean_excess(log_m: float, f: RunTimeFit = fit) -> float:
            ran = times.ran(times.intended(replace(f, log_median=log_m)))
            return float(np.mean(ran)) - targets.avg_run_s

        fit = replace(fit, log_median=bisect(mean_excess, 0.0, log_max, _FIT_STEPS))
        moved = max(
            abs(fit.debug_share - before.debug_share), abs(fit.log_median - before.log_median)
        )
        if moved < _FIT_SETTLED:
            break
    return fit


def fit_run_times(
    times: RunTimes, targets: ClusterTargets, job_gpus: IntArray, start: RunTimeFit
) -> RunTimeFit:
    """Secant steps on the GPU coupling until the GPU-time per job is within 0.1% of target
    (or after 8 steps, or at the end of the coupling range), refitting median and mean at each
    trial coupling. Leaves ``times`` set to the returned coupling."""
    target = math.log(targets.gpu_time_per_job)
    gpus = job_gpus.astype(np.float64)
    low, high = COUPLING_RANGE

    def trial(fit: RunTimeFit) -> tuple[RunTimeFit, float]:
        times.set_coupling(fit.coupling)
        fit = fit_median_and_mean(times, targets, fit)
        ran = times.ran(times.intended(fit))
        return fit, math.log(float(np.mean(ran * gpus))) - target

    best, gap = trial(start)
    previous: tuple[float, float] | None = None
    for _ in range(_SECANT_STEPS):
        if abs(gap) < _SECANT_TOLERANCE:
            break
        c = best.coupling
        if previous is None or previous[1] == gap:
            step = -math.copysign(_FIRST_COUPLING_STEP, gap)
        else:
            step = -gap * (c - previous[0]) / (gap - previous[1])
        nxt = min(max(c + step, low), high)
        if nxt == c:
            break
        previous = (c, gap)
        best, gap = trial(replace(best, coupling=nxt))
    times.set_coupling(best.coupling)
    return best


def balance_vc_load(times: RunTimes, gpu_s: FloatArray, vc_gpus: IntArray) -> None:
    """One fixed-point step towards GPU-time proportional to VC size: move each VC's log
    offset by the log ratio of its GPU share to its GPU-time share (VCs without jobs keep
    theirs), centre the offsets over the jobs and clip them to ±log 4 (factors 1/4..4)."""
    used = np.bincount(times.vc, weights=gpu_s, minlength=vc_gpus.size)
    active = used > 0
    size_share = vc_gpus[active] / vc_gpus[active].sum()
    offsets = times.vc_offset
    offsets[active] += np.log(size_share / (used[active] / used.sum()))
    offsets -= float(np.mean(offsets[times.vc]))
    np.clip(offsets, -_OFFSET_LIMIT, _OFFSET_LIMIT, out=offsets)
    times.set_coupling(times.coupling)
