"""Orca's iteration-level scheduling with selective batching (Yu et al., OSDI'22, §3–4).

The scheduler picks the requests of every iteration anew, first come first served, up to a
maximum batch size (``max_bs``; ``max_seqs`` here): running requests take their next decode
step and newly picked ones their whole prompt (the initiation phase runs a prompt in one
iteration), in one batch — selective batching runs the token-wise operations over all tokens
together and attention per request. A request is picked only when the KV slots of its prompt
and its maximum output can be reserved (Orca's Algorithm 1; the trace's output length stands
for the request's ``max_tokens``), so no request is ever preempted; the first request that
does not fit stops the queue. An iteration has no token bound: every prompt picked is
prefilled whole.
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.serving.schedulers.base import ReplicaScheduler, ReplicaView


class OrcaScheduler(ReplicaScheduler):
    name: ClassVar[str] = "orca"
    description: ClassVar[str] = (
        "Orca iteration-level scheduling: whole prefills beside decodes, max batch size"
    )
    options: ClassVar[tuple[str, ...]] = ("max_seqs",)
    reserves_output: ClassVar[bool] = True
    preempts: ClassVar[bool] = False

    def plan(self, view: ReplicaView) -> list[tuple[int, int]]:
        chunks: list[tuple[int, int]] = []
        held, free, limit = view.held, view.free, self.config.max_seqs
        for i in view.waiting:
            context = view.context(i)
            if held >= limit or context is None:
                break
            need = view.need(i)
            if need > free:
                break
            chunks.append((i, context))
            held += 1
            free -= need
        return chunks
