"""Serving energy: measured power where the perf table has it, the simulator's model elsewhere,
and energy that follows the replicas' busy time."""

from __future__ import annotations

import pytest

from dlsched.serving.cluster import simulate_serving
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.energy import RATED_W, ServingPower, serving_energy, serving_power
from dlsched.serving.perf.linear import LinearIterationModel
from dlsched.serving.perf.measured import load_perf_points
from dlsched.serving.requests import RequestSpec, RequestTrace
from dlsched.sim.config import PowerConfig

MODEL = LinearIterationModel(p0=0.010, p1=1e-4, p2=0.0, d0=0.020, d1=1e-3, d2=0.0)


def test_measured_power_where_the_table_has_it_else_the_simulator_model() -> None:
    points = load_perf_points()
    measured = [
        p.average_power
        for p in points
        if p.group == ("llama2-70b", "a100-80gb", 8) and p.average_power is not None
    ]
    power = serving_power("llama2-70b", "a100-80gb", 8, points)
    assert power.source.startswith("measured")
    assert power.busy_extra_w == pytest.approx(sum(measured) / len(measured) * RATED_W["a100-80gb"])
    # The H100 rows carry no power (zeros): the simulator's per-GPU model applies.
    fallback = serving_power("llama2-70b", "h100-80gb", 8, points)
    assert fallback.busy_extra_w == PowerConfig().busy_extra_w_per_gpu
    assert fallback.idle_w == power.idle_w == PowerConfig().idle_w_per_gpu


def test_energy_is_idle_over_the_span_plus_extra_over_busy_seconds() -> None:
    # Two requests on one replica, far apart: busy for their iterations, idle between.
    trace = RequestTrace.from_requests([RequestSpec(0.0, 100, 5), RequestSpec(10.0, 100, 5)])
    run = simulate_serving(trace, MODEL, ReplicaConfig("vllm", 100))
    one = (0.010 + 100 * 1e-4) + 4 * 0.021  # prefill, then four decode steps of one request
    assert run.log.busy == pytest.approx([2 * one])
    power = ServingPower(idle_w=100.0, busy_extra_w=50.0, source="test")
    figures = serving_energy(run, power, tp=2)
    span = 10.0 + one
    assert figures["energy_j"] == pytest.approx(2 * 100.0 * span + 2 * 50.0 * 2 * one)
    assert figures["gpu_utilization"] == pytest.approx(2 * one / span)


def test_more_replicas_for_the_same_load_cost_more_idle_energy() -> None:
    trace = RequestTrace.from_requests([RequestSpec(0.5 * i, 200, 20) for i in range(40)])
    power = ServingPower(idle_w=100.0, busy_extra_w=50.0, source="test")
    config = ReplicaConfig("vllm", 1000)
    one = serving_energy(simulate_serving(trace, MODEL, config, 1), power, 8)
    four = serving_energy(simulate_serving(trace, MODEL, config, 4), power, 8)
    assert four["energy_j"] > one["energy_j"]  # type: ignore[operator]
    assert four["gpu_utilization"] < one["gpu_utilization"]  # type: ignore[operator]
