"""The combined estimator is the weighted mix of its parts."""

from __future__ import annotations

import pytest

from dlsched.perf.duration.combined import CombinedEstimator
from dlsched.perf.duration.history import HistoryEstimator
from dlsched.perf.duration.learned import LgbmEstimator
from dlsched.perf.duration.named_jobs import named_trace
from dlsched.perf.duration.registry import create_estimator


def lockstep(weights: tuple[float, float]) -> list[tuple[float, float, float, str]]:
    """(history, lgbm, combined, combined source) for every job of a replay in submit order."""
    trace = named_trace(800, n_users=20, seed=5)
    submit = trace.column("submit_time").to_pylist()
    duration = trace.column("duration").to_pylist()
    parts = (HistoryEstimator(), LgbmEstimator())
    mix = CombinedEstimator(history_weight=weights[0], learned_weight=weights[1])
    for est in (*parts, mix):
        est.bind(trace)
    out = []
    for row, at in enumerate(submit):
        h, learned = (p.estimate(row, at) for p in parts)
        out.append((h, learned, mix.estimate(row, at), mix.last_source))
        # Simplest valid order: each job finishes before the next is submitted.
        for est in (*parts, mix):
            est.observe(row, duration[row], at)
    return out


def test_registered_by_name() -> None:
    assert isinstance(create_estimator("combined", seed=2), CombinedEstimator)


@pytest.mark.parametrize("weights", [(0.1, 0.9), (1.0, 3.0)])
def test_weighted_mix_after_training_window(weights: tuple[float, float]) -> None:
    wh, wl = weights
    rows = lockstep(weights)
    cutoff = int(0.3 * len(rows))
    for h, learned, mixed, source in rows[cutoff:]:
        assert mixed == pytest.approx((wh * h + wl * learned) / (wh + wl), rel=1e-12)
        assert "+lgbm:" in source
    for h, _, mixed, source in rows[:cutoff]:
        assert mixed == h  # the learned part is in its warm-up
        assert source.startswith("history:") and "lgbm" not in source


def test_rejects_bad_weights() -> None:
    with pytest.raises(ValueError):
        CombinedEstimator(history_weight=-0.1)
    with pytest.raises(ValueError):
        CombinedEstimator(history_weight=0.0, learned_weight=0.0)
