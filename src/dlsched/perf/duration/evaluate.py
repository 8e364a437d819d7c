"""Online evaluation of duration estimators on a trace (``dlsched predict eval``).

**Replay.** Jobs without a positive duration are dropped first (their count is reported); each
estimator is bound to the remaining trace and replayed on its own, in submit order. A job
finishes at its original ``end_time`` when the trace has one, else at submit + duration (never
before its submission). Finished jobs are kept in a heap by (finish time, row); before each job
is considered, every job that finished at or before its submit time is passed to ``observe``
in that order, with its true duration. A job enters the heap only after it was considered, so
its own duration is never known to the estimator when it is queried.

**Windows.** Jobs submitted before the evaluation start (the cutoff of
:func:`~dlsched.perf.duration.learned.training_cutoff` at ``warmup_fraction``, 0.3 by default)
are a warm-up: they are observed when they finish but not queried, and estimators that train
(``lgbm``, ``combined``) are built with that fraction as their training window. Every estimator
is scored on the same jobs: those submitted at or after the start.

**Metrics** over the scored jobs: MAE in seconds; the median absolute percentage error
``100 × |est − true| / true``; the share within 2× (``0.5 ≤ est/true ≤ 2``); queries/s = queries
over the time spent inside ``estimate``; and coverage, the share of queries an estimator answered
from what it knows about the job's own name or user rather than a global fallback. Coverage is
reported for estimators exposing ``last_matched`` after each ``estimate`` (:class:`MatchReporting`):
``history``: one of its name or user groups answered; ``lgbm``: the model answered and its
training window knew the job's user or name template; ``combined``: either part matched. The
noisy oracle has none (``None``). ``sources`` counts the ``last_source`` labels.
"""

from __future__ import annotations

import heapq
import inspect
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow.compute as pc

from dlsched.perf.duration.base import DurationEstimator
from dlsched.perf.duration.learned import training_cutoff
from dlsched.perf.duration.registry import estimators
from dlsched.trace.schema import Trace

DEFAULT_ESTIMATORS = ("history", "lgbm", "combined", "noisy-oracle")


@runtime_checkable
class MatchReporting(Protocol):
    """An estimator that says, after each ``estimate``, where the answer came from."""

    last_source: str
    last_matched: bool


@dataclass(frozen=True)
class Accuracy:
    """Error of estimates against the truth (None when there are no jobs)."""

    mae_s: float | None
    mdape_pct: float | None
    within_2x: float | None


def accuracy(truth: np.ndarray, estimate: np.ndarray) -> Accuracy:
    """MAE (s), median absolute percentage error (%) and share within 2×; truths must be > 0."""
    if len(truth) == 0:
        return Accuracy(None, None, None)
    error = np.abs(estimate - truth)
    ratio = estimate / truth
    return Accuracy(
        float(error.mean()),
        float(np.median(error / truth) * 100.0),
        float(np.mean((ratio >= 0.5) & (ratio <= 2.0))),
    )


@dataclass(frozen=True)
class EstimatorScore:
    """One estimator's results over the scored jobs (see the module docstring)."""

    estimator: str
    queries: int
    mae_s: float | None
    mdape_pct: float | None
    within_2x: float | None
    coverage: float | None
    queries_per_s: float | None
    bind_s: float
    observe_s: float
    sources: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Evaluation:
    """The evaluation of several estimators on one trace."""

    source: str
    jobs: int
    skipped_no_duration: int
    warmup_jobs: int
    eval_from_s: float | None
    scores: tuple[EstimatorScore, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def usable_jobs(trace: Trace) -> tuple[Trace, int]:
    """The trace without jobs lacking a positive duration, and how many were dropped."""
    duration = trace.column("duration")
    keep = pc.fill_null(pc.greater(duration, 0.0), False)
    kept = trace.table.filter(keep)
    return Trace(kept, trace.source, trace.origin_unix), len(trace) - kept.num_rows


def finish_times(trace: Trace) -> np.ndarray:
    """Original end time when known, else submit + duration; never before the submission."""
    submit = trace.column("submit_time").to_numpy()
    duration = trace.column("duration").to_numpy(zero_copy_only=False).astype(float)
    end = trace.column("end_time").to_numpy(zero_copy_only=False).astype(float)
    finish: np.ndarray = np.maximum(np.where(np.isnan(end), submit + duration, end), submit)
    return finish


def replay(trace: Trace, estimator: DurationEstimator, eval_from: float) -> EstimatorScore:
    """Bind ``estimator`` to ``trace`` (every job with a positive duration) and replay it
    online, scoring the jobs submitted at or after ``eval_from`` (module docstring)."""
    submit: list[float] = trace.column("submit_time").to_pylist()
    truth = trace.column("duration").to_numpy(zero_copy_only=False).astype(float)
    durations: list[float] = truth.tolist()
    finish: list[float] = finish_times(trace).tolist()
    reporter = estimator if isinstance(estimator, MatchReporting) else None
    started = time.perf_counter()
    estimator.bind(trace)
    bind_s = time.perf_counter() - started
    pending: list[tuple[float, int]] = []
    scored: list[int] = []
    estimates: list[float] = []
    matched = 0
    sources: Counter[str] = Counter()
    observe_s = query_s = 0.0
    clock = time.perf_counter
    for row, at in enumerate(submit):
        if pending and pending[0][0] <= at:
            t0 = clock()
            while pending and pending[0][0] <= at:
                done_at, done = heapq.heappop(pending)
                estimator.observe(done, durations[done], done_at)
            observe_s += clock() - t0
        if at >= eval_from:
            t0 = clock()
            value = estimator.estimate(row, at)
            query_s += clock() - t0
            scored.append(row)
            estimates.append(value)
            if reporter is not None:
                matched += reporter.last_matched
                sources[reporter.last_source] += 1
        heapq.heappush(pending, (finish[row], row))
    acc = accuracy(truth[scored], np.asarray(estimates, dtype=float))
    n = len(scored)
    return EstimatorScore(
        estimator=estimator.name,
        queries=n,
        mae_s=acc.mae_s,
        mdape_pct=acc.mdape_pct,
        within_2x=acc.within_2x,
        coverage=(matched / n if n else None) if reporter is not None else None,
        queries_per_s=n / query_s if query_s > 0 else None,
        bind_s=bind_s,
        observe_s=observe_s,
        sources=dict(sorted(sources.items())),
    )


def build_estimators(
    names: Sequence[str], seed: int = 0, warmup_fraction: float = 0.3
) -> list[DurationEstimator]:
    """Instantiate estimators by name; those with a ``train_fraction`` train on the warm-up."""
    found = estimators()
    unknown = [n for n in names if n not in found]
    if unknown:
        raise ValueError(
            f"unknown estimator(s) {', '.join(unknown)}; available: {', '.join(sorted(found))}"
        )
    built: list[DurationEstimator] = []
    for name in names:
        cls = found[name]
        kwargs: dict[str, Any] = {"seed": seed}
        if "train_fraction" in inspect.signature(cls).parameters:
            kwargs["train_fraction"] = warmup_fraction
        built.append(cls(**kwargs))
    return built


def evaluate(
    trace: Trace, chosen: Sequence[DurationEstimator], warmup_fraction: float = 0.3
) -> Evaluation:
    """Replay each estimator on ``trace`` and score it on the jobs after the warm-up."""
    usable, skipped = usable_jobs(trace)
    submit = usable.column("submit_time").to_numpy()
    eval_from = training_cutoff(submit, warmup_fraction)
    warmup = int(np.searchsorted(submit, eval_from, side="left"))
    scores = tuple(replay(usable, est, eval_from) for est in chosen)
    return Evaluation(
        source=trace.source,
        jobs=len(trace),
        skipped_no_duration=skipped,
        warmup_jobs=warmup,
        eval_from_s=eval_from if math.isfinite(eval_from) else None,
        scores=scores,
    )
