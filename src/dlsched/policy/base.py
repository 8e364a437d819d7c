"""The policy interface: which jobs should run, in what order of priority.

An ordering policy implements only :meth:`Policy.key`: smaller keys run first. The scheduling
cycle (``dlsched.scheduler.cycle``) turns keys into a :class:`~dlsched.scheduler.plan.Plan`
with a placer. Policies see read-only job views, never the simulator or a back end.

Contract:
- ``key(job, now)`` is a pure function of the view and ``now``; ties must be broken inside the
  key (e.g. by submit time and ``job.seq``) so runs are deterministic.
- A waiting job's key is computed once, when it is queued, unless the policy sets
  ``waiting_key_fixed = False`` (e.g. keys that age): then waiting jobs are re-keyed at every
  cycle. A preemptive policy's keys are also recomputed every cycle for running jobs.
- ``interval`` is the round length in seconds for round-based policies (decisions only at
  multiples of it), or None for event-driven ones (a cycle after every event time).
- ``next_change(job, now)`` tells when a running job's key will next change on its own, so the
  driver can wake up then instead of polling; None if never.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from dlsched.scheduler.view import JobView

Key = tuple[float, ...]


class Policy(ABC):
    """Base of all ordering policies. Subclasses are (frozen) dataclasses holding options."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    preemptive: ClassVar[bool] = False
    needs_estimate: ClassVar[bool] = False
    """Whether keys use ``job.estimate`` (the driver must then run a duration estimator)."""
    needs_run_time: ClassVar[bool] = False
    """Whether keys use the job's run time (``duration``, ``remaining_time``): such a policy
    cannot order jobs without one (elastic and parameter-server jobs)."""
    waiting_key_fixed: ClassVar[bool] = True
    colocates: ClassVar[bool] = False
    """Whether the policy may start a job on a running job's GPUs (time-sharing; see
    :mod:`dlsched.policy.colocation`)."""

    @property
    def interval(self) -> float | None:
        return None

    @property
    def backfill(self) -> bool:
        """Non-preemptive only: may a later job start when an earlier one does not fit?"""
        return False

    @abstractmethod
    def key(self, job: JobView, now: float) -> Key:
        """Priority of ``job`` at ``now``; smaller runs first."""

    def next_change(self, job: JobView, now: float) -> float | None:
        return None


@dataclass(frozen=True)
class NonPreemptivePolicy(Policy, ABC):
    """Base of non-preemptive ordering policies. ``allow_backfill``: let later jobs start when
    the head of the queue does not fit (default off: strict head-of-line blocking, as in the
    Helios evaluation)."""

    allow_backfill: bool = False

    @property
    def backfill(self) -> bool:
        return self.allow_backfill
