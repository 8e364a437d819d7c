"""Every serving run reports progress as ``(done, total)``: done never decreases, never passes
total, and counts each request once (finished or rejected), whichever path serves it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dlsched.cluster.parse import resolve_cluster
from dlsched.serving.arrivals import synthetic_requests
from dlsched.serving.autoscale import Autoscaler
from dlsched.serving.cluster import ServingRun, simulate_serving
from dlsched.serving.colocated import autoscaled_serving, run_colocated
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.disaggregated import Pool, simulate_disaggregated
from dlsched.serving.log import REPORT_EVERY
from dlsched.serving.perf.linear import LinearIterationModel
from dlsched.trace.schema import Trace

MODEL = LinearIterationModel(p0=0.010, p1=1e-4, p2=0.0, d0=0.020, d1=1e-3, d2=0.0)
# 3,000 requests at 20/s on small KV memories: tens of thousands of iterations, some
# preemptions, and a few requests too long for any replica (rejected).
TRACE = synthetic_requests(20.0, count=3000, seed=3)


def _settled(run: ServingRun) -> int:
    log = run.log
    return sum(
        1 for i in range(log.n) if log.rejected[i] or log.finish[i] == log.finish[i]
    )  # NaN != NaN: never finished


def _recorder() -> tuple[list[tuple[int, int]], Callable[[int, int], None]]:
    calls: list[tuple[int, int]] = []
    return calls, lambda done, total: calls.append((done, total))


def _check(calls: list[tuple[int, int]], total: int, settled: int) -> None:
    assert calls, "a run of this size reports progress"
    dones = [d for d, _ in calls]
    assert dones == sorted(dones)
    assert {t for _, t in calls} == {total}
    assert dones[0] >= 0 and dones[-1] <= settled <= total


@pytest.mark.parametrize(
    ("scheduler", "replicas", "router"),
    [
        ("vllm", 2, "round-robin"),
        ("sarathi", 2, "least-outstanding-tokens"),
        ("static", 1, "round-robin"),
    ],
)
def test_replicas_report_requests_settled(scheduler: str, replicas: int, router: str) -> None:
    calls, report = _recorder()
    config = ReplicaConfig(scheduler, 600)
    run = simulate_serving(TRACE, MODEL, config, replicas, router, progress=report)
    assert run.log.settled == _settled(run) == len(TRACE)
    assert run.log.iterations >= REPORT_EVERY
    _check(calls, len(TRACE), run.log.settled)
    # Progress changes nothing of the run.
    again = simulate_serving(TRACE, MODEL, config, replicas, router)
    assert again.log.finish == run.log.finish


def test_disaggregated_counts_each_request_once() -> None:
    calls, report = _recorder()
    config = ReplicaConfig("vllm", 600)
    run = simulate_disaggregated(
        TRACE, Pool(MODEL, config, 1), Pool(MODEL, config, 2), 1 << 18, 50e9, progress=report
    )
    assert run.log.settled == _settled(run) == len(TRACE)
    _check(calls, len(TRACE), run.log.settled)


def test_autoscaled_and_colocated_runs_report_one_rising_count() -> None:
    scaler = Autoscaler(capacity_rps=4.0, window_s=60.0, cold_start_s=10.0)
    config = ReplicaConfig("vllm", 600)
    calls, report = _recorder()
    run, _ = autoscaled_serving(TRACE, scaler, MODEL, config, report)
    _check(calls, len(TRACE), run.log.settled)
    training = Trace.from_columns(
        {
            "job_id": [str(i) for i in range(40)],
            "submit_time": [30.0 * i for i in range(40)],
            "num_gpus": [8] * 40,
            "duration": [600.0] * 40,
        }
    )
    calls, report = _recorder()
    mixed = run_colocated(
        TRACE, training, resolve_cluster("8x8"), scaler, MODEL, config, 8, "fifo", report
    )
    jobs = mixed.cluster.jobs.num_rows
    _check(calls, jobs + len(TRACE), jobs + mixed.serving.log.settled)
