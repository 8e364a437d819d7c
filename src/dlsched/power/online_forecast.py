"""Forecasts of busy nodes made during a simulation, from the simulated past only.

The series is the cluster's busy nodes at every 10-minute step of simulated time. At step ``i``
the forecast for ``i+1 … i+H`` may read ``values[0 … i]`` and nothing later. Methods:

- ``lightgbm``: the multi-horizon model of :mod:`dlsched.energy.forecast`, trained on the
  steps seen so far (first 80% to train, last 20% for early stopping, then refit on both) once
  ``min_train_days`` of history exist, and retrained every ``retrain_days``. Until the first
  model exists it falls back to ``seasonal``. Given a ``pretrained`` model (trained on a
  supplied series), that model forecasts from the first step and is never retrained.
- ``seasonal``: the value at the same time on the latest day known at ``i``; ``persistence``
  where that lies before the series starts.
- ``persistence``: ``values[i]`` for every horizon.

Every forecast made is kept, so the run can report its accuracy once the actual values are
known (:meth:`OnlineForecaster.accuracy`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from dlsched.energy.forecast import (
    ForecastConfig,
    Forecaster,
    Split,
    persistence,
    rmse,
    seasonal_naive,
    smape,
    train_forecaster,
)
from dlsched.energy.series import STEPS_PER_DAY

METHODS = ("lightgbm", "seasonal", "persistence")


@dataclass(frozen=True)
class OnlineAccuracy:
    """Accuracy of the forecasts whose targets the run reached: ``pairs`` (forecast, actual)
    pairs over every horizon, RMSE in nodes, SMAPE in percent; ``model_steps`` decisions that
    used a trained LightGBM model and ``trainings`` how often it was (re)trained."""

    pairs: int
    rmse: float
    smape: float
    model_steps: int
    trainings: int


class OnlineForecaster:
    """See the module docstring. ``start_s``: Unix time of step 0 (for calendar features)."""

    def __init__(
        self,
        method: str,
        horizon: int,
        start_s: int,
        seed: int = 0,
        min_train_days: float = 2.0,
        retrain_days: float = 1.0,
        pretrained: Forecaster | None = None,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown forecaster {method!r}; known: {', '.join(METHODS)}")
        if horizon < 1:
            raise ValueError(f"forecast horizon must be at least 1 step, got {horizon}")
        if min_train_days <= 0 or retrain_days <= 0:
            raise ValueError("min_train_days and retrain_days must be positive")
        self.method = method
        self.horizon = horizon
        self.start_s = start_s
        self.config = ForecastConfig(seed=seed)
        self.min_train = max(int(min_train_days * STEPS_PER_DAY), 10)
        self.retrain = max(int(retrain_days * STEPS_PER_DAY), 1)
        self._values = np.zeros(1024)
        self._n = 0
        self._model: Forecaster | None = pretrained
        self._frozen = pretrained is not None
        self._trained_at = -1
        self.trainings = 0
        self._issued: list[tuple[int, np.ndarray, bool]] = []

    def observe(self, value: float) -> int:
        """Append the busy nodes of the next step; returns that step's index."""
        if self._n == len(self._values):
            self._values = np.concatenate([self._values, np.zeros(len(self._values))])
        self._values[self._n] = value
        self._n += 1
        return self._n - 1

    def forecast(self) -> np.ndarray:
        """Forecasts for the ``horizon`` steps after the last observed one."""
        if self._n == 0:
            raise RuntimeError("forecast() before any observation")
        i = self._n - 1
        values = self._values[: self._n]
        issue = np.array([i])
        model = self._model_for(i) if self.method == "lightgbm" else None
        if model is not None:
            out = dataclasses.replace(model, values=values).predict(issue, self.horizon)[0]
        elif self.method == "persistence":
            out = persistence(values, issue, self.horizon)[0]
        else:
            out = seasonal_naive(values, issue, self.horizon)[0]
            out = np.where(np.isnan(out), values[i], out)
        self._issued.append((i, out, model is not None))
        return np.asarray(out, dtype=float)

    def _model_for(self, i: int) -> Forecaster | None:
        if self._frozen:
            return self._model
        n = i + 1
        due = self._model is None or i - self._trained_at >= self.retrain
        if n >= self.min_train and due:
            values = self._values[:n].copy()
            train_end = int(0.8 * n)
            split = Split(train_end, n, n + 1)
            try:
                self._model = train_forecaster(
                    values, np.zeros(n, dtype=bool), self.start_s, split, self.horizon, self.config
                )
            except ValueError:
                pass  # too few usable rows yet: keep the fallback or the last model
            else:
                self._trained_at = i
                self.trainings += 1
        return self._model

    @staticmethod
    def train_on(
        values: np.ndarray, filled: np.ndarray, start_s: int, horizon: int, seed: int
    ) -> Forecaster:
        """A model trained on a whole supplied series (first 80% to train, the rest to stop
        early), for ``pretrained``."""
        n = len(values)
        split = Split(max(1, int(0.8 * n)), n, n + 1)
        return train_forecaster(
            np.asarray(values, dtype=float),
            filled,
            start_s,
            split,
            horizon,
            ForecastConfig(seed=seed),
        )

    def accuracy(self) -> OnlineAccuracy:
        """Accuracy over every issued forecast whose target step was observed."""
        predicted: list[float] = []
        actual: list[float] = []
        for i, row, _ in self._issued:
            known = min(self.horizon, self._n - 1 - i)
            if known > 0:
                predicted.extend(row[:known])
                actual.extend(self._values[i + 1 : i + 1 + known])
        p, a = np.asarray(predicted), np.asarray(actual)
        return OnlineAccuracy(
            pairs=len(a),
            rmse=rmse(p, a),
            smape=smape(p, a),
            model_steps=sum(1 for _, _, used in self._issued if used),
            trainings=self.trainings,
        )
