"""How a serving replica schedules: the scheduler and its limits."""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlsched.serving.hardware import KV_BLOCK_TOKENS

SCHEDULERS = ("static", "continuous", "chunked")
PREEMPTIONS = ("recompute", "swap")
"""How a request that loses its KV memory comes back (vLLM's two modes): ``recompute`` drops
its KV cache and prefills prompt and generated tokens again; ``swap`` copies a decoding
request's KV cache to host memory and back over PCIe, stalling the iteration of each copy for
``swap_s_per_token`` per token of context (host memory is assumed large enough). A request
preempted while its prompt is still being prefilled (chunked) is recomputed in either mode."""
"""``static``: request-level batching — a batch is formed when the replica is idle, padded to
its longest prompt and output, and every request of it completes when the whole batch does.
``continuous``: iteration-level batching with paged KV memory (Orca, Yu et al. OSDI'22; vLLM,
Kwon et al. SOSP'23) — waiting prompts are prefilled in an iteration of their own as soon as
free KV blocks admit them, stalling that iteration's decodes. ``chunked``: Sarathi-Serve's
chunked prefill (Agrawal et al., OSDI'24) — every iteration carries every running decode and
fills the rest of a token budget with prompt chunks."""


@dataclass(frozen=True)
class ReplicaConfig:
    """Limits of one replica. ``kv_blocks``: paged KV blocks of ``block_tokens`` tokens the
    replica holds; ``max_seqs``: requests held at once; ``max_batched_tokens``: prompt tokens
    one prefill iteration takes (a longer prompt alone still runs); ``chunk_tokens``: the
    chunked scheduler's token budget per iteration; ``max_batch``: the static batch size;
    ``watermark_blocks``: blocks kept free when admitting (vLLM keeps 1%); ``preemption``
    and ``swap_s_per_token``: see :data:`PREEMPTIONS`."""

    scheduler: str
    kv_blocks: int
    block_tokens: int = KV_BLOCK_TOKENS
    max_seqs: int = 256
    max_batched_tokens: int = 8192
    chunk_tokens: int = 512
    max_batch: int = 16
    watermark_blocks: int = 0
    preemption: str = "recompute"
    swap_s_per_token: float = 0.0

    def __post_init__(self) -> None:
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {self.scheduler!r}; expected one of {SCHEDULERS}")
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
        if not 0 <= self.watermark_blocks < self.kv_blocks:
            raise ValueError(
                f"watermark_blocks must be in 0..{self.kv_blocks - 1}, got {self.watermark_blocks}"
            )

    def blocks(self, tokens: int) -> int:
        """KV blocks that hold ``tokens`` tokens."""
        return -(-tokens // self.block_tokens)
