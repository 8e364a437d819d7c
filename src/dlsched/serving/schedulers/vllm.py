"""vLLM's scheduler as its current engine (V1) runs it by default.

One token budget per iteration, ``max_num_batched_tokens`` (``max_batched_tokens``, 8,192 by
default here, the figure vLLM's documentation gives for its API server), shared by every
token the iteration computes: each running request's decode step counts one, a prompt chunk
its tokens. Running requests are scheduled first; waiting requests are then taken first come
first served while fewer than ``max_num_seqs`` (``max_seqs``) run, with chunked prefill (on by
default in V1) cutting the last prompt taken to the budget left, so prefill and decode tokens
of different requests run in one iteration. When a running request's next token needs a KV
block and none is free, vLLM preempts the newest running request (recompute: its KV cache is
dropped and it waits at the head of the queue), and admits no waiting request in that step.
vLLM requires ``max_num_batched_tokens >= max_num_seqs``, so the decodes always fit the
budget. ``chunked_prefill=False`` (vLLM's ``enable_chunked_prefill=False``) takes a prompt
only whole and only while it fits the budget left (vLLM then requires the budget to hold
the longest prompt; here a longer one runs alone beside the decodes).

Differences from the engine: the blocks of a whole prompt are taken when its first chunk is
scheduled (V1 takes them chunk by chunk; with prompts far smaller than the KV capacity this
only moves a long prompt's allocation a few iterations earlier), admission leaves the
replica's watermark free (V0's rule; none by default), and there is no prefix caching, no
``long_prefill_token_threshold`` and no speculative decoding. ``preemption="swap"`` (V0's
other mode) is kept as an option.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from dlsched.serving.schedulers.base import ReplicaScheduler, ReplicaView, fill_chunks

if TYPE_CHECKING:
    from dlsched.serving.config import ReplicaConfig
    from dlsched.serving.perf.model import IterationModel


class VllmScheduler(ReplicaScheduler):
    name: ClassVar[str] = "vllm"
    description: ClassVar[str] = (
        "vLLM V1: one token budget, running requests first, chunked prefill, recompute"
    )
    options: ClassVar[tuple[str, ...]] = (
        "max_batched_tokens",
        "max_seqs",
        "chunked_prefill",
        "preemption",
    )
    decode_replica: ClassVar[bool] = True

    def __init__(self, config: ReplicaConfig, model: IterationModel) -> None:
        super().__init__(config, model)
        if config.max_batched_tokens < config.max_seqs:
            raise ValueError(
                f"vllm: max_batched_tokens ({config.max_batched_tokens}) must be at least "
                f"max_seqs ({config.max_seqs}), as vLLM requires"
            )
        self.budget = config.max_batched_tokens
        self._seqs = config.max_seqs
        self._chunked = config.chunked_prefill

    def plan(self, view: ReplicaView) -> list[tuple[int, int]]:
        assert self.budget is not None
        return fill_chunks(view, self.budget, self._seqs, self._chunked, not view.preempted)
