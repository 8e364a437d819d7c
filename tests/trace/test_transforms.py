"""Transforms: pure, order-keeping, and doing what their contracts say."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.trace import (
    Trace,
    bundled_trace_path,
    filter_vcs,
    gpu_jobs_only,
    read_trace,
    rebase,
    scale_time,
    subsample,
    synthetic_trace,
    time_window,
    window_by_dates,
)

VCS = ("a", "b", "c", None)


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    n = draw(st.integers(0, 40))
    times = st.floats(0, 1e6, allow_nan=False, allow_infinity=False)
    columns: dict[str, Any] = {
        "job_id": [f"j{i}" for i in range(n)],
        "submit_time": draw(st.lists(times, min_size=n, max_size=n)),
        "num_gpus": draw(st.lists(st.sampled_from([0, 1, 2, 8]), min_size=n, max_size=n)),
        "duration": draw(st.lists(st.one_of(st.none(), times), min_size=n, max_size=n)),
        "vc": draw(st.lists(st.sampled_from(VCS), min_size=n, max_size=n)),
    }
    origin = draw(st.one_of(st.none(), st.just(1.5e9)))
    return Trace.from_columns(columns, "drawn", origin)


def _submits(trace: Trace) -> list[float]:
    values: list[float] = trace.column("submit_time").to_pylist()
    return values


def _ids(trace: Trace) -> list[str]:
    values: list[str] = trace.column("job_id").to_pylist()
    return values


def _is_subsequence(part: list[str], whole: list[str]) -> bool:
    remaining = iter(whole)
    return all(item in remaining for item in part)


@given(traces(), st.floats(0, 1e6), st.floats(0, 1e6))
def test_time_window_is_half_open_on_submit(trace: Trace, a: float, b: float) -> None:
    start, end = min(a, b), max(a, b)
    window = time_window(trace, start, end)
    expected = [
        job_id for job_id, t in zip(_ids(trace), _submits(trace), strict=True) if start <= t < end
    ]
    assert _ids(window) == expected
    assert (window.source, window.origin_unix) == (trace.source, trace.origin_unix)


def test_time_window_rejects_reversed_bounds() -> None:
    with pytest.raises(ValueError, match="before its start"):
        time_window(synthetic_trace(3, seed=0), 10, 5)


@given(traces(), st.sets(st.sampled_from(("a", "b", "c", "z"))))
def test_filter_vcs_keeps_only_named_vcs(trace: Trace, vcs: set[str]) -> None:
    kept = filter_vcs(trace, vcs)
    assert set(kept.column("vc").to_pylist()) <= vcs
    expected = [
        i for i, vc in zip(_ids(trace), trace.column("vc").to_pylist(), strict=True) if vc in vcs
    ]
    assert _ids(kept) == expected


def test_filter_vcs_refuses_a_bare_string() -> None:
    with pytest.raises(TypeError):
        filter_vcs(synthetic_trace(3, seed=0), "abc")


@given(traces())
def test_gpu_jobs_only(trace: Trace) -> None:
    kept = gpu_jobs_only(trace)
    assert all(g >= 1 for g in kept.column("num_gpus").to_pylist())
    assert len(kept) == sum(1 for g in trace.column("num_gpus").to_pylist() if g >= 1)


@given(traces(), st.floats(0, 1), st.integers(0, 2**32 - 1))
def test_subsample_by_fraction_is_deterministic_and_ordered(
    trace: Trace, fraction: float, seed: int
) -> None:
    first = subsample(trace, fraction=fraction, seed=seed)
    again = subsample(trace, fraction=fraction, seed=seed)
    assert first.table.equals(again.table)
    assert len(first) == round(fraction * len(trace))
    assert _is_subsequence(_ids(first), _ids(trace))
    assert _submits(first) == sorted(_submits(first))


@given(traces(), st.data())
def test_subsample_by_count(trace: Trace, data: st.DataObject) -> None:
    n = data.draw(st.integers(0, len(trace)))
    kept = subsample(trace, n=n, seed=7)
    assert len(kept) == n and len(set(_ids(kept))) == n


def test_subsample_argument_errors() -> None:
    trace = synthetic_trace(10, seed=0)
    with pytest.raises(ValueError, match="exactly one"):
        subsample(trace)
    with pytest.raises(ValueError, match="exactly one"):
        subsample(trace, fraction=0.5, n=3)
    with pytest.raises(ValueError, match="cannot keep 11"):
        subsample(trace, n=11)
    with pytest.raises(ValueError, match=r"within 0\.\.1"):
        subsample(trace, fraction=1.5)


def test_subsample_seeds_differ() -> None:
    trace = synthetic_trace(1000, seed=0)
    assert _ids(subsample(trace, n=100, seed=1)) != _ids(subsample(trace, n=100, seed=2))


@given(traces())
def test_rebase_starts_at_zero_and_keeps_gaps(trace: Trace) -> None:
    based = rebase(trace)
    assert _ids(based) == _ids(trace)
    if len(trace) == 0:
        return
    before, after = np.array(_submits(trace)), np.array(_submits(based))
    assert after[0] == 0.0
    np.testing.assert_allclose(np.diff(after), np.diff(before), atol=1e-6)
    if trace.origin_unix is None:
        assert based.origin_unix is None
    else:
        assert based.origin_unix == trace.origin_unix + before[0]


@given(
    traces(),
    st.floats(0.01, 100, allow_nan=False),
    st.floats(0.01, 100, allow_nan=False),
)
def test_scale_time(trace: Trace, submit_factor: float, duration_factor: float) -> None:
    scaled = scale_time(trace, submit_factor, duration_factor)
    assert _ids(scaled) == _ids(trace)
    np.testing.assert_allclose(
        np.array(_submits(scaled)), np.array(_submits(trace)) * submit_factor
    )
    for new, old in zip(
        scaled.column("duration").to_pylist(), trace.column("duration").to_pylist(), strict=True
    ):
        assert (new is None) == (old is None)
        if old is not None:
            assert new == pytest.approx(old * duration_factor)


def test_scale_time_clears_what_no_longer_holds() -> None:
    trace = read_trace(bundled_trace_path("openb_pod_list_default_500")).trace
    assert scale_time(trace) is trace
    longer = scale_time(trace, duration_factor=2.0)
    assert longer.column("start_time").null_count == len(trace)
    assert longer.column("end_time").null_count == len(trace)
    philly = read_trace(bundled_trace_path("philly_jobs_2000")).trace
    assert scale_time(philly, duration_factor=2.0).origin_unix == philly.origin_unix
    assert scale_time(philly, submit_factor=0.5).origin_unix is None
    with pytest.raises(ValueError, match="finite and positive"):
        scale_time(philly, submit_factor=0.0)
    with pytest.raises(ValueError, match="finite and positive"):
        scale_time(philly, duration_factor=float("inf"))


def test_scale_time_scales_work_only_in_seconds() -> None:
    columns: dict[str, Any] = {
        "job_id": ["s", "i"],
        "submit_time": [0.0, 1.0],
        "num_gpus": [1, 1],
        "work": [100.0, 100.0],
        "work_unit": ["seconds", "iterations"],
    }
    scaled = scale_time(Trace.from_columns(columns), duration_factor=3.0)
    assert scaled.column("work").to_pylist() == [300.0, 100.0]


def test_window_by_dates_uses_the_wall_clock_origin() -> None:
    philly = read_trace(bundled_trace_path("philly_jobs_2000")).trace
    window = window_by_dates(philly, "2017-09-10", "2017-09-12 12:00:00")
    assert len(window) > 0
    assert philly.origin_unix is not None
    walls = np.array(_submits(window)) + philly.origin_unix
    low = datetime(2017, 9, 10, tzinfo=UTC).timestamp()
    high = datetime(2017, 9, 12, 12, tzinfo=UTC).timestamp()
    assert walls.min() >= low and walls.max() < high
    expected = [t for t in _submits(philly) if low <= t + philly.origin_unix < high]
    assert len(window) == len(expected)


def test_window_by_dates_needs_an_origin_and_valid_dates() -> None:
    with pytest.raises(ValueError, match="no wall-clock origin"):
        window_by_dates(synthetic_trace(5, seed=0), "2017-10-01", "2017-12-01")
    philly = read_trace(bundled_trace_path("philly_jobs_2000")).trace
    with pytest.raises(ValueError, match="not a time"):
        window_by_dates(philly, "2017/10/01", "2017-12-01")


@settings(max_examples=25)
@given(traces())
def test_transforms_do_not_modify_their_input(trace: Trace) -> None:
    snapshot = trace.table
    time_window(trace, 0, 10)
    filter_vcs(trace, ["a"])
    gpu_jobs_only(trace)
    subsample(trace, fraction=0.5, seed=1)
    scale_time(trace, 2.0, 2.0)
    rebase(trace)
    assert trace.table is snapshot and trace.table.equals(snapshot)
