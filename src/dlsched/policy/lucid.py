"""Lucid (Hu et al., ASPLOS'23): shortest estimated GPU-time first, with interference-aware
packing that an arrival forecast turns on and off. Our reading of the paper (§4) and of its
artifact's simulator, in our own code:

- **Order** (the duration estimator): smallest estimated GPU-time (``estimate × GPUs``) first,
  non-preemptive, as :mod:`dlsched.policy.qssf`; the estimate is the run's duration estimator
  (``--estimator``; Lucid's own is an explainable boosting model retrained weekly).
- **Packing** (the packing analyze model): a waiting job of at most ``max_pack_gpus`` GPUs
  shares the GPUs of the first running job (in start order) that is not sharing, asks for the
  same number of GPUs, leaves room in GPU memory (the two footprints below ``gpu_mem_mib``),
  whose sharing score added to the newcomer's is at most ``score_budget``, and whose estimated
  GPU-time is at least the newcomer's divided by ``priority_ratio``. Else the job starts alone
  if it fits; if not, later jobs are still tried (no head-of-line blocking while packing is on).
  Scores and footprints come from the co-location profiles (:mod:`dlsched.perf.interference`);
  a job whose workload they do not know is never packed.
- **Adaptive switch** (the throughput predictor): every ``check_s`` seconds, packing is on only
  if the mean forecast of GPU-job arrivals over the next five 10-minute bins
  (:class:`~dlsched.perf.arrival_forecast.ArrivalForecast`) exceeds ``packing_threshold``;
  when off, the queue is served in order with head-of-line blocking. ``adaptive=false`` keeps
  packing always on.

Not modelled: Lucid's workload-aware profiler (a 2-node cluster where every job first runs for
up to 200 s, least-GPU first) and the offline retraining of its models.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlsched.policy.base import Key
from dlsched.policy.colocation import Candidate, CoLocatingPolicy, Speeds
from dlsched.scheduler.view import JobView

if TYPE_CHECKING:
    from dlsched.perf.arrival_forecast import ArrivalForecast
    from dlsched.perf.interference import WorkloadProfile


@dataclass(frozen=True)
class Lucid(CoLocatingPolicy):
    name = "lucid"
    description = (
        "smallest estimated GPU-time first; packs pairs of jobs whose measured co-location "
        "slowdown is small, when the arrival forecast says the cluster is busy (Lucid)"
    )
    needs_estimate = True

    packing_threshold: float = 2.0
    check_s: float = 100.0
    score_budget: int = 2
    priority_ratio: float = 2.0
    gpu_mem_mib: float = 24576.0
    max_pack_gpus: int = 8
    adaptive: bool = True

    def __post_init__(self) -> None:
        if not self.check_s > 0:
            raise ValueError(f"check_s must be positive, got {self.check_s}")
        if not self.priority_ratio > 0:
            raise ValueError(f"priority_ratio must be positive, got {self.priority_ratio}")
        if not self.gpu_mem_mib > 0:
            raise ValueError(f"gpu_mem_mib must be positive, got {self.gpu_mem_mib}")
        if self.max_pack_gpus < 1:
            raise ValueError(f"max_pack_gpus must be at least 1, got {self.max_pack_gpus}")

    def key(self, job: JobView, now: float) -> Key:
        if job.estimate is None:
            raise ValueError(f"lucid needs a duration estimate for job {job.job_id!r}")
        return (job.estimate * max(job.gpus, 1), job.submit_time, job.seq)

    @property
    def check_interval(self) -> float | None:
        return self.check_s if self.adaptive else None

    def packing_on(self, forecast: ArrivalForecast, now: float) -> bool:
        return not self.adaptive or forecast.mean_next(now) > self.packing_threshold

    def partner(
        self,
        job: JobView,
        priority: float,
        profile: WorkloadProfile | None,
        candidates: Sequence[Candidate],
        now: float,
        speeds: Speeds,
    ) -> tuple[JobView, tuple[float, float]] | None:
        if profile is None or not 0 < job.gpus <= self.max_pack_gpus:
            return None
        room = self.gpu_mem_mib - profile.gpu_mem_mib
        for c in candidates:
            p = c.profile
            if (
                p is not None
                and c.job.gpus == job.gpus
                and p.gpu_mem_mib < room
                and p.sharing_score + profile.sharing_score <= self.score_budget
                and priority <= self.priority_ratio * c.priority
            ):
                return c.job, speeds(c.job)
        return None
