"""Serving beside training on one cluster: replicas are jobs of the cluster simulator, and
serving-first preempts training for them through the same Plan."""

from __future__ import annotations

import pyarrow.compute as pc

from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.registry import create_policy
from dlsched.serving.arrivals import synthetic_requests
from dlsched.serving.autoscale import Autoscaler, replica_jobs
from dlsched.serving.colocated import (
    autoscaled_serving,
    measure_capacity,
    run_colocated,
    training_summary,
)
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.energy import serving_power
from dlsched.serving.metrics import Slo, serving_summary
from dlsched.serving.perf.linear import LinearIterationModel
from dlsched.serving.replica_count import replica_steps
from dlsched.serving.requests import RequestTrace
from dlsched.trace.schema import Trace

MODEL = LinearIterationModel(p0=0.010, p1=1e-4, p2=0.0, d0=0.020, d1=1e-3, d2=0.0)
CONFIG = ReplicaConfig("vllm", 2000)


def _training(jobs: int, gpus: int, hours: float) -> Trace:
    return Trace.from_columns(
        {
            "job_id": [str(i) for i in range(jobs)],
            "submit_time": [0.0] * jobs,
            "num_gpus": [gpus] * jobs,
            "duration": [hours * 3600.0] * jobs,
        }
    )


def _steps(*phases: tuple[float, float]) -> RequestTrace:
    """Evenly spaced arrivals: (rate, seconds) phases one after another; 512/128 tokens."""
    times: list[float] = []
    at = 0.0
    for rate, seconds in phases:
        times += [at + k / rate for k in range(int(rate * seconds))]
        at += seconds
    n = len(times)
    return RequestTrace.from_columns(
        {"arrival_time": times, "prompt_tokens": [512] * n, "output_tokens": [128] * n}
    )


def test_autoscaler_sizes_windows_from_the_window_before_and_keeps_replicas() -> None:
    trace = _steps((1.5, 1200.0), (4.5, 600.0))
    scaler = Autoscaler(capacity_rps=1.0, window_s=600.0, headroom=1.0, cold_start_s=60.0)
    # 1.5 req/s needs 2 replicas of 1 req/s; the last window's burst is seen only after it.
    assert scaler.plan(trace) == [2, 2, 2]
    assert Autoscaler(1.0, 600.0, headroom=2.0).plan(trace) == [3, 3, 3]
    jobs = replica_jobs([1, 2, 2, 1], scaler, tp=8).table.to_pydict()
    assert jobs["job_id"] == ["r0-w0", "r1-w1"]
    assert jobs["duration"] == [4 * 600.0 + 60.0, 2 * 600.0 + 60.0]
    assert jobs["num_gpus"] == [8, 8]


def test_serving_first_preempts_training_and_meets_the_slo_fifo_does_not() -> None:
    assert create_policy("serving-first").preemptive
    # One replica's worth of load (one sustains about 4 req/s), then two replicas' worth.
    requests = _steps((3.0, 1800.0), (7.0, 1800.0))
    scaler = Autoscaler(capacity_rps=4.0, window_s=600.0, cold_start_s=60.0)
    cluster = resolve_cluster("4x8")
    training = _training(jobs=4, gpus=8, hours=3.0)  # fills the cluster for 3 hours
    slo = Slo(ttft=2.0, tbt=0.2)
    first = run_colocated(requests, training, cluster, scaler, MODEL, CONFIG, 8, "serving-first")
    fifo = run_colocated(requests, training, cluster, scaler, MODEL, CONFIG, 8, "fifo")
    s_first, s_fifo = serving_summary(first.serving, slo), serving_summary(fifo.serving, slo)
    power = serving_power("llama2-70b", "a100-80gb", 8)
    t_first, t_fifo = training_summary(first, power), training_summary(fifo, power)
    # The reactive autoscaler lags the step by a window either way; then serving-first has
    # its replicas at once, while under FIFO they wait for training to finish.
    assert s_first["slo_attainment"] > s_fifo["slo_attainment"] + 0.2
    assert t_first["training_preemptions"] > 0 == t_fifo["training_preemptions"]
    assert t_first["training_finished"] == t_fifo["training_finished"] == 4
    assert t_first["training_avg_jct_s"] > t_fifo["training_avg_jct_s"]
    # Replica GPUs draw by utilization (A100's measured extra is below the simulator's busy
    # extra, and they idle between iterations): less than the simulation's busy-power figure.
    for t in (t_first, t_fifo):
        assert 0 < t["energy_kwh"] < t["cluster_energy_kwh"]
    # Every replica job the cluster ran is a replica instance; requests answered once each.
    jobs = first.cluster.jobs
    replicas = jobs.filter(pc.starts_with(jobs.column("job_id"), "serve:"))
    assert replicas.num_rows == len(first.instances)
    assert first.serving.log.generated == requests.arrays()[2].tolist()


def test_capacity_is_where_attainment_crosses_the_target() -> None:
    requests = synthetic_requests(1.0, count=200, seed=4)
    capacity = measure_capacity(requests, MODEL, CONFIG, Slo(ttft=0.5, tbt=0.05), requests=400)
    assert capacity > 1.0


def test_standalone_autoscaler_adds_replicas_as_load_rises_and_removes_them_as_it_falls() -> None:
    trace = _steps((1.0, 600.0), (4.0, 600.0), (1.0, 600.0), (1.0, 600.0))
    scaler = Autoscaler(capacity_rps=1.0, window_s=600.0, headroom=1.0, cold_start_s=60.0)
    # Windows see the rate of the window before: 1, 1, 4, 1 replicas.
    assert scaler.plan(trace) == [1, 1, 4, 1]
    run, held = autoscaled_serving(trace, scaler, MODEL, CONFIG)
    serving = [(start + 60.0, end) for start, end in held]
    assert replica_steps(serving) == [[60.0, 1], [1260.0, 4], [1860.0, 1], [2460.0, 0]]
    assert run.replicas == 4
    summary = serving_summary(run, Slo())
    assert summary["served"] == len(trace)
    # No replica is ready before the cold start: the first requests wait for it.
    first = run.log.first_token[0]
    assert first >= 60.0
    # Held GPU time counts the cold starts: 1 x 2400 s + 3 x 600 s, plus 60 s each.
    assert sum(end - start for start, end in held) == 2400.0 + 3 * 600.0 + 4 * 60.0
