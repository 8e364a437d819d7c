"""Synthetic arrivals: rates and burstiness as asked, lengths from a trace, seeded."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.serving.arrivals import Lengths, day_pattern, scale_rate, synthetic_requests
from dlsched.serving.bundled import bundled_requests_path
from dlsched.serving.readers.read import read_requests


def _gap_cv(times: np.ndarray) -> float:
    gaps = np.diff(times)
    return float(gaps.std() / gaps.mean())


def test_poisson_rate_and_cv_one() -> None:
    trace = synthetic_requests(20.0, count=20_000, seed=1)
    times, _, _ = trace.arrays()
    assert len(trace) == 20_000 and times[0] == 0.0
    assert (len(times) - 1) / times[-1] == pytest.approx(20.0, rel=0.03)
    assert _gap_cv(times) == pytest.approx(1.0, abs=0.05)


def test_gamma_is_burstier_at_the_same_rate() -> None:
    trace = synthetic_requests(5.0, duration=2000.0, process="gamma", cv=3.0, seed=2)
    times, _, _ = trace.arrays()
    assert times[-1] <= 2000.0
    assert len(trace) / 2000.0 == pytest.approx(5.0, rel=0.1)
    assert _gap_cv(times) == pytest.approx(3.0, rel=0.15)


def test_lengths_drawn_as_pairs_from_a_trace_and_seeded() -> None:
    source = read_requests(bundled_requests_path("azure_code_3000")).trace
    _, src_p, src_o = source.arrays()
    pairs = set(zip(src_p.tolist(), src_o.tolist(), strict=True))
    a = synthetic_requests(3.0, count=500, lengths=Lengths(source), seed=7)
    b = synthetic_requests(3.0, count=500, lengths=Lengths(source), seed=7)
    c = synthetic_requests(3.0, count=500, lengths=Lengths(source), seed=8)
    assert a.table.equals(b.table) and not a.table.equals(c.table)
    _, p, o = a.arrays()
    assert set(zip(p.tolist(), o.tolist(), strict=True)) <= pairs


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": 0.0, "count": 3}, "rate must be a positive"),
        ({"rate": 1.0}, "count or a duration"),
        ({"rate": 1.0, "count": 3, "duration": 4.0}, "count or a duration"),
        ({"rate": 1.0, "count": 3, "process": "weibull"}, "unknown"),
        ({"rate": 1.0, "count": 3, "process": "gamma", "cv": -1.0}, "coefficient"),
    ],
)
def test_bad_generator_arguments_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        synthetic_requests(**kwargs)  # type: ignore[arg-type]


def test_scale_rate_and_day_pattern_hit_their_rates() -> None:
    source = read_requests(bundled_requests_path("azure_conv_5000")).trace
    faster = scale_rate(source, 4.0)
    assert faster.duration() == pytest.approx(source.duration() / 4.0)
    day = day_pattern(source, span=86_400.0, mean_rate=2.0, peak_to_trough=3.0, seed=3)
    times, _, _ = day.arrays()
    assert len(day) / 86_400.0 == pytest.approx(2.0, rel=0.05)
    per_hour = np.histogram(times, bins=24, range=(0, 86_400))[0]
    assert int(np.argmax(per_hour)) in (13, 14)
    assert per_hour.max() / per_hour.min() == pytest.approx(3.0, rel=0.25)
