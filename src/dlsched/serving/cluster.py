"""A serving deployment: identical replicas behind a router, simulated over a request trace.

``round-robin`` deals requests in arrival order and ``random`` draws each request's replica
uniformly with a seed: they decide from arrivals alone, so each replica is simulated on its
own share of the trace. ``least-outstanding-tokens`` (fewest prompt + output tokens of
unfinished requests) and ``kv-aware`` (most free KV blocks, less those its waiting prompts
need) look at the replicas' state: the replicas then advance together, each run up to the
arrival (to the end of the iteration under way at it) before the request is routed.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from dlsched.progress import ProgressFn
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.log import ServingLog
from dlsched.serving.names import ROUTERS, STATE_ROUTERS, STATELESS_ROUTERS
from dlsched.serving.perf.model import IterationModel
from dlsched.serving.replica import (
    ReplicaSamples,
    ReplicaState,
    RequestColumns,
    iteration_steps,
    simulate_replica,
)
from dlsched.serving.requests import RequestTrace

__all__ = ["ROUTERS", "STATELESS_ROUTERS", "STATE_ROUTERS", "ServingRun", "simulate_serving"]


@dataclass(frozen=True)
class ServingRun:
    """The trace served, the log of every request, the replicas' sampled state, the most KV
    blocks each replica used at once and the blocks each still held at the end."""

    trace: RequestTrace
    config: ReplicaConfig
    replicas: int
    log: ServingLog
    samples: ReplicaSamples
    peak_blocks: tuple[int, ...]
    final_blocks: tuple[int, ...]


def assign_replicas(n: int, replicas: int, router: str, seed: int = 0) -> np.ndarray:
    """The replica of each of ``n`` requests (in arrival order) under ``router``."""
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, got {replicas}")
    if router == "round-robin":
        return np.arange(n) % replicas
    if router == "random":
        return np.random.default_rng(seed).integers(0, replicas, size=n)
    raise ValueError(
        f"router {router!r} does not decide from arrivals alone; expected one of "
        f"{STATELESS_ROUTERS}"
    )


def simulate_serving(
    trace: RequestTrace,
    model: IterationModel,
    config: ReplicaConfig,
    replicas: int = 1,
    router: str = "round-robin",
    seed: int = 0,
    sample_every: float = 1.0,
    progress: ProgressFn | None = None,
) -> ServingRun:
    """Serve ``trace`` on ``replicas`` replicas of ``config`` whose iterations take what
    ``model`` says, reporting requests settled (finished or rejected) to ``progress``.
    Deterministic for a given seed."""
    if router not in ROUTERS:
        raise ValueError(f"unknown router {router!r}; expected one of {ROUTERS}")
    if router in STATE_ROUTERS:
        return _simulate_routed(trace, model, config, replicas, router, sample_every, progress)
    requests = request_columns(trace)
    owner = assign_replicas(len(trace), replicas, router, seed)
    log = ServingLog(len(trace), progress=progress)
    samples = ReplicaSamples(every=sample_every)
    blocks = [
        simulate_replica(
            r, np.flatnonzero(owner == r).tolist(), requests, config, model, log, samples
        )
        for r in range(replicas)
    ]
    return gather(trace, config, log, samples, blocks)


def request_columns(trace: RequestTrace) -> RequestColumns:
    """The columns of ``trace`` as the replica simulator reads them (plain lists: fast to
    index one at a time)."""
    times, prompts, outputs = trace.arrays()
    return RequestColumns(times.tolist(), prompts.tolist(), outputs.tolist())


def gather(
    trace: RequestTrace,
    config: ReplicaConfig,
    log: ServingLog,
    samples: ReplicaSamples,
    blocks: list[tuple[int, int]],
) -> ServingRun:
    """The run of the replicas that returned ``blocks`` (peak and final KV blocks each)."""
    peaks = tuple(peak for peak, _ in blocks)
    finals = tuple(final for _, final in blocks)
    return ServingRun(trace, config, len(blocks), log, samples, peaks, finals)


def _simulate_routed(
    trace: RequestTrace,
    model: IterationModel,
    config: ReplicaConfig,
    replicas: int,
    router: str,
    sample_every: float,
    progress: ProgressFn | None,
) -> ServingRun:
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, got {replicas}")
    if config.scheduler == "static":
        raise ValueError(f"router {router!r} needs an iteration-level scheduler, not static")
    requests = request_columns(trace)
    log = ServingLog(len(trace), progress=progress)
    samples = ReplicaSamples(every=sample_every)
    limit = config.kv_blocks - config.watermark_blocks
    states = [ReplicaState(free_blocks=config.kv_blocks) for _ in range(replicas)]
    ids: list[list[int]] = [[] for _ in range(replicas)]
    steps = [
        iteration_steps(r, ids[r], requests, config, model, log, samples, set(), 0.0, states[r])
        for r in range(replicas)
    ]
    clocks = [next(s) for s in steps]  # each starts idle: inf
    busy: list[tuple[float, int]] = []
    columns = zip(requests.arrivals, requests.prompts, requests.outputs, strict=True)
    for i, (t, p, o) in enumerate(columns):
        while busy and busy[0][0] < t:
            _, r = heapq.heappop(busy)
            clocks[r] = next(steps[r])
            if clocks[r] != math.inf:
                heapq.heappush(busy, (clocks[r], r))
        r = _choose(router, states)
        ids[r].append(i)
        if config.blocks(p + o) <= limit:
            states[r].outstanding += p + o
            states[r].queued_blocks += config.blocks(p)
        if clocks[r] == math.inf:
            clocks[r] = t
            heapq.heappush(busy, (t, r))
    blocks = []
    for r, s in enumerate(steps):
        while clocks[r] != math.inf:
            clocks[r] = next(s)
        try:
            s.send(True)
        except StopIteration as done:
            blocks.append(done.value)
    return gather(trace, config, log, samples, blocks)


def _choose(router: str, states: list[ReplicaState]) -> int:
    """The replica ``router`` picks (ties: the lowest index)."""
    if router == "least-outstanding-tokens":
        return min(range(len(states)), key=lambda r: (states[r].outstanding, r))
    return min(
        range(len(states)),
        key=lambda r: (-(states[r].free_blocks - states[r].queued_blocks), states[r].held, r),
    )
