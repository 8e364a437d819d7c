"""Sarathi-Serve's stall-free batching (Agrawal et al., OSDI'24, §4).

Every iteration first takes every ongoing decode, then the next chunks of the prompts
part-way, then new requests, each chunk cut to what is left of a token budget shared with the
decodes, so a prompt never stalls the running decodes for more than one bounded iteration
(stall-free batching). A new request is admitted only while its prompt's KV blocks fit, and
decodes that run out of blocks preempt the newest requests (Sarathi-Serve is built on vLLM's
block manager, V0, which takes a prompt's blocks when it is admitted).

The token budget is chosen for a time-between-tokens target: the paper profiles the
deployment for the largest budget whose iterations stay within the TBT SLO. Here, with
``tbt_target`` (seconds), it is derived from the performance model: the largest number of
tokens τ such that an iteration prefilling one chunk of τ tokens (none cached before it)
takes at most the target. Decodes beside the chunk take budget tokens of it, and what they
add to the iteration beyond the fixed cost the model shares with the prefill is not in the
target: pick a target below the SLO to leave room for them. Without ``tbt_target`` the
budget is ``chunk_tokens`` (512 by default, the paper's strict-SLO budget).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from dlsched.serving.perf.model import chunk_pairs
from dlsched.serving.schedulers.base import ReplicaScheduler, ReplicaView, fill_chunks

if TYPE_CHECKING:
    from dlsched.serving.config import ReplicaConfig
    from dlsched.serving.perf.model import IterationModel

LARGEST_BUDGET = 1 << 20


def tbt_budget(model: IterationModel, target: float) -> int:
    """The largest token budget τ (at most 2^20) whose one-chunk prefill iteration takes at
    most ``target`` seconds under ``model``; ValueError when even 2 tokens take longer."""

    def time(tokens: int) -> float:
        return model.iteration_time(tokens, chunk_pairs(tokens, 0), 1, 0, 0)

    if time(2) > target:
        raise ValueError(
            f"tbt_target {target:g} s is below an iteration of 2 prompt tokens "
            f"({time(2):.4f} s under this performance model)"
        )
    low, high = 2, LARGEST_BUDGET
    if time(high) <= target:
        return high
    while high - low > 1:  # time(low) <= target < time(high); the model is non-decreasing
        middle = (low + high) // 2
        low, high = (middle, high) if time(middle) <= target else (low, middle)
    return low


class SarathiScheduler(ReplicaScheduler):
    name: ClassVar[str] = "sarathi"
    description: ClassVar[str] = (
        "Sarathi-Serve stall-free batching: decodes, then prefill chunks under a TBT budget"
    )
    options: ClassVar[tuple[str, ...]] = ("chunk_tokens", "tbt_target", "max_seqs", "preemption")
    decode_replica: ClassVar[bool] = True

    def __init__(self, config: ReplicaConfig, model: IterationModel) -> None:
        super().__init__(config, model)
        target = config.tbt_target
        self.budget = config.chunk_tokens if target is None else tbt_budget(model, target)
        self._seqs = config.max_seqs

    def plan(self, view: ReplicaView) -> list[tuple[int, int]]:
        assert self.budget is not None
        return fill_chunks(view, self.budget, self._seqs)
