"""Forecasts of GPU-job arrivals per 10-minute bin, from the arrivals seen so far.

Lucid (Hu et al., ASPLOS'23, §4.3 "throughput predictor") decides whether to pack jobs from the
GPU-job arrivals it expects in the next bins: an interpretable additive model of lagged counts.
:class:`ArrivalForecast` is such a model, written from that description: the count of a future
bin ``t`` is a linear function, fitted by least squares on every bin seen so far, of

- the counts 1 hour, 3 hours and 1 day before ``t``;
- the mean count of the hour that ended 1 hour before ``t``, and of the 3 bins around 1 day
  before ``t``.

Every lag is at least one hour, so the next five bins are predicted from counts already seen.
The model is refitted once per simulated day; before a day and a half of history it predicts
the mean count of the last hour (persistence). Predictions are rounded to 1e-6 so a threshold
decides the same on every CPU.
"""

from __future__ import annotations

import math

import numpy as np

BIN_S = 600.0
"""Width of a bin (Lucid's 10 minutes)."""
_HOUR, _3H, _DAY = 6, 18, 144
_MIN_HISTORY = _DAY + _DAY // 2
_REFIT_EVERY = _DAY


class ArrivalForecast:
    """GPU-job arrivals per bin: :meth:`observe` each arrival in time order,
    :meth:`mean_next` for the mean predicted count of the next bins."""

    def __init__(self) -> None:
        self.counts: list[float] = []
        self._origin: float | None = None
        self._coef: np.ndarray | None = None
        self._fitted_at = 0

    def _bin(self, t: float) -> int:
        if self._origin is None:
            self._origin = math.floor(t / BIN_S) * BIN_S
        return max(0, int((t - self._origin) // BIN_S))

    def _grow(self, b: int) -> None:
        if b >= len(self.counts):
            self.counts.extend([0.0] * (b + 1 - len(self.counts)))

    def observe(self, t: float) -> None:
        """One GPU job submitted at ``t`` (not before earlier observations' bins)."""
        b = self._bin(t)
        self._grow(b)
        self.counts[b] += 1

    def _features(self, c: np.ndarray, t: np.ndarray) -> np.ndarray:
        def at(lag: int) -> np.ndarray:
            i = t - lag
            return np.where(i >= 0, c[np.clip(i, 0, None)], 0.0)

        hour = np.mean([at(_HOUR + k) for k in range(_HOUR)], axis=0)
        day = np.mean([at(_DAY + k) for k in (-1, 0, 1)], axis=0)
        return np.stack([np.ones(len(t)), at(_HOUR), at(_3H), at(_DAY), hour, day], axis=1)

    def _fit(self, seen: int) -> None:
        c = np.asarray(self.counts[:seen])
        t = np.arange(_DAY + 1, seen)
        x, y = self._features(c, t), c[t]
        # A small ridge keeps the fit defined on a quiet history (constant columns).
        gram = x.T @ x + 1e-6 * np.eye(x.shape[1])
        self._coef = np.linalg.solve(gram, x.T @ y)
        self._fitted_at = seen

    def mean_next(self, now: float, bins: int = 5) -> float:
        """The mean predicted count of the ``bins`` bins after the one holding ``now``."""
        if self._origin is None:
            return 0.0
        current = self._bin(now)
        self._grow(current)
        seen = current  # bins before the current one are complete
        if seen < _MIN_HISTORY:
            recent = self.counts[max(0, current - _HOUR) : current + 1]
            return round(sum(recent) / len(recent), 6)
        if self._coef is None or seen - self._fitted_at >= _REFIT_EVERY:
            self._fit(seen)
        assert self._coef is not None
        # Only the last day and a bit of counts feed the features of the next bins.
        first = max(0, current - _DAY - _HOUR)
        c = np.asarray(self.counts[first : current + 1] + [0.0] * bins)
        t = np.arange(current + 1 - first, current + 1 - first + bins)
        pred = np.clip(self._features(c, t) @ self._coef, 0.0, None)
        return round(float(pred.mean()), 6)
