"""The replica simulator: exact timings on small cases (invariants: test_schedulers.py)."""

from __future__ import annotations

import dataclasses

import pytest

from dlsched.serving.cluster import simulate_serving
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.metrics import Slo, request_table, serving_summary
from dlsched.serving.perf.linear import LinearIterationModel
from dlsched.serving.requests import RequestSpec, RequestTrace

# 10 ms + 0.1 ms per prompt token; 20 ms + 1 ms per running request for a decode step.
MODEL = LinearIterationModel(p0=0.010, p1=1e-4, p2=0.0, d0=0.020, d1=1e-3, d2=0.0)


def _trace(*requests: tuple[float, int, int]) -> RequestTrace:
    return RequestTrace.from_requests([RequestSpec(a, p, o) for a, p, o in requests])


def test_one_request_costs_one_prefill_and_its_decode_steps() -> None:
    run = simulate_serving(_trace((1.0, 100, 5)), MODEL, ReplicaConfig("vllm", 100))
    table = request_table(run).to_pylist()[0]
    prefill = 0.010 + 100 * 1e-4
    assert table["ttft"] == pytest.approx(prefill)
    assert table["e2e"] == pytest.approx(prefill + 4 * 0.021)
    assert table["tbt_mean"] == pytest.approx(0.021)
    assert table["generated_tokens"] == 5


def test_static_batch_completes_together_and_pads_to_the_longest() -> None:
    trace = _trace((0.0, 100, 2), (0.0, 50, 6))
    run = simulate_serving(trace, MODEL, ReplicaConfig("static", 1000, max_batch=8))
    rows = request_table(run).to_pylist()
    prefill = 0.010 + 2 * 100 * 1e-4  # padded to the longer prompt
    assert rows[0]["ttft"] == rows[1]["ttft"] == pytest.approx(prefill)
    assert rows[0]["e2e"] == rows[1]["e2e"] == pytest.approx(prefill + 5 * 0.022)
    continuous = request_table(
        simulate_serving(trace, MODEL, ReplicaConfig("vllm", 1000))
    ).to_pylist()
    assert continuous[0]["e2e"] < rows[0]["e2e"]


def test_tight_memory_preempts_and_recomputes_yet_every_request_finishes() -> None:
    # Each request needs up to 4 blocks of 16 tokens; 6 blocks hold fewer than two at full length.
    trace = _trace(*[(0.0, 30, 30) for _ in range(4)])
    run = simulate_serving(trace, MODEL, ReplicaConfig("vllm", 6))
    summary = serving_summary(run, Slo())
    assert summary["preemptions"] > 0
    assert run.log.generated == [30] * 4
    assert max(run.peak_blocks) <= 6


@pytest.mark.parametrize("scheduler", ["vllm", "sarathi"])
def test_swap_brings_the_kv_cache_back_instead_of_recomputing(scheduler: str) -> None:
    trace = _trace(*[(0.0, 30, 30) for _ in range(4)])
    # Prefill dear (10 ms a token): recomputing a preempted request's context costs.
    model = dataclasses.replace(MODEL, p1=1e-2)

    def run(preemption: str, per_token: float) -> tuple[float, list[int], int]:
        config = ReplicaConfig(
            scheduler, 6, preemption=preemption, swap_s_per_token=per_token, chunk_tokens=64
        )
        result = simulate_serving(trace, model, config)
        assert result.log.generated == [30] * 4 and max(result.peak_blocks) <= 6
        assert result.final_blocks == (0,)
        preempted = int(sum(result.log.preemptions))
        return max(result.log.finish), result.log.preemptions, preempted

    recompute, _, recomputed = run("recompute", 0.0)
    free_swap, _, swaps = run("swap", 0.0)
    assert recomputed > 0 and swaps > 0
    # A free copy beats prefilling prompt and generated tokens again.
    assert free_swap < recompute
    # Each swap costs its context twice (out and back): a slow link makes swapping worse.
    slow, _, _ = run("swap", 0.05)
    assert slow > free_swap + 2 * swaps * 0.05 * 16


def test_swap_cost_is_the_context_over_the_link() -> None:
    # Three requests, memory for two at full length: the newest is swapped out once its
    # neighbours' decodes need its blocks, then back; its context at that moment is charged
    # both ways, so the makespan grows by exactly 2 x context x cost per token.
    trace = _trace((0.0, 16, 40), (0.0, 16, 40), (0.0, 16, 40))
    base = ReplicaConfig("vllm", 10, preemption="swap", swap_s_per_token=0.0)
    free = simulate_serving(trace, MODEL, base)
    assert sum(free.log.preemptions) == 1
    costly = simulate_serving(trace, MODEL, dataclasses.replace(base, swap_s_per_token=1e-3))
    assert costly.log.preemptions == free.log.preemptions
    victim = free.log.preemptions.index(1)
    delay = max(costly.log.finish) - max(free.log.finish)
    # The context moved is at most its prompt plus output; at least its prompt.
    assert 2 * 16 * 1e-3 <= delay <= 2 * (16 + 40) * 1e-3
    assert costly.log.generated[victim] == 40


def test_chunked_prefill_keeps_decodes_going_beside_a_long_prompt() -> None:
    trace = _trace((0.0, 10, 50), (0.2, 4000, 2))
    plain = simulate_serving(trace, MODEL, ReplicaConfig("vllm", 1000))
    chunked = simulate_serving(trace, MODEL, ReplicaConfig("sarathi", 1000, chunk_tokens=256))
    worst = [run.log.gap_percentiles((100.0,))[0] for run in (plain, chunked)]
    assert worst[0] == pytest.approx(0.010 + 4000 * 1e-4 + 0.021, rel=0.3)
    assert worst[1] is not None and worst[0] is not None and worst[1] < worst[0] / 3


def test_a_request_that_can_never_fit_is_rejected_not_looped_on() -> None:
    run = simulate_serving(
        _trace((0.0, 1000, 10), (0.0, 10, 3)), MODEL, ReplicaConfig("sarathi", 8)
    )
    assert run.log.rejected == [True, False]
    summary = serving_summary(run, Slo())
    assert summary["rejected"] == 1 and summary["served"] == 1
    assert summary["slo_attainment"] == 0.5
    assert summary["energy_j"] is None


def test_least_outstanding_tokens_steers_around_a_long_request() -> None:
    trace = _trace((0.0, 100, 2000), *[(0.1 + 0.05 * k, 100, 20) for k in range(40)])
    config = ReplicaConfig("vllm", 10_000)
    counts = {}
    for router in ("round-robin", "least-outstanding-tokens", "kv-aware"):
        run = simulate_serving(trace, MODEL, config, replicas=2, router=router)
        counts[router] = run.log.replica.count(run.log.replica[0])
        assert run.final_blocks == (0, 0)
    # Round robin gives the long request's replica half the rest; the state-aware routers
    # send it fewer while its 2,000 tokens are outstanding.
    assert counts["round-robin"] == 21
    assert counts["least-outstanding-tokens"] < 21
    with pytest.raises(ValueError, match="needs an iteration-level scheduler"):
        simulate_serving(trace, MODEL, ReplicaConfig("static", 100), 2, "kv-aware")
