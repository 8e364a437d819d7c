"""Serving performance models against the bundled Splitwise measurements."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.serving.hardware import GPUS, MODELS, kv_capacity_tokens
from dlsched.serving.perf.deployment import deployment_model
from dlsched.serving.perf.evaluate import (
    leave_one_batch_size_out,
    roofline_bounds,
    roofline_leave_one_model_out,
    split_by_roofline,
    summarize,
)
from dlsched.serving.perf.linear import fit_linear
from dlsched.serving.perf.measured import load_perf_points
from dlsched.trace.errors import TraceError


def test_model_shapes_give_published_sizes() -> None:
    llama, bloom = MODELS["llama2-70b"], MODELS["bloom-176b"]
    assert llama.kv_bytes_per_token == 327_680  # 2 x 80 x 8 x 128 x 2 bytes
    assert llama.parameters == pytest.approx(69e9, rel=0.01)
    assert bloom.parameters == pytest.approx(176e9, rel=0.01)
    assert bloom.kv_bytes_per_token == 2 * 70 * 14336 * 2


def test_kv_capacity_grows_with_tp_and_refuses_a_model_that_does_not_fit() -> None:
    llama, a100 = MODELS["llama2-70b"], GPUS["a100-80gb"]
    tp2, tp8 = kv_capacity_tokens(llama, a100, 2), kv_capacity_tokens(llama, a100, 8)
    assert 0 < tp2 < tp8
    usable = 8 * a100.memory_bytes * 0.9 - llama.weight_bytes
    assert tp8 == int(usable // llama.kv_bytes_per_token)
    with pytest.raises(ValueError, match="does not fit on 1 x a100-80gb"):
        kv_capacity_tokens(llama, a100, 1)


def test_measurements_average_runs_and_read_zero_power_as_missing() -> None:
    points = load_perf_points()
    assert len(points) == 228
    assert sum(p.runs for p in points) == 1260
    h100 = [p for p in points if p.gpu == "h100-80gb" and p.model == "llama2-70b"]
    assert h100 and all(p.average_power is None for p in h100)
    assert any(p.average_power is not None for p in points)


def test_a_bad_measurement_row_is_named_by_line(tmp_path: Path) -> None:
    bad = tmp_path / "perf.csv"
    header = (
        "model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,"
        "prompt_time,token_time,e2e_time,tensor_parallel\n"
    )
    bad.write_text(header + "m,g,512,1,128,0,0,100,-5,1,8\n")
    with pytest.raises(TraceError, match=r"perf.csv:2: token_time"):
        load_perf_points(bad)
    bad.write_text("model,hardware\nm,g\n")
    with pytest.raises(TraceError, match=r"perf.csv:1: missing columns prompt_size"):
        load_perf_points(bad)


def test_only_the_tp2_batch64_points_are_faster_than_the_roofline() -> None:
    kept, below = split_by_roofline(load_perf_points())
    assert {(p.tp, p.batch) for p in below} == {(2, 64)}
    assert len(kept) == 225
    assert all(b.prefill_s <= b.point.prefill_s for b in roofline_bounds(kept))


def test_fitted_model_predicts_held_out_batch_sizes() -> None:
    kept, _ = split_by_roofline(load_perf_points())
    errors = summarize(leave_one_batch_size_out(kept))
    assert errors.count == 225
    assert errors.decode_median < 0.05 and errors.decode_max < 0.25
    assert errors.prefill_median < 0.2 and errors.prefill_max < 1.0
    # In-sample, the fit is at least as good as out of sample.
    group = [p for p in kept if p.group == ("llama2-70b", "a100-80gb", 8)]
    model = fit_linear(group)
    in_sample = max(abs(model.decode_time(p) - p.decode_s) / p.decode_s for p in group)
    assert in_sample < 0.1


def test_roofline_with_efficiencies_from_the_other_model_is_within_a_factor_of_two() -> None:
    kept, _ = split_by_roofline(load_perf_points())
    errors = summarize(roofline_leave_one_model_out(kept))
    assert errors.prefill_median < 0.5 and errors.decode_median < 0.5


def test_iteration_time_grows_with_work_and_fitted_needs_measurements() -> None:
    model = deployment_model("llama2-70b", "a100-80gb", 8)
    assert model.iteration_time(0, 0.0, 0, 0, 0) == 0.0
    decode = model.iteration_time(0, 0.0, 0, 8, 8 * 1000)
    assert model.iteration_time(0, 0.0, 0, 16, 16 * 1000) > decode
    mixed = model.iteration_time(512, 512 * 513 / 2, 1, 8, 8 * 1000)
    assert mixed > decode and mixed > model.iteration_time(512, 512 * 513 / 2, 1, 0, 0)
    roof = deployment_model("llama2-70b", "h100-80gb", 4, "roofline")
    assert roof.iteration_time(0, 0.0, 0, 1, 100) > 0
    with pytest.raises(ValueError, match="no measurements of llama2-70b on 1 x h100-80gb"):
        deployment_model("llama2-70b", "h100-80gb", 1)
    with pytest.raises(ValueError, match="unknown GPU 'v100'"):
        deployment_model("llama2-70b", "v100", 8)
