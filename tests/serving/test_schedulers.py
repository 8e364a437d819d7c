"""Replica schedulers: each one's choice on small hand-made states, the replica's checks of a
plan, and invariants of every scheduler on random traces, colocated and disaggregated."""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.registry import Declared
from dlsched.serving import disaggregated
from dlsched.serving.cluster import ROUTERS, STATE_ROUTERS, simulate_serving
from dlsched.serving.config import PREEMPTIONS, SCHEDULERS, ReplicaConfig
from dlsched.serving.disaggregated import Pool, simulate_disaggregated
from dlsched.serving.log import ServingLog
from dlsched.serving.metrics import request_table
from dlsched.serving.perf.linear import LinearIterationModel
from dlsched.serving.perf.model import IterationModel
from dlsched.serving.replica import (
    ReplicaSamples,
    RequestColumns,
    decode_replica_schedulers,
    scheduler_for,
    simulate_replica,
)
from dlsched.serving.requests import RequestSpec, RequestTrace
from dlsched.serving.schedulers import REPLICA_SCHEDULERS, replica_schedulers
from dlsched.serving.schedulers.base import ReplicaScheduler, ReplicaView
from dlsched.serving.schedulers.sarathi import tbt_budget

# 10 ms + 0.1 ms per prompt token; 20 ms + 1 ms per running request for a decode step.
MODEL = LinearIterationModel(p0=0.010, p1=1e-4, p2=0.0, d0=0.020, d1=1e-3, d2=0.0)
BT = 16


def _view(
    prompts: Sequence[int],
    outputs: Sequence[int] | None = None,
    prefilling: dict[int, int] | None = None,
    waiting: Sequence[int] = (),
    decodes: int = 0,
    held: int = 0,
    free: int = 1000,
    preempted: bool = False,
    reserve: bool = False,
) -> ReplicaView:
    outs = list(outputs) if outputs is not None else [1] * len(prompts)
    view = ReplicaView(
        list(prompts),
        outs,
        [0] * len(prompts),
        (set(), set()),
        BT,
        reserve,
        dict(prefilling or {}),
        deque(waiting),
    )
    view.decodes, view.held, view.free, view.preempted = decodes, held, free, preempted
    return view


def _plan(name: str, view: ReplicaView, **config: object) -> list[tuple[int, int]]:
    return scheduler_for(ReplicaConfig(name, 1000, **config), MODEL).plan(view)  # type: ignore[arg-type]


def test_the_built_ins_are_declared_as_their_classes_say() -> None:
    found = replica_schedulers()
    assert tuple(found) == SCHEDULERS == ("vllm", "sarathi", "orca", "static")
    for declared in REPLICA_SCHEDULERS:
        assert isinstance(declared, Declared)
        cls = found[declared.name]
        assert cls.name == declared.name and cls.description == declared.description
    assert decode_replica_schedulers() == ("vllm", "sarathi")
    assert ReplicaConfig("chunked", 10).scheduler == "sarathi"
    with pytest.raises(ValueError, match="unknown scheduler 'continuous'; available: vllm"):
        ReplicaConfig("continuous", 10)


def test_vllm_spends_one_budget_on_decodes_then_the_prompt_part_way_then_waiting_ones() -> None:
    # 3 decodes take 3 of 16 tokens; request 0 has 6 of its 10 left; request 1 gets the rest.
    view = _view([10, 20, 30], prefilling={0: 4}, waiting=[1, 2], decodes=3, held=4)
    assert _plan("vllm", view, max_batched_tokens=16, max_seqs=8) == [(0, 6), (1, 7)]
    # A step that preempted admits nothing new.
    view.preempted = True
    assert _plan("vllm", view, max_batched_tokens=16, max_seqs=8) == [(0, 6)]
    # max_num_seqs, and the first waiting request whose blocks do not fit, stop the queue.
    view.preempted = False
    assert _plan("vllm", view, max_batched_tokens=16, max_seqs=4) == [(0, 6)]
    view.free = 1  # request 1 needs 2 blocks of 16 tokens
    assert _plan("vllm", view, max_batched_tokens=16, max_seqs=8) == [(0, 6)]
    # Decodes alone fill the budget: no prompt token this iteration.
    full = _view([10, 20], waiting=[1], decodes=16, held=16)
    assert _plan("vllm", full, max_batched_tokens=16, max_seqs=16) == []


def test_vllm_without_chunking_runs_prompts_whole_or_not_at_all() -> None:
    view = _view([5, 9, 30], waiting=[0, 1, 2], decodes=2)
    # 14 tokens left: prompt 0 (5) fits, prompt 1 (9) fits exactly, prompt 2 waits whole.
    assert _plan("vllm", view, max_batched_tokens=16, max_seqs=8, chunked_prefill=False) == [
        (0, 5),
        (1, 9),
    ]
    # A prompt longer than the whole budget runs alone beside the decodes.
    alone = _view([30, 5], waiting=[0, 1], decodes=2)
    assert _plan("vllm", alone, max_batched_tokens=16, max_seqs=8, chunked_prefill=False) == [
        (0, 30)
    ]


def test_sarathi_derives_its_budget_from_the_tbt_target() -> None:
    # One chunk of τ tokens takes 10 ms + 0.1 ms x τ: 61.25 ms holds 512 tokens, not 513.
    assert tbt_budget(MODEL, 0.06125) == 512
    scheduler = scheduler_for(ReplicaConfig("sarathi", 100, tbt_target=0.06125), MODEL)
    assert scheduler.budget == 512
    assert scheduler_for(ReplicaConfig("sarathi", 100, chunk_tokens=64), MODEL).budget == 64
    with pytest.raises(ValueError, match="below an iteration of 2 prompt tokens"):
        tbt_budget(MODEL, 0.005)
    # Decodes first, then the chunks; it keeps admitting after a preemption (unlike vLLM).
    view = _view([100, 100], waiting=[0, 1], decodes=4, preempted=True)
    assert _plan("sarathi", view, chunk_tokens=64) == [(0, 60)]
    view.prefilling[0] = 60
    view.waiting.popleft()
    view.held = 1
    assert _plan("sarathi", view, chunk_tokens=64) == [(0, 40), (1, 20)]


def test_orca_takes_whole_prompts_reserving_their_output_up_to_its_batch_size() -> None:
    # Prompt and output blocks: 0 needs 2 (20 + 12 tokens), 1 needs 3, 2 needs 1.
    view = _view([20, 40, 8], outputs=[12, 8, 2], waiting=[0, 1, 2], decodes=50, reserve=True)
    view.free = 5
    assert _plan("orca", view, max_seqs=8) == [(0, 20), (1, 40)]
    view.free = 4  # request 1's 3 blocks do not fit beside 0's: the queue stops there
    assert _plan("orca", view, max_seqs=8) == [(0, 20)]
    view.free, view.held = 100, 7
    assert _plan("orca", view, max_seqs=8) == [(0, 20)]


def test_prefill_and_decode_tokens_of_different_requests_share_an_iteration() -> None:
    trace = [(0.0, 10, 50), (0.2, 4000, 2)]
    for name, mixed in (("vllm", True), ("orca", True), ("sarathi", True)):
        seen: list[tuple[int, int]] = []
        _serve(name, trace, 1000, observe=lambda *it, out=seen: out.append((it[1], it[3])))
        assert any(p > 0 and d > 0 for p, d in seen) is mixed, name
    # Sarathi's 512-token budget splits the 4,000-token prompt across iterations: no gap of a
    # running request is a whole prompt long, while vLLM's 8,192-token budget runs it at once.
    worst = {}
    for name in ("vllm", "sarathi"):
        log, _ = _serve(name, trace, 1000)
        worst[name] = log.gap_percentiles((100.0,))[0]
    assert worst["vllm"] == pytest.approx(0.020 + 4000 * 1e-4 + 1e-3)
    assert worst["sarathi"] is not None and worst["sarathi"] < 0.1


def test_the_newest_request_is_preempted_and_recomputed_when_blocks_run_out() -> None:
    # Three requests of 16 + 40 tokens, 8 blocks: the third admitted is the one preempted.
    log, (peak, final) = _serve("vllm", [(0.0, 16, 40), (0.0, 16, 40), (0.0, 16, 40)], 8)
    assert log.preemptions == [0, 0, 1] or log.preemptions == [0, 0, 2]
    assert log.generated == [40] * 3 and peak <= 8 and final == 0
    # Orca reserves prompt and output: it waits instead of preempting.
    log, (peak, final) = _serve("orca", [(0.0, 16, 40), (0.0, 16, 40), (0.0, 16, 40)], 8)
    assert log.preemptions == [0, 0, 0] and log.generated == [40] * 3 and peak <= 8


class _Greedy(ReplicaScheduler):
    name = "greedy"
    description = "takes the second waiting request first"

    def plan(self, view: ReplicaView) -> list[tuple[int, int]]:
        ready = [i for i in view.waiting if view.context(i)]
        return [(ready[-1], 1)] if len(ready) > 1 else []


def test_the_replica_refuses_a_plan_that_breaks_the_queue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        "dlsched.serving.replica.scheduler_for",
        lambda config, model: _Greedy(config, model),
    )
    with pytest.raises(RuntimeError, match="'greedy' took request 1, not the first waiting"):
        _serve("vllm", [(0.0, 10, 2), (0.0, 10, 2)], 100)


def _serve(
    name: str,
    requests: Sequence[tuple[float, int, int]],
    blocks: int,
    observe: object = None,
    **config: object,
) -> tuple[ServingLog, tuple[int, int]]:
    columns = RequestColumns(*(list(c) for c in zip(*requests, strict=True)))
    log = ServingLog(len(requests))
    result = simulate_replica(
        0,
        list(range(len(requests))),
        columns,
        ReplicaConfig(name, blocks, **config),  # type: ignore[arg-type]
        MODEL,
        log,
        ReplicaSamples(),
        observe=observe,  # type: ignore[arg-type]
    )
    return log, result


requests_strategy = st.lists(
    st.tuples(st.floats(0, 5, allow_nan=False), st.integers(1, 200), st.integers(1, 120)),
    min_size=1,
    max_size=40,
)


def _config(
    scheduler: str, blocks: int, budget: int, max_seqs: int, preemption: str, chunked: bool
) -> ReplicaConfig:
    preempts = replica_schedulers()[scheduler].preempts
    return ReplicaConfig(
        scheduler,
        blocks,
        chunk_tokens=max(budget, 2),
        max_batched_tokens=max(budget, max_seqs),
        chunked_prefill=chunked,
        max_seqs=max_seqs,
        max_batch=max_seqs,
        preemption=preemption if preempts else "recompute",
        swap_s_per_token=1e-4,
    )


class _Checker:
    """Checks every iteration of replicas of one config against its limits."""

    def __init__(self, config: ReplicaConfig, model: IterationModel) -> None:
        self.config = config
        self.budget = scheduler_for(config, model).budget
        self.iterations = 0

    def __call__(
        self, now: float, prefill: int, seqs: int, decodes: int, used: int, held: int
    ) -> None:
        c = self.config
        self.iterations += 1
        assert 0 <= used <= c.kv_blocks  # KV memory never over-committed
        assert held <= c.max_seqs
        assert (prefill > 0) == (seqs > 0) and prefill + decodes > 0
        if self.budget is None:
            return
        alone = c.scheduler == "vllm" and not c.chunked_prefill and seqs == 1
        if prefill and not alone:
            assert decodes + prefill <= self.budget  # the token budget holds


def _check_outcome(trace: RequestTrace, log: ServingLog, blocks: int, split: bool = False) -> None:
    """Every request answered once with its tokens, or rejected for never fitting (``split``:
    disaggregated, where the prefill pool may have answered the first token of a request
    the decode pool then rejects)."""
    arrival, prompts, outputs = trace.arrays()
    for i in range(len(trace)):
        fits = math.ceil((prompts[i] + outputs[i]) / 16) <= blocks
        assert log.rejected[i] == (not fits)  # rejected with a reason: it can never fit
        if not fits:
            assert math.isnan(log.finish[i]) and log.generated[i] <= (1 if split else 0)
            continue
        # Answered once, with exactly its tokens, and in order in time.
        assert log.generated[i] == outputs[i]
        assert arrival[i] <= log.first_token[i] <= log.last_token[i] <= log.finish[i]
    assert log.settled == len(trace)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=requests_strategy,
    scheduler=st.sampled_from(SCHEDULERS),
    blocks=st.integers(4, 60),
    replicas=st.integers(1, 3),
    budget=st.integers(2, 64),
    max_seqs=st.integers(1, 8),
    router=st.sampled_from(ROUTERS),
    preemption=st.sampled_from(PREEMPTIONS),
    chunked=st.booleans(),
)
def test_invariants_colocated(
    requests: list[tuple[float, int, int]],
    scheduler: str,
    blocks: int,
    replicas: int,
    budget: int,
    max_seqs: int,
    router: str,
    preemption: str,
    chunked: bool,
) -> None:
    if scheduler == "static" and router in STATE_ROUTERS:
        router = "random"
    config = _config(scheduler, blocks, budget, max_seqs, preemption, chunked)
    trace = RequestTrace.from_requests([RequestSpec(a, p, o) for a, p, o in requests])
    check = _Checker(config, MODEL)
    if router in STATE_ROUTERS:
        run = simulate_serving(trace, MODEL, config, replicas=replicas, router=router, seed=3)
    else:
        # Each replica on its own share, every iteration checked.
        run = simulate_serving(trace, MODEL, config, replicas=replicas, router=router, seed=3)
        if scheduler != "static":
            owner = run.log.replica
            columns = RequestColumns(*(list(c) for c in trace.arrays()))
            for r in range(replicas):
                ids = [i for i in range(len(trace)) if owner[i] == r]
                simulate_replica(
                    r,
                    ids,
                    columns,
                    config,
                    MODEL,
                    ServingLog(len(trace)),
                    ReplicaSamples(),
                    observe=check,
                )
    _check_outcome(trace, run.log, blocks)
    assert all(peak <= blocks for peak in run.peak_blocks)
    assert run.final_blocks == (0,) * replicas  # every block given back
    table = request_table(run)
    ttft = table.column("ttft").to_numpy(zero_copy_only=False)
    e2e = table.column("e2e").to_numpy(zero_copy_only=False)
    served = ~np.isnan(e2e)
    assert (ttft[served] <= e2e[served]).all()
    # Deterministic: the same inputs give the same outcome.
    again = simulate_serving(trace, MODEL, config, replicas=replicas, router=router, seed=3)
    assert request_table(again).equals(table)
    assert again.log.gaps == run.log.gaps


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=requests_strategy,
    prefill_scheduler=st.sampled_from(SCHEDULERS),
    decode_scheduler=st.sampled_from(("vllm", "sarathi")),
    blocks=st.integers(4, 60),
    budget=st.integers(2, 64),
    max_seqs=st.integers(1, 8),
    preemption=st.sampled_from(PREEMPTIONS),
    chunked=st.booleans(),
    pools=st.tuples(st.integers(1, 2), st.integers(1, 2)),
)
def test_invariants_disaggregated(
    requests: list[tuple[float, int, int]],
    prefill_scheduler: str,
    decode_scheduler: str,
    blocks: int,
    budget: int,
    max_seqs: int,
    preemption: str,
    chunked: bool,
    pools: tuple[int, int],
) -> None:
    trace = RequestTrace.from_requests([RequestSpec(a, p, o) for a, p, o in requests])
    prefill = _config(prefill_scheduler, blocks, budget, max_seqs, preemption, chunked)
    decode = _config(decode_scheduler, blocks, budget, max_seqs, preemption, chunked)
    checks = {"prefill": _Checker(prefill, MODEL), "decode": _Checker(decode, MODEL)}

    def observed(*args: object, prefilled: bool = False, **kwargs: object) -> tuple[int, int]:
        check = checks["decode" if prefilled else "prefill"]
        static = not replica_schedulers()[check.config.scheduler].iteration_level
        observe = None if static else check
        return simulate_replica(*args, prefilled=prefilled, observe=observe, **kwargs)  # type: ignore[arg-type]

    def run() -> disaggregated.ServingRun:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(disaggregated, "simulate_replica", functools.partial(observed))
            return simulate_disaggregated(
                trace, Pool(MODEL, prefill, pools[0]), Pool(MODEL, decode, pools[1]), 1000, 1e9
            )

    first = run()
    _check_outcome(trace, first.log, blocks, split=True)
    assert all(peak <= blocks for peak in first.peak_blocks)
    assert first.final_blocks == (0,) * sum(pools)
    table = request_table(first)
    ttft = table.column("ttft").to_numpy(zero_copy_only=False)
    e2e = table.column("e2e").to_numpy(zero_copy_only=False)
    served = ~np.isnan(e2e)
    assert (ttft[served] <= e2e[served]).all()
    again = run()
    assert request_table(again).equals(table) and again.log.gaps == first.log.gaps
