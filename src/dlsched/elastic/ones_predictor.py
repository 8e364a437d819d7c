"""ONES's progress predictor: the fraction of its samples a job has done, as a Beta draw.

After Bian et al., SC'21: a job that has finished ``a`` epochs has done a fraction
``ρ ~ Beta(a, b)`` of the examples it needs, with ``b`` predicted from the job's features —
(examples per epoch, initial loss, epochs done, relative loss drop, current metric) — by a
small regressor trained on the jobs that already finished and refit whenever more finish.
Training rows: every finished job at (up to :data:`ROWS_PER_JOB`, evenly spaced) epochs ``k``,
target ``log b`` with ``b = k (1 − ρ_k) / ρ_k`` (the Beta whose mean is the fraction ``ρ_k``
actually done then). The paper uses a small neural network; we use scikit-learn's
``GradientBoostingRegressor`` (40 trees of depth 3, seeded), which fits in milliseconds and is
refit after every round in which jobs finish. Losses come from the metrics with
:func:`dlsched.perf.optimus.loss_from_metric`. The paper samples ``ρ`` at each use; the
caller gives one uniform quantile per job, mapped through the current Beta's inverse CDF
(:meth:`BetaProgressPredictor.rho`), so a draw kept by the caller moves only when its posterior
does (ONES keeps a running job's quantile and redraws a waiting job's every round).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import betaincinv

from dlsched.elastic.types import JobInfo
from dlsched.perf.optimus import loss_from_metric

ROWS_PER_JOB = 12
"""Epochs of one finished job used for training (evenly spaced), so the fit stays small."""


def features(job: JobInfo, epochs: int) -> list[float]:
    """The predictor's inputs for ``job`` after ``epochs`` (>= 1) finished epochs."""
    loss = loss_from_metric(job.application, job.metrics[:epochs])
    first, last = loss[0], loss[-1]
    drop = (first - last) / abs(first) if first else 0.0
    return [math.log(job.epoch_size), first, float(epochs), drop, job.metrics[epochs - 1]]


class BetaProgressPredictor:
    """Predicts and samples ``ρ`` (module docstring); untrained until :meth:`fit` saw a job."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._x: list[list[float]] = []
        self._y: list[float] = []
        self._model: Any = None
        self._cache: dict[tuple[int, int], float] = {}

    @property
    def trained(self) -> bool:
        return self._model is not None

    def add(self, job: JobInfo) -> None:
        """Record a finished job's training rows (it must have finished every epoch)."""
        total = job.samples_at_epoch[-1] if job.samples_at_epoch else 0.0
        done = len(job.samples_at_epoch)
        if total <= 0 or done < 2:
            return
        picks = sorted(
            {round(1 + i * (done - 2) / max(ROWS_PER_JOB - 1, 1)) for i in range(ROWS_PER_JOB)}
        )
        for k in picks:
            rho = job.samples_at_epoch[k - 1] / total
            if not 0 < rho < 1:
                continue
            self._x.append(features(job, k))
            self._y.append(math.log(k * (1 - rho) / rho))

    def refit(self) -> None:
        """Fit the regressor on every row recorded so far (no-op without rows)."""
        if not self._x:
            return
        try:
            from sklearn.ensemble import (  # type: ignore[import-untyped]
                GradientBoostingRegressor,
            )
        except ImportError as exc:
            raise RuntimeError(
                "the ONES progress predictor needs scikit-learn: pip install 'dlsched[elastic]'"
            ) from exc
        model = GradientBoostingRegressor(
            n_estimators=40, max_depth=3, learning_rate=0.1, random_state=self.seed
        )
        model.fit(np.asarray(self._x), np.asarray(self._y))
        self._model = model
        self._cache.clear()

    def predict_b(self, job: JobInfo) -> float | None:
        """Predicted ``b`` for ``job`` now; None before training or before its first epoch."""
        k = len(job.metrics)
        if self._model is None or k < 1:
            return None
        key = (job.index, k)
        found = self._cache.get(key)
        if found is None:
            x = np.asarray([features(job, k)])
            found = math.exp(min(max(float(self._model.predict(x)[0]), -20.0), 20.0))
            self._cache[key] = found
        return found

    def rho(self, jobs: Sequence[JobInfo], quantiles: Mapping[int, float]) -> dict[int, float]:
        """``ρ`` per job that has a prediction, by job index: the ``quantiles[index]`` quantile
        of its current ``Beta(epochs done, b)``, clipped to ``[1e-3, 1 − 1e-6]``.

        With a uniform quantile drawn once per job this is a draw from the posterior (inverse
        CDF sampling) that only moves when the posterior does, so the fitness of a schedule
        does not flip between rounds on sampling noise alone (common random numbers).
        """
        picked = [(j, self.predict_b(j)) for j in jobs]
        known = [(j, b) for j, b in picked if b is not None]
        if not known:
            return {}
        a = np.asarray([float(len(j.metrics)) for j, _ in known])
        b = np.asarray([b for _, b in known])
        u = np.asarray([quantiles[j.index] for j, _ in known])
        values = np.clip(betaincinv(a, b, u), 1e-3, 1 - 1e-6)
        return {j.index: float(v) for (j, _), v in zip(known, values, strict=True)}
