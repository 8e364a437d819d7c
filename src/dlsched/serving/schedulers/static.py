"""Request-level (static) batching, as FasterTransformer serves (the baseline of Orca, Yu et
al. OSDI'22, §2.2): when the replica is idle it takes up to ``max_batch`` waiting requests,
oldest first, while their padded batch fits in KV memory; the batch is prefilled padded to
its longest prompt, decoded padded to its longest output, and every request of it completes
when the whole batch does. The replica runs it itself (it is not ``iteration_level``)."""

from __future__ import annotations

from typing import ClassVar

from dlsched.serving.schedulers.base import ReplicaScheduler, ReplicaView


class StaticScheduler(ReplicaScheduler):
    name: ClassVar[str] = "static"
    description: ClassVar[str] = (
        "request-level batching: a padded batch runs until its longest output"
    )
    options: ClassVar[tuple[str, ...]] = ("max_batch",)
    iteration_level: ClassVar[bool] = False
    preempts: ClassVar[bool] = False

    def plan(self, view: ReplicaView) -> list[tuple[int, int]]:
        raise NotImplementedError("static batching runs whole batches, not iterations")
