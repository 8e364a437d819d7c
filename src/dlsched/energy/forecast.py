"""Forecasts of busy nodes: a direct multi-horizon LightGBM model and two naive baselines.

**Why multi-horizon.** The power rule at step ``i`` reads forecasts for steps ``i+1 … i+2F``
(up to 10 hours ahead for the Philly preset). The Helios artifact predicts each step from
features shifted by only 1 hour and then averages those predictions up to 2F steps ahead, so a
decision at step ``i`` sees data from up to ``2F − 6`` steps after ``i``. Here every forecast
for ``i + h`` is made from data up to ``i`` only: one model takes the horizon ``h`` as a feature
and its lagged features are lagged by at least ``h`` (:mod:`dlsched.energy.features`). It is
trained on a ladder of horizons (:func:`training_horizons`) and asked for every ``h`` in
``1 … 2F``.

**Target.** The change ``busy[i+h] − busy[i]`` (the forecast adds it back to ``busy[i]``).

**Training.** Rows whose target lies in the training window train; rows whose target lies in
the validation window drive early stopping (L2 loss, RMSE metric). The model is then refit on
training + validation rows with the early-stopped number of rounds, so the test forecasts learn
from the most recent month too. Rows whose target or anchor step was forward-filled over a gap
are left out. LightGBM runs with a fixed seed, ``deterministic=True``, row-wise histograms and
a fixed thread count, so a run is reproducible.

**Baselines.** Seasonal naive: the value at the same time of day on the latest day whose
value is known at issue time (yesterday for horizons up to a day). Persistence: the last
observed value, for every horizon.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dlsched.energy.features import Flags, design, feature_names
from dlsched.energy.series import STEPS_PER_DAY

if TYPE_CHECKING:
    import lightgbm


@dataclass(frozen=True)
class ForecastConfig:
    """LightGBM settings: learning rate, tree size, bagging, the round cap, early-stopping
    patience (rounds without improvement on validation), seed and threads."""

    learning_rate: float = 0.05
    num_leaves: int = 31
    min_data_in_leaf: int = 20
    bagging_fraction: float = 0.85
    max_rounds: int = 2000
    early_stopping_rounds: int = 100
    seed: int = 0
    num_threads: int = 1

    def lightgbm_params(self) -> dict[str, Any]:
        """The parameter dictionary handed to ``lightgbm.train``."""
        return {
            "objective": "regression",
            "metric": "rmse",
            "learning_rate": self.learning_rate,
            "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf,
            "bagging_fraction": self.bagging_fraction,
            "bagging_freq": 1,
            "seed": self.seed,
            "deterministic": True,
            "force_row_wise": True,
            "num_threads": self.num_threads,
            "verbose": -1,
        }


@dataclass(frozen=True)
class Split:
    """Step windows: training ``[0, train_end)``, validation ``[train_end, valid_end)``,
    test ``[valid_end, test_end)``."""

    train_end: int
    valid_end: int
    test_end: int

    def __post_init__(self) -> None:
        if not 0 < self.train_end < self.valid_end < self.test_end:
            raise ValueError(
                "the training, validation and test windows must each hold at least one step, "
                f"got ends {self.train_end}, {self.valid_end}, {self.test_end}"
            )


@dataclass(frozen=True)
class Forecaster:
    """A trained model with what it needs to forecast from the series: the busy nodes
    ``values`` from ``start_s``, the optional flags, the training horizons, the early-stopped
    number of rounds and the validation RMSE at that round (nodes)."""

    booster: lightgbm.Booster
    values: np.ndarray
    start_s: int
    flags: Flags | None
    horizons: tuple[int, ...]
    best_iteration: int
    validation_rmse: float

    @property
    def features(self) -> tuple[str, ...]:
        """The feature names, in column order."""
        return feature_names(self.flags is not None)

    def predict(self, issue: np.ndarray, max_horizon: int) -> np.ndarray:
        """``(len(issue), max_horizon)`` forecasts: column ``h-1`` of row ``j`` predicts step
        ``issue[j] + h`` from the series up to ``issue[j]``."""
        issue = np.asarray(issue, dtype=np.int64)
        rows = np.repeat(issue, max_horizon)
        hs = np.tile(np.arange(1, max_horizon + 1), len(issue))
        x, anchor = design(self.values, rows, hs, self.start_s, self.flags)
        change = np.asarray(self.booster.predict(x, num_threads=1), dtype=float)
        out: np.ndarray = (anchor + change).reshape(len(issue), max_horizon)
        return out


def training_horizons(max_horizon: int) -> tuple[int, ...]:
    """The horizons the model trains on: every step up to 1 hour, every 30 minutes up to
    3 hours, every hour beyond, and ``max_horizon`` itself (all ≤ ``max_horizon``)."""
    if max_horizon < 1:
        raise ValueError(f"the forecast horizon must be at least 1 step, got {max_horizon}")
    ladder = {*range(1, 7), *range(9, 19, 3), *range(24, max_horizon + 1, 6), max_horizon}
    return tuple(sorted(h for h in ladder if h <= max_horizon))


def train_forecaster(
    values: np.ndarray,
    filled: np.ndarray,
    start_s: int,
    split: Split,
    max_horizon: int,
    config: ForecastConfig | None = None,
    flags: Flags | None = None,
) -> Forecaster:
    """Train the model (module docstring) on the series ``values`` (busy nodes per step from
    ``start_s``; ``filled`` marks forward-filled steps) for horizons up to ``max_horizon``.

    Raises ValueError when the training or validation window has no usable row. Needs the
    optional dependency ``lightgbm`` (``pip install 'dlsched[predict]'``).
    """
    import lightgbm

    config = config or ForecastConfig()
    values = np.asarray(values, dtype=float)
    horizons = training_horizons(max_horizon)
    x_train, y_train = _rows(values, filled, start_s, horizons, 0, split.train_end, flags)
    x_valid, y_valid = _rows(
        values, filled, start_s, horizons, split.train_end, split.valid_end, flags
    )
    if len(y_train) == 0 or len(y_valid) == 0:
        raise ValueError("the training and validation windows must each hold a usable step")
    params = config.lightgbm_params()
    names = list(feature_names(flags is not None))
    train_set = lightgbm.Dataset(x_train, y_train, feature_name=names, free_raw_data=False)
    valid_set = lightgbm.Dataset(x_valid, y_valid, reference=train_set)
    first = lightgbm.train(
        params,
        train_set,
        num_boost_round=config.max_rounds,
        valid_sets=[valid_set],
        callbacks=[lightgbm.early_stopping(config.early_stopping_rounds, verbose=False)],
    )
    rounds = max(1, first.best_iteration)
    predicted = np.asarray(first.predict(x_valid, num_iteration=rounds, num_threads=1))
    valid_rmse = rmse(predicted, y_valid)
    both = lightgbm.Dataset(
        np.vstack([x_train, x_valid]), np.concatenate([y_train, y_valid]), feature_name=names
    )
    booster = lightgbm.train(params, both, num_boost_round=rounds)
    return Forecaster(booster, values, start_s, flags, horizons, rounds, valid_rmse)


def seasonal_naive(values: np.ndarray, issue: np.ndarray, max_horizon: int) -> np.ndarray:
    """``(len(issue), max_horizon)``: the forecast for ``i + h`` is the value at the same time
    of day ``⌈h / 144⌉`` days earlier (known at ``i``); NaN before the series starts."""
    target = np.asarray(issue, dtype=np.int64)[:, None] + np.arange(1, max_horizon + 1)
    days_back = -(-np.arange(1, max_horizon + 1) // STEPS_PER_DAY)
    source = target - STEPS_PER_DAY * days_back
    out = np.full(source.shape, np.nan)
    ok = source >= 0
    out[ok] = np.asarray(values, dtype=float)[source[ok]]
    return out


def persistence(values: np.ndarray, issue: np.ndarray, max_horizon: int) -> np.ndarray:
    """``(len(issue), max_horizon)``: the last observed value ``values[i]`` for every step."""
    last = np.asarray(values, dtype=float)[np.asarray(issue, dtype=np.int64)]
    return np.repeat(last[:, None], max_horizon, axis=1)


def rmse(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Root mean squared error over the pairs (NaN for none)."""
    predicted, actual = np.asarray(predicted, float), np.asarray(actual, float)
    return float(np.sqrt(np.mean((predicted - actual) ** 2))) if len(actual) else float("nan")


def smape(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Symmetric mean absolute percentage error, in percent (0 … 200):
    ``100 · mean(2 |p − a| / (|p| + |a|))``, a pair with ``p = a = 0`` counting 0 (as in the
    Helios artifact, minus its 0/0)."""
    predicted, actual = np.asarray(predicted, float), np.asarray(actual, float)
    if len(actual) == 0:
        return float("nan")
    scale = np.abs(predicted) + np.abs(actual)
    terms = np.divide(
        2 * np.abs(predicted - actual), scale, out=np.zeros_like(scale), where=scale > 0
    )
    return float(100 * np.mean(terms))


def _rows(
    values: np.ndarray,
    filled: np.ndarray,
    start_s: int,
    horizons: tuple[int, ...],
    first_target: int,
    end_target: int,
    flags: Flags | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Training rows for targets in ``[first_target, end_target)`` at every horizon whose
    issue step exists and neither the target nor the anchor was filled."""
    targets = np.repeat(np.arange(first_target, end_target), len(horizons))
    hs = np.tile(np.asarray(horizons, dtype=np.int64), end_target - first_target)
    issue = targets - hs
    keep = issue >= 0
    keep[keep] &= ~filled[targets[keep]] & ~filled[issue[keep]]
    x, anchor = design(values, issue[keep], hs[keep], start_s, flags)
    return x, values[targets[keep]] - anchor
