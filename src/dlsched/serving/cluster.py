"""A serving deployment: identical replicas behind a router, simulated over a request trace.

Routers decide from arrivals alone, so each replica is simulated on its own share of the
trace: ``round-robin`` deals requests in arrival order; ``random`` draws each request's
replica uniformly with a seed. Routers that look at replica state (least outstanding tokens,
KV-aware) are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlsched.serving.config import ReplicaConfig
from dlsched.serving.log import ServingLog
from dlsched.serving.perf.model import IterationModel
from dlsched.serving.replica import ReplicaSamples, RequestColumns, simulate_replica
from dlsched.serving.requests import RequestTrace

ROUTERS = ("round-robin", "random")


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
    raise ValueError(f"unknown router {router!r}; expected one of {ROUTERS}")


def simulate_serving(
    trace: RequestTrace,
    model: IterationModel,
    config: ReplicaConfig,
    replicas: int = 1,
    router: str = "round-robin",
    seed: int = 0,
    sample_every: float = 1.0,
) -> ServingRun:
    """Serve ``trace`` on ``replicas`` replicas of ``config`` whose iterations take what
    ``model`` says. Deterministic for a given seed."""
    requests = request_columns(trace)
    owner = assign_replicas(len(trace), replicas, router, seed)
    log = ServingLog(len(trace))
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
