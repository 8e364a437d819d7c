"""The interpolated serving performance model: its curves, its fit to the bundled Splitwise
measurements, its held-out error and the iteration model's contract."""

from __future__ import annotations

import math
from functools import cache
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.serving.perf.deployment import deployment_model
from dlsched.serving.perf.evaluate import (
    leave_one_out,
    predict,
    split_by_roofline,
    summarize_regimes,
)
from dlsched.serving.perf.interpolate import isotonic, shaped_curve
from dlsched.serving.perf.interpolated import InterpolatedIterationModel, fit_interpolated
from dlsched.serving.perf.linear import fit_linear
from dlsched.serving.perf.measured import PerfPoint, load_perf_points
from dlsched.serving.perf.model import IterationModel, chunk_pairs

DEPLOYMENT = ("llama2-70b", "a100-80gb", 8)


@cache
def kept() -> tuple[PerfPoint, ...]:
    return tuple(split_by_roofline(load_perf_points())[0])


def own(group: tuple[str, str, int] = DEPLOYMENT) -> list[PerfPoint]:
    return [p for p in kept() if p.group == group]


@cache
def model() -> InterpolatedIterationModel:
    return fit_interpolated(own())


XS = (128.0, 256.0, 512.0, 1024.0, 4096.0)
YS = (0.065, 0.067, 0.095, 0.155, 0.650)


def test_curve_is_exact_at_its_knots_and_follows_the_form_between_and_beyond() -> None:
    curve = shaped_curve(XS, YS, 0.05, 1e-4)
    for x, y in zip(XS, YS, strict=True):
        assert curve(x) == pytest.approx(y, rel=1e-12)
    # Knots on the form itself: the curve is the form everywhere.
    on_form = shaped_curve(XS, [0.05 + 1e-4 * x for x in XS], 0.05, 1e-4)
    for x in (1.0, 64.0, 200.0, 700.0, 3000.0, 10_000.0):
        assert on_form(x) == pytest.approx(0.05 + 1e-4 * x, rel=1e-12)
    # Beyond the last knot it grows by the form's marginal cost.
    assert curve(8192.0) == pytest.approx(0.650 + 1e-4 * 4096, rel=1e-12)
    # Below the first knot it falls by the first segment's slope, floored by the form.
    low = (0.067 - 0.065) / 128
    assert curve(64.0) == pytest.approx(0.065 - low * 64, rel=1e-12)
    assert curve(1e-9) > 0


def test_curve_is_monotone_positive_and_continuous_at_the_boundaries() -> None:
    for fixed, slope in ((0.05, 1e-4), (0.0, 1e-4), (0.05, 0.0), (0.0, 0.0)):
        curve = shaped_curve(XS, YS, fixed, slope)
        grid = [0.5 * 1.01**k for k in range(1200)]
        values = [curve(x) for x in grid]
        assert all(v > 0 for v in values)
        assert all(b >= a for a, b in pairwise(values))
        for x, y in zip(XS, YS, strict=True):
            for near in (x * (1 - 1e-9), x * (1 + 1e-9)):
                assert curve(near) == pytest.approx(y, rel=1e-6)


def test_curve_refuses_knots_it_cannot_pass_through_monotonically() -> None:
    with pytest.raises(ValueError, match="non-decreasing"):
        shaped_curve([1.0, 2.0], [2.0, 1.0])
    with pytest.raises(ValueError, match="increasing"):
        shaped_curve([2.0, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="must not decrease"):
        shaped_curve([1.0, 2.0], [1.0, 2.0], -1.0)


def test_isotonic_pools_only_what_falls() -> None:
    assert isotonic([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]) == [1.0, 2.0, 3.0]
    assert isotonic([1.0, 3.0, 2.0], [1.0, 1.0, 3.0]) == [1.0, 2.25, 2.25]
    assert isotonic([3.0, 2.0, 1.0], [1.0, 1.0, 1.0]) == [2.0, 2.0, 2.0]


def test_fit_is_exact_at_the_measured_points() -> None:
    """This deployment's measurements grow with work in every regime, so the model gives
    them back — but for decode steps of one request, the fitted context term through their
    mean (13 points from 43.0 to 46.5 ms, with no trend beyond it), and that of two requests
    (44.5 ms, below one request's 44.9), pooled with them."""
    m = model()
    for p in own():
        got = predict(m, p)
        if p.batch == 1:
            same = [q for q in own() if q.batch == 1 and q.prompt == p.prompt]
            measured = sum(q.prefill_s * q.runs for q in same) / sum(q.runs for q in same)
            assert got.prefill_s == pytest.approx(measured, rel=1e-9)
        else:
            assert got.prefill_s == pytest.approx(p.prefill_s, rel=1e-9)
        if p.batch > 2:
            assert got.decode_s == pytest.approx(p.decode_s, rel=1e-9)
        else:
            assert got.decode_s == pytest.approx(p.decode_s, rel=0.04)


def test_fit_keeps_single_and_batched_prompts_apart() -> None:
    """The measured batch of 16 prompts of 512 tokens took 2.06 s; one prompt of 8,192 tokens
    1.54 s: the model gives both, not one line between them."""
    m = model()
    batch = m.iteration_time(16 * 512, 16 * chunk_pairs(512, 0), 16, 0, 0)
    single = m.iteration_time(8192, chunk_pairs(8192, 0), 1, 0, 0)
    assert batch == pytest.approx(2.0635, rel=1e-3)
    assert single == pytest.approx(1.5444, rel=1e-3)


def test_mixed_iteration_pays_the_fixed_cost_once() -> None:
    m = model()
    prefill = m.iteration_time(512, chunk_pairs(512, 0), 1, 0, 0)
    decode = m.iteration_time(0, 0.0, 0, 8, 8 * 1000)
    mixed = m.iteration_time(512, chunk_pairs(512, 0), 1, 8, 8 * 1000)
    assert max(prefill, decode) < mixed < prefill + decode
    assert mixed == pytest.approx(prefill + decode - m.shared_s)


def test_fitted_needs_single_prompts_of_two_lengths() -> None:
    one_length = [p for p in own() if p.batch > 1 or p.prompt == 512]
    with pytest.raises(ValueError, match="at least 2 prompt lengths"):
        fit_interpolated(one_length)


def test_leave_one_out_errors_meet_the_goal_in_median_and_the_measured_worst() -> None:
    """Goal: 5% median and 10% worst at every held-out measured point. The medians meet it;
    the worst points are the ends of the measured range, predicted by extrapolation (a prompt
    of 8,192 tokens from those up to 4,096), and points off their neighbours' trend (a batch
    of 16 costing more per prompt than one of 32; decode of 64 requests 34% above 32). The
    figures are bench/RESULTS.md's; the linear model before had 7.1%, 16.8% and 1.6%."""
    after = summarize_regimes(leave_one_out(kept(), fit_interpolated))
    before = summarize_regimes(leave_one_out(kept(), fit_linear))
    assert {r: s.count for r, s in after.items()} == {
        "single prefill": 156,
        "batched prefill": 69,
        "decode": 225,
    }
    for regime, s in after.items():
        assert s.median <= 0.05, regime
        assert s.median <= before[regime].median, regime
    assert after["single prefill"].worst < 0.53
    assert after["batched prefill"].worst < 0.29
    assert after["decode"].worst < 0.17
    assert after["batched prefill"].worst < before["batched prefill"].worst


def test_serve_sim_uses_the_interpolated_model() -> None:
    assert isinstance(deployment_model(*DEPLOYMENT), InterpolatedIterationModel)
    linear = deployment_model(*DEPLOYMENT, kind="linear")
    assert linear == fit_linear(own())


MODELS: dict[str, IterationModel] = {}


def models() -> dict[str, IterationModel]:
    if not MODELS:
        MODELS["fitted"] = model()
        MODELS["fitted-bloom-h100"] = fit_interpolated(own(("bloom-176b", "h100-80gb", 8)))
        MODELS["fitted-tp2"] = fit_interpolated(own(("llama2-70b", "h100-80gb", 2)))
        MODELS["linear"] = fit_linear(own())
        MODELS["roofline"] = deployment_model(*DEPLOYMENT, kind="roofline")
    return MODELS


iterations = st.tuples(
    st.integers(0, 40_000),
    st.floats(0.0, 1e9, allow_nan=False),
    st.integers(0, 200),
    st.integers(0, 300),
    st.integers(0, 3_000_000),
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["fitted", "fitted-bloom-h100", "fitted-tp2", "linear", "roofline"]),
    iterations,
    st.integers(0, 4),
    st.integers(1, 20_000),
)
def test_iteration_time_does_not_fall_when_any_argument_grows(
    name: str, args: tuple[int, float, int, int, int], which: int, more: int
) -> None:
    m = models()[name]
    tokens, pairs, prompts, seqs, context = (a + more * (i == which) for i, a in enumerate(args))
    before = m.iteration_time(*args)
    after = m.iteration_time(int(tokens), pairs, int(prompts), int(seqs), int(context))
    assert math.isfinite(before) and before >= 0
    assert after >= before


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["fitted", "fitted-tp2", "linear", "roofline"]), iterations)
def test_iteration_time_is_zero_only_for_an_empty_iteration(
    name: str, args: tuple[int, float, int, int, int]
) -> None:
    m = models()[name]
    tokens, _, _, seqs, _ = args
    assert m.iteration_time(0, 0.0, 0, 0, 0) == 0.0
    assert m.iteration_time(0, 0.0, 0, 0, args[4]) == 0.0
    assert (m.iteration_time(*args) > 0) == (tokens > 0 or seqs > 0)
