"""The learned estimator of the Helios artifact: LightGBM regression of log duration on job
metadata (features in :mod:`dlsched.perf.duration.features`).

**Windows.** ``bind`` splits the trace at a cutoff time: ``train_until`` seconds when given,
else the submit time of the job at position ``floor(train_fraction × n)`` in submit order
(:func:`training_cutoff`; the default trains on the first 30% of the jobs). Jobs submitted
strictly before the cutoff, with a duration, are the training set: their true durations are
the history the model learns from. Their per-user/per-name statistics features are rebuilt by
replaying the training jobs' completions (original ``end_time``, else submit + duration) in
time order, so each training row sees only jobs finished before its own submission, exactly as
a query does online. (A training job still running at the cutoff is used with its final
duration, as a model trained on a prior period would be; the cutoff is a window boundary.)

**Queries.** Jobs submitted at or after the cutoff are predicted by the model, with statistics
features from the jobs the caller has reported through ``observe``. Jobs before the cutoff (the
simulator queries every job) and every job when fewer than ``min_train_jobs`` trained the model
get the warm-up answer: the geometric mean of the durations observed so far, or
``no_history_s`` when none is (``last_source`` ``"warmup"``).

**Determinism.** LightGBM runs with ``seed``, ``deterministic=True``, row-wise histograms and a
fixed ``num_threads``; predictions use one thread. LightGBM is imported in ``bind`` only, so the
estimator registry works without the optional ``predict`` dependencies.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from dlsched.perf.duration.base import DurationEstimator
from dlsched.perf.duration.features import CATEGORICAL, FeatureSpace, RunningStats
from dlsched.perf.duration.history import NO_HISTORY_S
from dlsched.trace.schema import Trace

if TYPE_CHECKING:
    import lightgbm

MODEL_SOURCES = ("model-known", "model")


def training_cutoff(submit: np.ndarray, fraction: float) -> float:
    """The submit time splitting sorted ``submit`` after its first ``floor(fraction × n)`` jobs
    (jobs submitted strictly before it train). ``inf`` when that is every job."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"train fraction must be in [0, 1], got {fraction}")
    k = math.floor(fraction * len(submit))
    return math.inf if k >= len(submit) else float(submit[k])


def log_duration(seconds: float) -> float:
    """The regression target: natural log of the duration, floored at 1 s."""
    return math.log(max(seconds, 1.0))


class LgbmEstimator(DurationEstimator):
    """LightGBM on job metadata; see the module docstring for windows and fallbacks.

    ``last_matched`` is True when the model answered and the training window knew the job's
    user or its name template (``last_source`` ``"model-known"``); a model answer for a job
    with neither is ``"model"``.
    """

    name: ClassVar[str] = "lgbm"

    def __init__(
        self,
        seed: int = 0,
        *,
        train_fraction: float = 0.3,
        train_until: float | None = None,
        num_boost_round: int = 200,
        learning_rate: float = 0.05,
        num_leaves: int = 31,
        min_data_in_leaf: int = 20,
        top_tokens: int = 32,
        num_threads: int = 1,
        min_train_jobs: int = 20,
        no_history_s: float = NO_HISTORY_S,
        min_estimate_s: float = 1.0,
    ) -> None:
        training_cutoff(np.empty(0), train_fraction)  # validates the fraction
        if num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        self.seed = seed
        self.train_fraction = train_fraction
        self.train_until = train_until
        self.params: dict[str, object] = {
            "objective": "regression",
            "learning_rate": learning_rate,
            "num_leaves": num_leaves,
            "min_data_in_leaf": min_data_in_leaf,
            "seed": seed,
            "deterministic": True,
            "force_row_wise": True,
            "num_threads": num_threads,
            "verbose": -1,
        }
        self.num_boost_round = num_boost_round
        self.top_tokens = top_tokens
        self.min_train_jobs = min_train_jobs
        self.no_history_s = no_history_s
        self.min_estimate_s = min_estimate_s
        self.cutoff = math.inf
        self.train_jobs = 0
        self.booster: lightgbm.Booster | None = None
        self.last_source = "warmup"
        self.last_matched = False

    def bind(self, trace: Trace) -> None:
        """Fit the feature vocabularies and train the model on the training window."""
        t = trace.table
        self._submit = t.column("submit_time").to_numpy()
        self._users: list[str | None] = t.column("user").to_pylist()
        self._vcs: list[str | None] = t.column("vc").to_pylist()
        self._names: list[str | None] = t.column("job_name").to_pylist()
        self._gpus: list[int] = t.column("num_gpus").to_pylist()
        self._cpus: list[float | None] = t.column("num_cpus").to_pylist()
        if self.train_until is not None:
            self.cutoff = self.train_until
        else:
            self.cutoff = training_cutoff(self._submit, self.train_fraction)
        duration = t.column("duration").to_numpy(zero_copy_only=False).astype(float)
        end = t.column("end_time").to_numpy(zero_copy_only=False).astype(float)
        train = np.flatnonzero((self._submit < self.cutoff) & ~np.isnan(duration))
        self.train_jobs = len(train)
        self.space = FeatureSpace.fit(
            [self._users[i] for i in train],
            [self._vcs[i] for i in train],
            [self._names[i] for i in train],
            trace.origin_unix,
            self.top_tokens,
        )
        self.booster = None
        if len(train) >= max(self.min_train_jobs, 1):
            features = self._training_matrix(train, duration, end)
            target = np.log(np.maximum(duration[train], 1.0))
            self.booster = self._train(features, target)
        self.stats = RunningStats()
        self._row = np.empty(self.space.width)
        self._row_2d = self._row.reshape(1, -1)
        self._log_sum = 0.0
        self._log_count = 0

    def _training_matrix(
        self, rows: np.ndarray, duration: np.ndarray, end: np.ndarray
    ) -> np.ndarray:
        submit = self._submit[rows]
        finish = np.where(np.isnan(end[rows]), submit + duration[rows], end[rows])
        finish = np.maximum(finish, submit)
        order = np.lexsort((rows, finish))  # by finish time, then row
        by_finish, finish_sorted = rows[order], finish[order]
        stats = RunningStats()
        out = np.empty((len(rows), self.space.width), dtype=np.float32)
        scratch = np.empty(self.space.width)
        done = 0
        users, names = self._users, self._names
        for k, row in enumerate(rows.tolist()):
            at = float(submit[k])
            while done < len(by_finish) and finish_sorted[done] <= at:
                j = int(by_finish[done])
                stats.add(users[j], names[j], log_duration(float(duration[j])))
                done += 1
            self._fill(scratch, row, stats)
            out[k] = scratch
        return out

    def _train(self, features: np.ndarray, target: np.ndarray) -> lightgbm.Booster:
        import lightgbm

        data = lightgbm.Dataset(
            features,
            target,
            feature_name=self.space.column_names,
            categorical_feature=list(CATEGORICAL),
            params={"verbose": -1},
        )
        return lightgbm.train(self.params, data, num_boost_round=self.num_boost_round)

    def _fill(self, out: np.ndarray, row: int, stats: RunningStats) -> None:
        self.space.fill(
            out,
            self._users[row],
            self._vcs[row],
            self._names[row],
            self._gpus[row],
            self._cpus[row],
            float(self._submit[row]),
            stats,
        )

    def observe(self, row: int, duration: float, now: float) -> None:
        """Add the finished job to the user/name statistics and the warm-up mean."""
        value = log_duration(duration)
        self.stats.add(self._users[row], self._names[row], value)
        self._log_sum += value
        self._log_count += 1

    def estimate(self, row: int, now: float) -> float:
        """The model's prediction for a job after the cutoff, else the warm-up answer."""
        if self.booster is None or self._submit[row] < self.cutoff:
            self.last_source, self.last_matched = "warmup", False
            if self._log_count == 0:
                return self.no_history_s
            return max(math.exp(self._log_sum / self._log_count), self.min_estimate_s)
        self._fill(self._row, row, self.stats)
        raw = self.booster.predict(self._row_2d, num_threads=1)
        assert isinstance(raw, np.ndarray)  # dense input gives a dense prediction
        predicted = float(raw[0])
        self.last_matched = self.space.known_identity(self._users[row], self._names[row])
        self.last_source = MODEL_SOURCES[0] if self.last_matched else MODEL_SOURCES[1]
        return max(math.exp(predicted), self.min_estimate_s)
