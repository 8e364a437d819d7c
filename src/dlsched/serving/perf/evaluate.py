"""How well the serving performance models predict measurements they were not fitted to.

Leave one out (the fitted models): for each deployment (model, GPU, TP) and each measured
point, fit to the deployment's other points and predict the held-out one, in three regimes —
single-prompt prefill (batch-1 points), batched prefill (batch > 1) and decode (every point).
Leave one batch size out (the linear model, as first reported): hold out every point of a
batch size at once. Roofline: the phase efficiencies are fitted to the other model's
measurements only (leave one model out), as they would be for a model without measurements.
Errors are relative: |predicted − measured| / measured.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from dlsched.serving.perf.linear import fit_linear
from dlsched.serving.perf.measured import PerfPoint
from dlsched.serving.perf.model import IterationModel, chunk_pairs
from dlsched.serving.perf.roofline import fit_efficiencies, roofline_for

K = TypeVar("K")

REGIMES = ("single prefill", "batched prefill", "decode")
"""The regimes leave-one-out errors are reported by (:func:`regime_errors`)."""


@dataclass(frozen=True)
class Prediction:
    """One measured point with both phases as predicted."""

    point: PerfPoint
    prefill_s: float
    decode_s: float

    @property
    def prefill_error(self) -> float:
        return abs(self.prefill_s - self.point.prefill_s) / self.point.prefill_s

    @property
    def decode_error(self) -> float:
        return abs(self.decode_s - self.point.decode_s) / self.point.decode_s


@dataclass(frozen=True)
class ErrorSummary:
    """Mean, median and largest relative error of each phase over ``count`` predictions."""

    count: int
    prefill_mean: float
    prefill_median: float
    prefill_max: float
    decode_mean: float
    decode_median: float
    decode_max: float


def summarize(predictions: Sequence[Prediction]) -> ErrorSummary:
    """The error figures of ``predictions`` (ValueError when there are none)."""
    if not predictions:
        raise ValueError("no prediction to summarize")
    pre = [p.prefill_error for p in predictions]
    dec = [p.decode_error for p in predictions]
    return ErrorSummary(
        len(predictions),
        statistics.fmean(pre),
        statistics.median(pre),
        max(pre),
        statistics.fmean(dec),
        statistics.median(dec),
        max(dec),
    )


@dataclass(frozen=True)
class RegimeSummary:
    """Median and largest relative error over ``count`` predictions of one regime."""

    count: int
    median: float
    worst: float


def predict(model: IterationModel, point: PerfPoint) -> Prediction:
    """``point``'s prefill (its batch at once) and mean decode step as ``model`` gives them."""
    b = point.batch
    prefill = model.iteration_time(b * point.prompt, b * chunk_pairs(point.prompt, 0), b, 0, 0)
    decode = model.iteration_time(0, 0.0, 0, b, round(point.decode_context))
    return Prediction(point, prefill, decode)


def leave_one_out(
    points: Sequence[PerfPoint], fit: Callable[[Sequence[PerfPoint]], IterationModel]
) -> list[Prediction]:
    """Every point predicted by ``fit`` of its deployment's other points."""
    out: list[Prediction] = []
    for group in _by(points, lambda p: p.group).values():
        for i, point in enumerate(group):
            out.append(predict(fit(group[:i] + group[i + 1 :]), point))
    return out


def regime_errors(predictions: Sequence[Prediction]) -> dict[str, list[float]]:
    """The relative errors of ``predictions`` by regime (:data:`REGIMES`): the prefill of
    batch-1 points, the prefill of batch > 1 points, the decode of every point."""
    out: dict[str, list[float]] = {r: [] for r in REGIMES}
    for p in predictions:
        out[REGIMES[0] if p.point.batch == 1 else REGIMES[1]].append(p.prefill_error)
        out[REGIMES[2]].append(p.decode_error)
    return out


def summarize_regimes(predictions: Sequence[Prediction]) -> dict[str, RegimeSummary]:
    """Median and worst error of each regime that ``predictions`` hold."""
    return {
        regime: RegimeSummary(len(errors), statistics.median(errors), max(errors))
        for regime, errors in regime_errors(predictions).items()
        if errors
    }


def leave_one_batch_size_out(points: Sequence[PerfPoint]) -> list[Prediction]:
    """Every point predicted by a linear model fitted without its batch size."""
    out: list[Prediction] = []
    for group in _by(points, lambda p: p.group).values():
        for batch in sorted({p.batch for p in group}):
            model = fit_linear([p for p in group if p.batch != batch])
            out += [
                Prediction(p, model.prefill_time(p), model.decode_time(p))
                for p in group
                if p.batch == batch
            ]
    return out


def roofline_leave_one_model_out(points: Sequence[PerfPoint]) -> list[Prediction]:
    """Every point predicted by the roofline with efficiencies fitted to the other models."""
    out: list[Prediction] = []
    for model, own in _by(points, lambda p: p.model).items():
        others = [p for p in points if p.model != model]
        prefill, decode = fit_efficiencies(others or own)
        for p in own:
            roof = roofline_for(p, prefill, decode)
            out.append(Prediction(p, roof.prefill_time(p), roof.decode_time(p)))
    return out


def roofline_bounds(points: Sequence[PerfPoint]) -> list[Prediction]:
    """Every point against the bare roofline (efficiency 1): a lower bound when the
    measurement is consistent with the published peaks."""
    return [
        Prediction(p, roofline_for(p).prefill_time(p), roofline_for(p).decode_time(p))
        for p in points
    ]


def _by(points: Sequence[PerfPoint], key: Callable[[PerfPoint], K]) -> dict[K, list[PerfPoint]]:
    groups: dict[K, list[PerfPoint]] = defaultdict(list)
    for p in points:
        groups[key(p)].append(p)
    return groups


def split_by_roofline(points: Sequence[PerfPoint]) -> tuple[list[PerfPoint], list[PerfPoint]]:
    """``points`` split into those at or above the roofline bound in both phases, and those
    faster than the published peaks allow (a measurement that cannot be what its columns
    say; in the Splitwise table: batch 64 at TP 2). Fits use only the first."""
    kept: list[PerfPoint] = []
    below: list[PerfPoint] = []
    for bound in roofline_bounds(points):
        p = bound.point
        consistent = bound.prefill_s <= p.prefill_s and bound.decode_s <= p.decode_s
        (kept if consistent else below).append(p)
    return kept, below
