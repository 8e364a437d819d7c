"""Gandiva (Xiao et al., OSDI'18): oversubscribe GPUs by time-slicing and packing, and migrate
jobs back to GPUs of their own when some free up. Our reading of the paper (§3–§5), in our own
code, on dlsched's time-sharing (two jobs per GPU at most, on exactly the same GPUs):

- **Order**: submit order; a job that fits starts on GPUs of its own (the run's placer), later
  jobs are tried when it does not (no head-of-line blocking).
- **Oversubscription**: a job that does not fit shares the GPUs of a running job that asks for
  as many GPUs and shares with nobody: the one whose pair gives the most aggregate throughput.
- **Packing or time-slicing** (Gandiva's introspection): the two run concurrently at their
  measured co-located speeds when those add up to more than 1 and their GPU memory fits
  (``gpu_mem_mib``); otherwise they time-slice, suspending and resuming each other at
  mini-batch boundaries, each at ``(1 - slice_overhead) / 2`` of its speed alone. Jobs whose
  workload the profiles do not know time-slice (their memory is unknown).
- **Migration**: as soon as the placer finds GPUs of its own for the later-started job of a
  pair, it moves there (a restart, at the run's restart cost) and both run alone again.

Not modelled: more than two jobs per GPU, Gandiva's grow-shrink of elastic jobs, and migration
for locality alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from dlsched.policy.base import Key
from dlsched.policy.colocation import Candidate, CoLocatingPolicy, Speeds
from dlsched.scheduler.view import JobView

if TYPE_CHECKING:
    from dlsched.perf.interference import WorkloadProfile


@dataclass(frozen=True)
class Gandiva(CoLocatingPolicy):
    name = "gandiva"
    description = (
        "submit order; when GPUs run out, packs or time-slices a job with a running one "
        "(whichever gives more throughput) and migrates it to free GPUs later (Gandiva)"
    )
    share_first: ClassVar[bool] = False
    migrates: ClassVar[bool] = True

    gpu_mem_mib: float = 24576.0
    slice_overhead: float = 0.0

    def __post_init__(self) -> None:
        if not self.gpu_mem_mib > 0:
            raise ValueError(f"gpu_mem_mib must be positive, got {self.gpu_mem_mib}")
        if not 0.0 <= self.slice_overhead < 1.0:
            raise ValueError(f"slice_overhead must be in [0, 1), got {self.slice_overhead}")

    @property
    def backfill(self) -> bool:
        return True

    def key(self, job: JobView, now: float) -> Key:
        return (job.submit_time, job.seq)

    def mode(
        self,
        profile: WorkloadProfile | None,
        other: WorkloadProfile | None,
        measured: tuple[float, float],
    ) -> tuple[float, float]:
        """The speeds of a pair: concurrent (packed) when that beats time-slicing and their
        memory fits, else time-sliced."""
        sliced = (1.0 - self.slice_overhead) / 2
        if (
            profile is not None
            and other is not None
            and profile.gpu_mem_mib + other.gpu_mem_mib <= self.gpu_mem_mib
            and measured[0] + measured[1] > 2 * sliced
        ):
            return measured
        return sliced, sliced

    def partner(
        self,
        job: JobView,
        priority: float,
        profile: WorkloadProfile | None,
        candidates: Sequence[Candidate],
        now: float,
        speeds: Speeds,
    ) -> tuple[JobView, tuple[float, float]] | None:
        best: tuple[JobView, tuple[float, float]] | None = None
        best_sum = -1.0
        for c in candidates:
            if c.job.gpus != job.gpus:
                continue
            pair = self.mode(profile, c.profile, speeds(c.job))
            if pair[0] + pair[1] > best_sum:
                best, best_sum = (c.job, pair), pair[0] + pair[1]
        return best
