"""The LightGBM estimator: it learns, it is deterministic, it never sees a job's own duration."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import pytest

from dlsched.perf.duration.base import DurationEstimator
from dlsched.perf.duration.evaluate import evaluate, replay
from dlsched.perf.duration.features import name_template, name_tokens
from dlsched.perf.duration.learned import LgbmEstimator, training_cutoff
from dlsched.perf.duration.named_jobs import named_trace
from dlsched.perf.duration.registry import create_estimator
from dlsched.trace.schema import Trace


class GlobalMean(DurationEstimator):
    """The baseline: the mean duration of every job finished so far."""

    name: ClassVar[str] = "test-global-mean"

    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def bind(self, trace: Trace) -> None:
        self.total, self.count = 0.0, 0

    def observe(self, row: int, duration: float, now: float) -> None:
        self.total += duration
        self.count += 1

    def estimate(self, row: int, now: float) -> float:
        return self.total / self.count if self.count else 3600.0


def run(est: DurationEstimator, trace: Trace, start: float) -> list[float]:
    """Every estimate of a replay, in submit order (the rows scored from ``start``)."""
    answers: list[float] = []
    original = est.estimate

    def spy(row: int, now: float) -> float:
        answers.append(original(row, now))
        return answers[-1]

    est.estimate = spy  # type: ignore[method-assign]
    replay(trace, est, start)
    return answers


@pytest.fixture(scope="module")
def structured() -> Trace:
    return named_trace(3000, n_users=60, seed=7)


def test_registered_by_name() -> None:
    assert isinstance(create_estimator("lgbm", seed=1), LgbmEstimator)


def test_beats_global_mean_on_learnable_trace(structured: Trace) -> None:
    result = evaluate(structured, [LgbmEstimator(seed=0), GlobalMean()], warmup_fraction=0.3)
    lgbm, baseline = result.scores
    assert lgbm.queries == baseline.queries == 2100
    assert lgbm.mdape_pct is not None and baseline.mdape_pct is not None
    assert lgbm.mdape_pct < 0.6 * baseline.mdape_pct
    assert lgbm.within_2x is not None and baseline.within_2x is not None
    assert lgbm.within_2x > baseline.within_2x + 0.2
    assert lgbm.coverage is not None and lgbm.coverage > 0.9


def test_deterministic_under_seed(structured: Trace) -> None:
    start = training_cutoff(structured.column("submit_time").to_numpy(), 0.3)
    first = run(LgbmEstimator(seed=3), structured, start)
    second = run(LgbmEstimator(seed=3), structured, start)
    assert first == second


def test_own_duration_never_used(structured: Trace) -> None:
    submit = structured.column("submit_time").to_numpy()
    start = training_cutoff(submit, 0.3)
    row = int(np.searchsorted(submit, start)) + 500
    duration = structured.column("duration").to_numpy().copy()
    duration[row] *= 1000.0
    changed = Trace(
        structured.table.set_column(
            structured.table.schema.get_field_index("duration"), "duration", [duration]
        ),
        structured.source,
        structured.origin_unix,
    )
    k = row - int(np.searchsorted(submit, start))
    assert run(LgbmEstimator(), structured, start)[k] == run(LgbmEstimator(), changed, start)[k]


def test_warmup_before_cutoff(structured: Trace) -> None:
    submit = structured.column("submit_time").to_numpy()
    est = LgbmEstimator(train_until=float(submit[1000]))
    est.bind(structured)
    assert est.train_jobs == 1000
    assert est.estimate(10, float(submit[10])) == pytest.approx(6652.0)
    assert est.last_source == "warmup"
    est.observe(0, math.e**4, 0.0)
    est.observe(1, math.e**6, 0.0)
    assert est.estimate(10, float(submit[10])) == pytest.approx(math.e**5)
    est.estimate(1000, float(submit[1000]))
    assert est.last_source in ("model", "model-known")


def test_works_without_names_or_users() -> None:
    rng = np.random.default_rng(0)
    n = 1500
    vc = rng.integers(3, size=n)
    gpus = rng.choice([1, 2, 4, 8], size=n)
    duration = np.exp(5.0 + 2.0 * vc + 0.3 * np.log2(gpus) + rng.normal(0, 0.3, n)).round() + 1
    trace = Trace.from_columns(
        {
            "job_id": [str(i) for i in range(n)],
            "submit_time": np.arange(n) * 60.0,
            "num_gpus": gpus.astype(np.int32),
            "duration": duration,
            "vc": [f"vc{v}" for v in vc],
        }
    )
    result = evaluate(trace, [LgbmEstimator(), GlobalMean()])
    lgbm, baseline = result.scores
    assert lgbm.coverage == 0.0
    assert lgbm.mdape_pct is not None and baseline.mdape_pct is not None
    assert lgbm.mdape_pct < baseline.mdape_pct


def test_too_little_training_data_falls_back() -> None:
    trace = named_trace(30, n_users=3, seed=1)
    est = LgbmEstimator(min_train_jobs=50)
    est.bind(trace)
    assert est.booster is None
    assert est.estimate(29, 0.0) > 0
    assert est.last_source == "warmup"


def test_name_features() -> None:
    assert name_tokens("Train_ResNet50_lr0.01_lr") == ("train", "resnet", "50", "lr", "0", "01")
    assert name_template("train_resnet_lr0.01") == "train_resnet_lr#.#"


def test_training_cutoff() -> None:
    submit = np.array([0.0, 5.0, 5.0, 9.0])
    assert training_cutoff(submit, 0.5) == 5.0
    assert training_cutoff(submit, 0.0) == 0.0
    assert training_cutoff(submit, 1.0) == math.inf
    with pytest.raises(ValueError):
        training_cutoff(submit, 1.5)
