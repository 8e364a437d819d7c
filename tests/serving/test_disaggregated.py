"""Prefill/decode disaggregation: the KV transfer is paid once per request, every token is
still generated once, and the decode pool never prefills a transferred prompt."""

from __future__ import annotations

import math

import pytest

from dlsched.serving.config import ReplicaConfig
from dlsched.serving.disaggregated import Pool, simulate_disaggregated, transfer_seconds
from dlsched.serving.metrics import request_table
from dlsched.serving.perf.linear import LinearIterationModel
from dlsched.serving.requests import RequestSpec, RequestTrace

MODEL = LinearIterationModel(p0=0.010, p1=1e-4, p2=0.0, d0=0.020, d1=1e-3, d2=0.0)
KV = 1000  # bytes per token


def _pools(blocks: int = 1000, prefill: int = 1, decode: int = 1) -> tuple[Pool, Pool]:
    config = ReplicaConfig("vllm", blocks)
    return Pool(MODEL, config, prefill), Pool(MODEL, config, decode)


def test_one_request_pays_prefill_transfer_and_its_decode_steps() -> None:
    trace = RequestTrace.from_requests([RequestSpec(0.0, 1000, 4)])
    run = simulate_disaggregated(trace, *_pools(), KV, 1e6)  # 1 s to move 1,000 tokens
    row = request_table(run).to_pylist()[0]
    prefill = 0.010 + 1000 * 1e-4
    assert transfer_seconds(1000, KV, 1e6) == 1.0
    assert row["ttft"] == pytest.approx(prefill)
    # First decode step starts when the KV cache has arrived; three steps of 21 ms.
    assert row["e2e"] == pytest.approx(prefill + 1.0 + 3 * 0.021)
    assert row["replica"] == 1 and row["generated_tokens"] == 4


def test_every_token_once_and_memory_balanced_under_pressure() -> None:
    requests = [RequestSpec(0.05 * k, 20 + 7 * k % 90, 1 + 13 * k % 60) for k in range(60)]
    trace = RequestTrace.from_requests(requests)
    run = simulate_disaggregated(trace, *_pools(blocks=12, prefill=2, decode=2), KV, 1e9)
    log = run.log
    _, prompts, outputs = trace.arrays()
    for i in range(len(trace)):
        if log.rejected[i]:
            assert math.ceil((prompts[i] + outputs[i]) / 16) > 12
            continue
        assert log.generated[i] == outputs[i]
        assert log.first_token[i] <= log.last_token[i] <= log.finish[i]
    assert sum(log.preemptions) > 0
    assert all(p <= 12 for p in run.peak_blocks)
    assert run.final_blocks == (0,) * 4


def test_decode_pool_must_take_paged_kv_caches_and_link_positive() -> None:
    trace = RequestTrace.from_requests([RequestSpec(0.0, 10, 4)])
    prefill, _ = _pools()
    for scheduler in ("orca", "static"):
        with pytest.raises(ValueError, match=f"runs vllm or sarathi .*not '{scheduler}'"):
            simulate_disaggregated(
                trace, prefill, Pool(MODEL, ReplicaConfig(scheduler, 100), 1), KV, 1e9
            )
    with pytest.raises(ValueError, match="link bandwidth"):
        simulate_disaggregated(trace, *_pools(), KV, 0.0)
