"""Transforms: pure, order-keeping, and doing what their contracts say."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dlsched.cli.main import app
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
    with_deadlines,
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
    with_deadlines(trace, 0.5, 1.5, seed=1, best_effort=0.5)
    assert trace.table is snapshot and trace.table.equals(snapshot)


@given(
    traces(),
    st.floats(0.01, 10),
    st.floats(0, 5),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.0, 0.3, 1.0]),
)
def test_with_deadlines_draws_slack_in_proportion_to_the_run_time(
    trace: Trace, low: float, extra: float, seed: int, best_effort: float
) -> None:
    high = low + extra
    out = with_deadlines(trace, low, high, seed, best_effort)
    assert with_deadlines(trace, low, high, seed, best_effort).table.equals(out.table)
    assert _ids(out) == _ids(trace) and _submits(out) == _submits(trace)
    others = [name for name in trace.table.column_names if name != "deadline"]
    assert out.table.select(others).equals(trace.table.select(others))
    for job in out.jobs():
        if job.deadline is None:
            continue
        assert job.duration is not None and job.duration > 0
        assert job.deadline > job.submit_time
        latest = job.submit_time + high * job.duration
        tolerance = 1e-12 * latest  # the sum rounds at the submit time's magnitude
        assert job.submit_time + low * job.duration - tolerance <= job.deadline
        assert job.deadline <= latest + tolerance
    if best_effort == 0.0:
        # Only a job without a run time (or one too short to move its submit time) has none.
        for job, before in zip(out.jobs(), trace.jobs(), strict=True):
            if job.deadline is None:
                short = before.submit_time + low * (before.duration or 0.0) == before.submit_time
                assert short
    if best_effort == 1.0:
        assert out.table.column("deadline").null_count == len(trace)


def test_with_deadlines_the_elasticflow_way() -> None:
    trace = Trace.from_columns(
        {
            "job_id": ["a", "b", "c", "d"],
            "submit_time": [0.0, 10.0, 20.0, 30.0],
            "num_gpus": [1, 1, 1, 1],
            "duration": [100.0, None, 0.0, 50.0],
            "deadline": [5.0, 500.0, 25.0, None],
        }
    )
    fixed = with_deadlines(trace, 1.5, 1.5, seed=0)
    # Replaced (a), none without a run time (b, c: the old ones go too), drawn for d.
    assert fixed.column("deadline").to_pylist() == [150.0, None, None, 105.0]
    drawn = with_deadlines(trace, 0.5, 1.5, seed=3).column("deadline").to_pylist()
    rng = np.random.default_rng(3)
    factors = rng.uniform(0.5, 1.5, 4)
    assert drawn == [0.0 + factors[0] * 100.0, None, None, 30.0 + factors[3] * 50.0]
    assert with_deadlines(trace, 0.5, 1.5, seed=4).column("deadline").to_pylist() != drawn


def test_with_deadlines_best_effort_share_and_same_values_for_the_rest() -> None:
    trace = synthetic_trace(2000, seed=0)
    base = with_deadlines(trace, 0.5, 1.5, seed=7).column("deadline").to_pylist()
    half = with_deadlines(trace, 0.5, 1.5, seed=7, best_effort=0.5).column("deadline").to_pylist()
    nulls = sum(value is None for value in half) - sum(value is None for value in base)
    assert 900 < nulls < 1100
    assert all(h is None or h == b for h, b in zip(half, base, strict=True))


def test_with_deadlines_empty_trace() -> None:
    empty = Trace.from_columns({"job_id": [], "submit_time": [], "num_gpus": []})
    assert len(with_deadlines(empty, 1.0, 2.0, seed=0)) == 0


@pytest.mark.parametrize(
    ("low", "high", "best_effort", "match"),
    [
        (0.0, 1.0, 0.0, "lower deadline bound must be positive"),
        (-1.0, 1.0, 0.0, "lower deadline bound must be positive"),
        (2.0, 1.0, 0.0, "below the lower one"),
        (float("nan"), 1.0, 0.0, "must be finite"),
        (1.0, float("inf"), 0.0, "must be finite"),
        (1.0, 2.0, 1.5, "within 0..1"),
        (1.0, 2.0, -0.1, "within 0..1"),
        (1.0, 2.0, float("nan"), "within 0..1"),
        (1.0, 1e300, 0.0, "beyond the limit"),
    ],
)
def test_with_deadlines_refuses_bad_arguments(
    low: float, high: float, best_effort: float, match: str
) -> None:
    trace = synthetic_trace(5, seed=0)
    with pytest.raises(ValueError, match=match):
        with_deadlines(trace, low, high, seed=0, best_effort=best_effort)


def test_trace_convert_deadlines(tmp_path: Path) -> None:
    from dlsched.trace.io import read_parquet

    source = bundled_trace_path("vc_0e4a51")
    out = tmp_path / "d.parquet"
    args = ["trace", "convert", str(source), "--out", str(out), "--deadlines", "1.5:1.5"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    jobs = list(read_parquet(out).jobs())
    assert jobs and all(
        job.deadline == job.submit_time + 1.5 * job.duration for job in jobs if job.duration
    )
    again = tmp_path / "e.parquet"
    args = ["trace", "convert", str(source), "--out", str(again), "--deadlines", "0.5:1.5"]
    result = CliRunner().invoke(app, [*args, "--best-effort", "1", "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert read_parquet(again).column("deadline").null_count == len(jobs)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--deadlines", "1.5"], "--deadlines 1.5: expected LOW:HIGH"),
        (["--deadlines", "a:b"], "--deadlines a:b: expected LOW:HIGH"),
        (["--deadlines", "0:1"], "--deadlines 0:1: expected finite bounds with 0 < LOW <= HIGH"),
        (["--deadlines", "2:1"], "--deadlines 2:1: expected finite bounds"),
        (["--deadlines", "1:inf"], "--deadlines 1:inf: expected finite bounds"),
        (["--deadlines", "1:2", "--best-effort", "1.5"], "--best-effort must be a probability"),
        (["--best-effort", "0.5"], "--best-effort is the share of jobs --deadlines leaves"),
        (["--deadlines", "1:1e300"], "--deadlines 1:1e300: job "),
    ],
)
def test_bad_deadline_options_are_exit_2_in_one_line(
    tmp_path: Path, options: list[str], expected: str
) -> None:
    out = tmp_path / "d.parquet"
    source = str(bundled_trace_path("vc_0e4a51"))
    for command in (
        ["trace", "convert", source, "--out", str(out)],
        ["simulate", "--trace", source, "--cluster", "32x8", "--out", str(tmp_path / "run")],
    ):
        result = CliRunner().invoke(app, [*command, *options])
        assert result.exit_code == 2, result.output
        assert result.output.strip().count("\n") == 0, result.output
        assert expected in result.output
        assert not out.exists() and not (tmp_path / "run").exists()


def test_simulate_records_and_replays_the_deadline_options() -> None:
    from dlsched.run_options import experiment_from
    from dlsched.runner import Experiment, load_trace

    source = str(bundled_trace_path("vc_0e4a51"))
    given = {"trace": source, "cluster": "32x8", "deadlines": "0.5:1.5", "best_effort": 0.25}
    exp = experiment_from({**given, "seed": 5})
    assert (exp.selection.deadlines, exp.selection.best_effort) == ("0.5:1.5", 0.25)
    assert Experiment.from_dict(exp.to_dict()) == exp
    trace = load_trace(exp)
    raw = read_trace(source).trace
    expected = with_deadlines(raw, 0.5, 1.5, seed=5, best_effort=0.25)
    assert trace.column("deadline").equals(expected.column("deadline"))
    with pytest.raises(ValueError, match=r"--preset fixes .* drop --deadlines"):
        experiment_from({"preset": "helios-philly", "deadlines": "1:2"})
