"""Prefill/decode disaggregation (Splitwise, Patel et al. ISCA'24; DistServe, Zhong et al.
OSDI'24): prompts are prefilled on one pool of replicas, and each request's KV cache then
moves over the interconnect to a replica of a second pool, which generates the rest.

The prefill pool is simulated first (every request there ends at its first token); a request
with more tokens to generate reaches the decode pool when its KV cache has arrived: its first
token's time plus ``kv bytes of the prompt / link bandwidth``. Both pools route round robin.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dlsched.progress import ProgressFn
from dlsched.serving.cluster import ServingRun, assign_replicas, gather, request_columns
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.log import ServingLog
from dlsched.serving.perf.model import IterationModel
from dlsched.serving.replica import (
    ReplicaSamples,
    RequestColumns,
    check_decode_replica,
    simulate_replica,
)
from dlsched.serving.requests import RequestTrace


@dataclasses.dataclass(frozen=True)
class Pool:
    """``replicas`` replicas of ``config`` whose iterations take what ``model`` says."""

    model: IterationModel
    config: ReplicaConfig
    replicas: int


def transfer_seconds(prompt_tokens: int, kv_bytes_per_token: int, link_bytes_per_s: float) -> float:
    """Time to move a prompt's KV cache between replicas over a link of the given speed."""
    return prompt_tokens * kv_bytes_per_token / link_bytes_per_s


def simulate_disaggregated(
    trace: RequestTrace,
    prefill: Pool,
    decode: Pool,
    kv_bytes_per_token: int,
    link_bytes_per_s: float,
    sample_every: float = 1.0,
    progress: ProgressFn | None = None,
) -> ServingRun:
    """Serve ``trace`` with prompts on the ``prefill`` pool and generation on the ``decode``
    pool (replicas numbered prefill first), reporting requests settled to ``progress`` while
    the decode pool runs (a request that goes on to it settles there). Deterministic."""
    if not link_bytes_per_s > 0:
        raise ValueError(f"link bandwidth must be positive, got {link_bytes_per_s:g} B/s")
    check_decode_replica(decode.config)
    requests = request_columns(trace)
    prompts, outputs = requests.prompts, requests.outputs
    log = ServingLog(len(trace))
    samples = ReplicaSamples(every=sample_every)
    blocks: list[tuple[int, int]] = []
    # On the prefill pool every request ends at its first token.
    prefill_only = RequestColumns(requests.arrivals, prompts, [1] * len(trace))
    owner = assign_replicas(len(trace), prefill.replicas, "round-robin")
    for r in range(prefill.replicas):
        ids = np.flatnonzero(owner == r).tolist()
        blocks.append(
            simulate_replica(r, ids, prefill_only, prefill.config, prefill.model, log, samples)
        )
    # Requests that go on: their generation restarts on the decode pool.
    moving = [i for i in range(len(trace)) if outputs[i] > 1 and not math.isnan(log.first_token[i])]
    arrivals = [math.nan] * len(trace)
    for i in moving:
        log.finish[i] = log.last_token[i] = math.nan
        arrivals[i] = log.first_token[i] + transfer_seconds(
            prompts[i], kv_bytes_per_token, link_bytes_per_s
        )
    log.settled -= len(moving)
    log.progress = progress
    moving.sort(key=lambda i: (arrivals[i], i))
    transferred = RequestColumns(arrivals, prompts, outputs)
    owner = assign_replicas(len(moving), decode.replicas, "round-robin")
    for r in range(decode.replicas):
        ids = [moving[k] for k in np.flatnonzero(owner == r).tolist()]
        blocks.append(
            simulate_replica(
                prefill.replicas + r,
                ids,
                transferred,
                decode.config,
                decode.model,
                log,
                samples,
                prefilled=True,
            )
        )
    return gather(trace, decode.config, log, samples, blocks)
