"""What a replica scheduler decides, and what the replica does with its decision.

A replica (:mod:`dlsched.serving.replica`) runs one iteration after another. Before each, it

1. queues the requests that have arrived (rejecting those whose prompt and output could never
   fit in its KV memory, less the watermark);
2. takes back, first in line, the waiting requests whose KV cache comes back rather than being
   recomputed (swapped out to host memory; sent by a prefill replica), while their blocks fit
   above the watermark and fewer than ``max_seqs`` requests hold memory;
3. runs **every** decoding request one step in this iteration. When the new tokens need more
   KV blocks than are free, it preempts the newest admitted requests (latest admission first,
   never the oldest while another holds memory) until they fit: each is recomputed later, or
   with ``preemption="swap"`` copied out. The schedulers here all run every running decode in
   every iteration (vLLM requires ``max_num_batched_tokens >= max_num_seqs`` so that they fit;
   Orca and Sarathi-Serve schedule running requests first), so the contract fixes it and the
   replica keeps the decodes as one aggregate, which keeps the loop fast;
4. asks the scheduler's :meth:`ReplicaScheduler.plan` for the **prefill chunks** of this
   iteration, when any prompt is part-way or waiting: a list of ``(request, tokens)``. A
   request of :attr:`ReplicaView.prefilling` continues its prompt; a request of
   :attr:`ReplicaView.waiting` is admitted with its first chunk, and the waiting requests
   taken must be the first ones of the queue, in order. Admission takes
   :meth:`ReplicaView.need` blocks (the whole prompt's, or prompt and output's when the
   scheduler ``reserves_output``), which must be free above the watermark
   (:attr:`ReplicaView.free`). A chunk of ``tokens`` after ``done`` cached tokens costs
   ``chunk_pairs(tokens, done)`` attention pairs; when a prompt's last chunk runs, its request
   gets its first token and decodes from the next iteration;
5. asks the performance model the time of the iteration from its composition (prefill tokens,
   their pairs and number of chunks, decoding requests and their context).

The replica checks a plan against the KV memory and the queue order and raises RuntimeError,
naming the scheduler, when it breaks them. A scheduler that is not ``iteration_level`` batches
whole requests instead (:class:`~dlsched.serving.schedulers.static.StaticScheduler`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from dlsched.serving.config import ReplicaConfig
    from dlsched.serving.perf.model import IterationModel


class ReplicaView:
    """What a scheduler sees of its replica when it plans an iteration (kept current by the
    replica, read-only for the scheduler). ``decodes``: requests decoding in this iteration
    (one token each); ``prefilling``: admitted requests whose prompt is part-way, to the tokens
    prefilled so far, oldest admission first; ``waiting``: requests not holding memory, in
    the order they are served; ``held``: requests holding KV memory (decoding or prefilling);
    ``free``: KV blocks free for admitting a request (the watermark left out); ``preempted``:
    whether step 3 preempted a request for this iteration."""

    __slots__ = (
        "_bt",
        "_gen",
        "_moved",
        "_outputs",
        "_prompts",
        "_reserve",
        "decodes",
        "free",
        "held",
        "preempted",
        "prefilling",
        "waiting",
    )

    def __init__(
        self,
        prompts: Sequence[int],
        outputs: Sequence[int],
        generated: Sequence[int],
        moved: tuple[set[int], set[int]],
        block_tokens: int,
        reserves_output: bool,
        prefilling: dict[int, int],
        waiting: deque[int],
    ) -> None:
        self._prompts, self._outputs, self._gen = prompts, outputs, generated
        self._moved, self._bt, self._reserve = moved, block_tokens, reserves_output
        self.prefilling, self.waiting = prefilling, waiting
        self.decodes = self.free = self.held = 0
        self.preempted = False

    def context(self, i: int) -> int | None:
        """Tokens request ``i`` prefills in all: its prompt and the tokens it had generated
        before a preemption (recomputed). None when its KV cache comes back instead (step 2):
        it cannot be prefilled, and those behind it wait for it."""
        transferred, swapped = self._moved
        if (transferred or swapped) and (i in transferred or i in swapped):
            return None
        return self._prompts[i] + self._gen[i]

    def need(self, i: int) -> int:
        """KV blocks admitting waiting request ``i`` takes."""
        tokens = self._prompts[i] + (self._outputs[i] if self._reserve else self._gen[i])
        return -(-tokens // self._bt)


class ReplicaScheduler(ABC):
    """A replica scheduler (module docstring: the contract). ``name`` and ``description`` say
    what it is; ``options`` are the :class:`~dlsched.serving.config.ReplicaConfig` fields it
    reads beyond the KV memory (a command refuses the others' options); ``decode_replica``:
    it can run the decode replica of a disaggregated deployment (requests arrive with their
    prompt's KV cache and join the decodes when their blocks fit); ``reserves_output``: it
    admits a request into blocks for its prompt and whole output, so it never preempts;
    ``preempts``: it runs under ``preemption="swap"`` as well as recompute. ``budget`` is the
    most tokens (decodes and prefill chunks) one iteration holds, None for no bound."""

    name: ClassVar[str]
    description: ClassVar[str]
    options: ClassVar[tuple[str, ...]] = ()
    iteration_level: ClassVar[bool] = True
    decode_replica: ClassVar[bool] = False
    reserves_output: ClassVar[bool] = False
    preempts: ClassVar[bool] = True

    def __init__(self, config: ReplicaConfig, model: IterationModel) -> None:
        self.config = config
        self.budget: int | None = None

    @abstractmethod
    def plan(self, view: ReplicaView) -> list[tuple[int, int]]:
        """The prefill chunks of the next iteration, ``(request, tokens)`` in order (step 4
        of the module docstring)."""


def fill_chunks(
    view: ReplicaView, budget: int, max_seqs: int, chunked: bool = True, admit: bool = True
) -> list[tuple[int, int]]:
    """Prefill chunks under a token budget, as vLLM's and Sarathi-Serve's schedulers take
    them: ``budget`` tokens less one per decode, first to the prompts part-way (oldest first),
    then to waiting requests in order while fewer than ``max_seqs`` hold memory and their
    blocks fit (the first that does not stops the queue, first come first served). Each chunk
    is what is left of its prompt, cut to the budget left. Without ``chunked`` a prompt runs
    whole or waits; one longer than the whole budget runs as the iteration's only prefill.
    Without ``admit`` only the prompts part-way are continued."""
    left = budget - view.decodes
    chunks: list[tuple[int, int]] = []
    if left <= 0:
        return chunks
    for i, done in view.prefilling.items():
        rest = view.context(i)
        assert rest is not None
        take = min(rest - done, left)
        chunks.append((i, take))
        left -= take
        if left <= 0:
            return chunks
    if not admit:
        return chunks
    held, free = view.held, view.free
    for i in view.waiting:
        if held >= max_seqs:
            break
        context = view.context(i)
        if context is None:
            break
        need = view.need(i)
        if need > free:
            break
        if context > left and not chunked:
            if not chunks:  # longer than the whole budget: alone
                chunks.append((i, context))
            break
        take = min(context, left)
        chunks.append((i, take))
        held += 1
        free -= need
        left -= take
        if left <= 0:
            break
    return chunks
