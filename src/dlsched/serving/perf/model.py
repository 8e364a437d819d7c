"""What a serving performance model answers: the time of one iteration of a replica.

An iteration runs ``prefill_tokens`` prompt tokens (whole prompts or chunks of them), whose
attention covers ``prefill_pairs`` (query, key) token pairs, together with one decode step of
``decode_seqs`` requests holding ``decode_context`` tokens of KV cache between them. A prompt
of p tokens prefilled at once has p(p+1)/2 pairs; a chunk of c tokens after q already cached
has c·q + c(c+1)/2.
"""

from __future__ import annotations

from typing import Protocol


class IterationModel(Protocol):
    """Time in seconds of one iteration; 0 for an empty one."""

    def iteration_time(
        self, prefill_tokens: int, prefill_pairs: float, decode_seqs: int, decode_context: int
    ) -> float: ...


def chunk_pairs(chunk: int, cached: int) -> float:
    """Attention pairs of a prefill chunk of ``chunk`` tokens after ``cached`` tokens."""
    return chunk * cached + chunk * (chunk + 1) / 2.0
