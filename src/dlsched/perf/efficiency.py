"""Statistical efficiency from the validation curves: how much training progress a step makes.

Progress is counted in statistically efficient steps at the *initial* batch size ``M0`` (the
smallest validated global batch). A step at global batch ``M`` (``scale = M / M0``) makes
``gain = (var + sqr) / (var/scale + sqr)`` of progress, with ``var`` the gradient variance
(normalized to ``M0``) and ``sqr`` the squared gradient norm at the current epoch; ``1 ≤ gain ≤
scale``. The per-example efficiency is ``gain / scale`` (Pollux's ``E(M) = (φ + M0)/(φ + M)``
with ``φ = M0·var/sqr``).

``var`` and ``sqr`` at a batch between two validated sizes are interpolated linearly in
``log M`` between those two curves' values at the current epoch; below the smallest or above
the largest validated size the nearest curve's values are used. The progress needed to finish
epoch ``e`` (0-based) is the smallest ``progress`` of row ``e`` over all validated sizes; a job
is in epoch ``e`` while its progress is below that, and done after its last epoch.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from dlsched.perf.profiles import AppProfile, load_profile

EPOCHS: Mapping[str, int] = MappingProxyType(
    {"bert": 2, "cifar10": 100, "deepspeech2": 80, "imagenet": 90, "ncf": 10, "yolov3": 50}
)
"""Epochs each application trains for (the Pollux artifact's settings)."""

LOCAL_BSZ_CAP: Mapping[str, int] = MappingProxyType({"yolov3": 8})
"""Largest local batch an application may use, where smaller than the profiled range."""


def gain_from_stats(grad_var: float, grad_sqr: float, scale: float) -> float:
    """``(var + sqr) / (var/scale + sqr)``: progress of one step at ``scale`` × the initial
    batch. 1 at scale 1, increasing and at most ``scale`` for ``scale ≥ 1``; 1 when both
    statistics are 0."""
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    denominator = grad_var / scale + grad_sqr
    if denominator <= 0:
        return 1.0
    return (grad_var + grad_sqr) / denominator


@dataclass(frozen=True, slots=True)
class EfficiencyModel:
    """Statistical efficiency of one application (module docstring)."""

    app: str
    batch_sizes: tuple[int, ...]  # validated global batch sizes, ascending; [0] is M0
    grad_sqr: tuple[tuple[float, ...], ...]  # grad_sqr[i][e]: at batch_sizes[i], epoch e
    grad_var: tuple[tuple[float, ...], ...]  # grad_var[i][e]: idem
    required: tuple[float, ...]  # required[e] = min over sizes of progress at the end of e

    @property
    def initial_bsz(self) -> int:
        return self.batch_sizes[0]

    @property
    def num_epochs(self) -> int:
        return len(self.required)

    @property
    def total_progress(self) -> float:
        """Progress at which the last epoch ends (the job is done)."""
        return self.required[-1]

    def epoch_of(self, progress: float) -> int:
        """The 0-based epoch a job with ``progress`` is in: the number of finished epochs
        (``num_epochs`` once done)."""
        return bisect.bisect_right(self.required, progress)

    def gain(self, epoch: int, global_bsz: float) -> float:
        """Progress per step at ``global_bsz`` during ``epoch`` (clamped to the measured
        epochs)."""
        if global_bsz <= 0:
            raise ValueError(f"global batch size must be positive, got {global_bsz}")
        var, sqr = self.stats(epoch, global_bsz)
        return gain_from_stats(var, sqr, global_bsz / self.initial_bsz)

    def efficiency(self, epoch: int, global_bsz: float) -> float:
        """Per-example efficiency ``gain / scale``, in (0, 1] for batches ≥ ``M0``."""
        return self.gain(epoch, global_bsz) * self.initial_bsz / global_bsz

    def clamp_epoch(self, epoch: int) -> int:
        """``epoch`` within the measured epochs (the row its statistics are read from)."""
        return min(max(epoch, 0), self.num_epochs - 1)

    def position(self, global_bsz: float) -> tuple[int, int, float]:
        """Where ``global_bsz`` falls among the validated sizes: ``(lo, hi, w)`` such that its
        statistics are ``(1 − w)·row[lo] + w·row[hi]`` (``w`` from log batch size; ``lo = hi``
        and ``w = 0`` outside the validated range)."""
        sizes = self.batch_sizes
        if global_bsz <= sizes[0]:
            return 0, 0, 0.0
        if global_bsz >= sizes[-1]:
            return len(sizes) - 1, len(sizes) - 1, 0.0
        hi = bisect.bisect_right(sizes, global_bsz)
        lo = hi - 1
        return lo, hi, math.log(global_bsz / sizes[lo]) / math.log(sizes[hi] / sizes[lo])

    def stats(self, epoch: int, global_bsz: float) -> tuple[float, float]:
        """(grad_var, grad_sqr) at ``epoch``, interpolated in log batch size."""
        e = self.clamp_epoch(epoch)
        lo, hi, w = self.position(global_bsz)
        var = (1 - w) * self.grad_var[lo][e] + w * self.grad_var[hi][e]
        sqr = (1 - w) * self.grad_sqr[lo][e] + w * self.grad_sqr[hi][e]
        return var, sqr


def efficiency_from_profile(profile: AppProfile) -> EfficiencyModel:
    """Build the model from a profile's validation curves, keeping the application's epochs
    (:data:`EPOCHS`, or every measured row for an application not listed)."""
    curves = profile.validation
    rows = min(len(c.progress) for c in curves)
    epochs = min(EPOCHS.get(profile.app, rows), rows)
    required = tuple(min(c.progress[e] for c in curves) for e in range(epochs))
    return EfficiencyModel(
        app=profile.app,
        batch_sizes=tuple(c.global_bsz for c in curves),
        grad_sqr=tuple(c.grad_sqr[:epochs] for c in curves),
        grad_var=tuple(c.grad_var[:epochs] for c in curves),
        required=required,
    )


@functools.cache
def efficiency_model(app: str) -> EfficiencyModel:
    """The efficiency model of a bundled application (the same for every GPU variant)."""
    return efficiency_from_profile(load_profile(app))


def epoch_of(app: str, progress: float) -> int:
    """The 0-based epoch ``app`` is in at ``progress`` (see :meth:`EfficiencyModel.epoch_of`)."""
    return efficiency_model(app).epoch_of(progress)


def gain(app: str, epoch: int, global_bsz: float) -> float:
    """Progress per step of ``app`` at ``global_bsz`` during ``epoch``."""
    return efficiency_model(app).gain(epoch, global_bsz)


def total_progress(app: str) -> float:
    """Progress ``app`` needs to finish training."""
    return efficiency_model(app).total_progress
