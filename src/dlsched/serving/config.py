"""How a serving replica schedules: the scheduler (:mod:`dlsched.serving.schedulers`) and its
limits."""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlsched.serving.hardware import KV_BLOCK_TOKENS
from dlsched.serving.schedulers import SCHEDULERS, resolve

__all__ = ["PREEMPTIONS", "SCHEDULERS", "ReplicaConfig"]

PREEMPTIONS = ("recompute", "swap")
"""How a request that loses its KV memory comes back (vLLM's two modes): ``recompute`` drops
its KV cache and prefills prompt and generated tokens again; ``swap`` copies a decoding
request's KV cache to host memory and back over PCIe, stalling the iteration of each copy for
``swap_s_per_token`` per token of context (host memory is assumed large enough). A request
preempted while its prompt is still being prefilled is recomputed in either mode."""


@dataclass(frozen=True)
class ReplicaConfig:
    """Limits of one replica. ``scheduler``: a replica scheduler's name (an alias is resolved:
    ``chunked`` becomes ``sarathi``); ``kv_blocks``: paged KV blocks of ``block_tokens`` tokens
    the replica holds; ``max_seqs``: requests held at once (vLLM's ``max_num_seqs``, Orca's
    maximum batch size); ``max_batched_tokens``: vLLM's token budget per iteration, decodes
    and prompt chunks together; ``chunked_prefill``: vLLM cuts prompts to the budget (off: a
    prompt runs whole); ``chunk_tokens``: Sarathi-Serve's token budget, or ``tbt_target``
    (seconds) to derive it from the performance model; ``max_batch``: the static batch size;
    ``watermark_blocks``: blocks kept free when admitting (vLLM V0 keeps 1%); ``preemption``
    and ``swap_s_per_token``: see :data:`PREEMPTIONS`. Each scheduler reads the fields its
    ``options`` name."""

    scheduler: str
    kv_blocks: int
    block_tokens: int = KV_BLOCK_TOKENS
    max_seqs: int = 256
    max_batched_tokens: int = 8192
    chunked_prefill: bool = True
    chunk_tokens: int = 512
    tbt_target: float | None = None
    max_batch: int = 16
    watermark_blocks: int = 0
    preemption: str = "recompute"
    swap_s_per_token: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scheduler", resolve(self.scheduler))
        for name in ("kv_blocks", "block_tokens", "max_seqs", "max_batched_tokens", "max_batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.preemption not in PREEMPTIONS:
            raise ValueError(
                f"unknown preemption {self.preemption!r}; expected one of {PREEMPTIONS}"
            )
        if not (self.swap_s_per_token >= 0 and math.isfinite(self.swap_s_per_token)):
            raise ValueError(f"swap_s_per_token must be >= 0, got {self.swap_s_per_token}")
        if self.chunk_tokens < 2:
            raise ValueError(f"chunk_tokens must be at least 2, got {self.chunk_tokens}")
        if self.tbt_target is not None and not (
            self.tbt_target > 0 and math.isfinite(self.tbt_target)
        ):
            raise ValueError(f"tbt_target must be positive, got {self.tbt_target}")
        if not 0 <= self.watermark_blocks < self.kv_blocks:
            raise ValueError(
                f"watermark_blocks must be in 0..{self.kv_blocks - 1}, got {self.watermark_blocks}"
            )

    def blocks(self, tokens: int) -> int:
        """KV blocks that hold ``tokens`` tokens."""
        return -(-tokens // self.block_tokens)
