"""The Helios default estimator: a weighted mix of the history and the learned estimators.

estimate = (w_h × history + w_l × lgbm) / (w_h + w_l), with w_h = 0.1 and w_l = 0.9 by default
(the artifact's ``alpha = 0.1``). While the learned model cannot answer (its warm-up: jobs before
its training cutoff, or no model), the history estimate is used alone, as the artifact falls
back to its naive estimate when the model has no prediction. A query counts as matched
(``last_matched``) when either part matched.
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.perf.duration.base import DurationEstimator
from dlsched.perf.duration.history import HistoryEstimator
from dlsched.perf.duration.learned import LgbmEstimator
from dlsched.trace.schema import Trace


class CombinedEstimator(DurationEstimator):
    """``history_weight`` × history + ``learned_weight`` × lgbm, normalized by their sum.

    ``train_fraction``/``train_until`` configure the learned part's training window; both parts
    take ``seed``.
    """

    name: ClassVar[str] = "combined"

    def __init__(
        self,
        seed: int = 0,
        *,
        history_weight: float = 0.1,
        learned_weight: float = 0.9,
        train_fraction: float = 0.3,
        train_until: float | None = None,
    ) -> None:
        if history_weight < 0 or learned_weight < 0 or history_weight + learned_weight <= 0:
            raise ValueError(
                f"weights must be >= 0 with a positive sum, got {history_weight}, {learned_weight}"
            )
        self.seed = seed
        self.history_weight = history_weight
        self.learned_weight = learned_weight
        self.history = HistoryEstimator(seed)
        self.learned = LgbmEstimator(seed, train_fraction=train_fraction, train_until=train_until)
        self.last_source = "warmup"
        self.last_matched = False

    def bind(self, trace: Trace) -> None:
        self.history.bind(trace)
        self.learned.bind(trace)

    def observe(self, row: int, duration: float, now: float) -> None:
        self.history.observe(row, duration, now)
        self.learned.observe(row, duration, now)

    def estimate(self, row: int, now: float) -> float:
        """The weighted mix; the history estimate alone during the learned part's warm-up."""
        h = self.history.estimate(row, now)
        learned = self.learned.estimate(row, now)
        hist_source, learned_source = self.history.last_source, self.learned.last_source
        self.last_matched = self.history.last_matched or self.learned.last_matched
        if learned_source == "warmup":
            self.last_source = f"history:{hist_source}"
            return h
        self.last_source = f"history:{hist_source}+lgbm:{learned_source}"
        wh, wl = self.history_weight, self.learned_weight
        return (wh * h + wl * learned) / (wh + wl)
