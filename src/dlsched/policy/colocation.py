"""Policies that co-locate jobs: they order jobs as any ordering policy and may also start a job
on the GPUs of a running one (time-sharing), deciding with the workloads' co-location profiles.

The cycle that asks them is :class:`dlsched.scheduler.colocation.CoLocationScheduler`. Only rigid
jobs asking for whole GPUs are co-located, two to a GPU at most, on exactly the partner's GPUs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from dlsched.policy.base import NonPreemptivePolicy
from dlsched.scheduler.view import JobView

if TYPE_CHECKING:
    from dlsched.perf.arrival_forecast import ArrivalForecast
    from dlsched.perf.interference import WorkloadProfile


Speeds = Callable[["JobView"], tuple[float, float]]
"""The measured concurrent speeds of a waiting job and a candidate partner (in that order)."""


@dataclass(frozen=True)
class Candidate:
    """A running job a waiting one could share GPUs with: its priority key's first figure and
    its workload's profile (None when the profiles do not know it)."""

    job: JobView
    priority: float
    profile: WorkloadProfile | None


@dataclass(frozen=True)
class CoLocatingPolicy(NonPreemptivePolicy, ABC):
    """Non-preemptive ordering with packing (module docstring)."""

    colocates: ClassVar[bool] = True
    share_first: ClassVar[bool] = True
    """Whether a waiting job first looks for a partner (Lucid) or first for GPUs of its own,
    sharing only when none are free (Gandiva)."""
    migrates: ClassVar[bool] = False
    """Whether a job sharing GPUs moves to GPUs of its own as soon as some are free."""

    @property
    def check_interval(self) -> float | None:
        """Seconds between re-evaluations of :meth:`packing_on` while jobs wait (None: it does
        not change on its own)."""
        return None

    def packing_on(self, forecast: ArrivalForecast, now: float) -> bool:
        """Whether jobs may be packed now; when not, the queue is served in key order with
        head-of-line blocking. ``forecast`` has seen every GPU-job arrival so far."""
        return True

    @abstractmethod
    def partner(
        self,
        job: JobView,
        priority: float,
        profile: WorkloadProfile | None,
        candidates: Sequence[Candidate],
        now: float,
        speeds: Speeds,
    ) -> tuple[JobView, tuple[float, float]] | None:
        """The running job (one of ``candidates``, in the order they started, none of them
        sharing yet, each holding whole GPUs) whose GPUs ``job`` should share, with the speeds
        the two will run at (``job``'s, then the partner's), or None. ``speeds(c)`` gives what
        the interference model measured for ``job`` running concurrently beside ``c``."""
