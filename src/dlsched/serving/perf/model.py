"""What a serving performance model answers: the time of one iteration of a replica.

An iteration runs ``prefill_tokens`` prompt tokens belonging to ``prefill_seqs`` prompts or
chunks of prompts, whose attention covers ``prefill_pairs`` (query, key) token pairs, together
with one decode step of ``decode_seqs`` requests holding ``decode_context`` tokens of KV cache
between them. A prompt of p tokens prefilled at once has p(p+1)/2 pairs; a chunk of c tokens
after q already cached has c·q + c(c+1)/2 (:func:`chunk_pairs`).
"""

from __future__ import annotations

from typing import Protocol


class IterationModel(Protocol):
    """The time of one iteration of a replica.

    Contract, for every implementation: the time is in seconds, finite and ``>= 0``; it is 0
    for an empty iteration (no prefill tokens, no decode requests); it does not decrease when
    any argument grows with the others held. ``prefill_seqs`` is the number of prompts or
    chunks the ``prefill_tokens`` belong to (at least 1 when there are prefill tokens, 0
    without; a model may read 0 as 1 or ignore the count). ``decode_context`` is the sum over
    the decoding requests of the tokens each has cached.
    """

    def iteration_time(
        self,
        prefill_tokens: int,
        prefill_pairs: float,
        prefill_seqs: int,
        decode_seqs: int,
        decode_context: int,
    ) -> float: ...


def chunk_pairs(chunk: int, cached: int) -> float:
    """Attention pairs of a prefill chunk of ``chunk`` tokens after ``cached`` tokens."""
    return chunk * cached + chunk * (chunk + 1) / 2.0
