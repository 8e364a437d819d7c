"""How the live controller plans with one policy: :class:`Planning`, and the ordering policies'.

The :class:`~dlsched.service.control.controller.Controller` is one path for every policy: it mirrors
the store, tells a scheduler of every change through its ``on_*`` notifications, asks it for a
:class:`~dlsched.scheduler.plan.Plan` each cycle and reconciles the plan with the back end. A
:class:`Planning` is what differs between policy families:

- which scheduler turns the policy's answers into plans: the simulator's
  :class:`~dlsched.scheduler.cycle.Scheduler` (an ordering policy's keys and a placer,
  :class:`OrderingPlanning`) or an :class:`~dlsched.scheduler.allocation.AllocationScheduler`
  over an allocation adapter (elastic policies,
  :class:`~dlsched.service.control.elastic_planning.ElasticPlanning`);
- whether a job its plan stopped stays its own while it stops (``keeps_stopping``): an
  allocation policy's answer covers every job it was given, so a job it resized or left out
  stays in its scheduler, still holding its GPUs, until its process is gone and it waits again
  (as a resize in the simulator keeps the job with its policy). An ordering scheduler would
  place such a job again on the GPUs it is giving up, so it forgets the job until it is queued
  again;
- which submissions it takes, how it ranks waiting jobs for the API, what a start of one of its
  jobs records before the attempt is marked started, and the batch its launches run with.

A planning reads the controller's active jobs through a :class:`JobBoard`, never its fields."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Protocol

from dlsched.cluster.state import ClusterState, Demand
from dlsched.perf.model import RIGID
from dlsched.placement.registry import create_placer
from dlsched.policy.base import Key, Policy
from dlsched.scheduler.allocation import AnyScheduler
from dlsched.scheduler.cycle import Scheduler
from dlsched.scheduler.plan import Start
from dlsched.scheduler.view import JobView
from dlsched.service.control.elastic_book import ElasticSpec
from dlsched.service.store.records import JobRow


class JobBoard(Protocol):
    """What a planning may read of the controller's jobs."""

    def row(self, seq: int) -> JobRow | None:
        """Active job ``seq``'s latest row (None once it left the controller)."""
        ...

    def reported_status(self, seq: int) -> Mapping[str, Any] | None:
        """The latest status job ``seq`` reported while it ran (None if none)."""
        ...

    def down_nodes(self) -> frozenset[str]:
        """Names of the nodes the back end reported lost, drained or down at this cycle."""
        ...


class Planning(ABC):
    """One policy family as the controller runs it (module docstring)."""

    name: str
    """The policy's name."""
    kind: int = RIGID
    """The job kind of this policy's jobs (:data:`dlsched.perf.model.KIND_NAMES`)."""
    preemptive: bool
    """Whether running jobs are the scheduler's active jobs too (else it only queues waiting
    jobs)."""
    keeps_stopping: bool = False
    """Whether a job its plan stopped (not cancelled) stays in its scheduler while it stops."""
    needs_estimate: bool = False
    """Whether a job without an expected run time gets the service's history estimate."""

    @abstractmethod
    def scheduler(self) -> AnyScheduler:
        """A new scheduler, empty, over the controller's cluster state (the controller rebuilds
        it from its mirror when it lost track)."""

    @abstractmethod
    def submission_problem(self, gpus: int, elastic: ElasticSpec | None) -> str | None:
        """Why a submission of ``gpus`` GPUs (elastic if ``elastic`` is given) is refused,
        naming the field, or None. Called from the API's threads."""

    def submitted(self, seq: int, elastic: ElasticSpec | None) -> None:  # noqa: B027 (optional)
        """Job ``seq`` was stored by the API with ``elastic`` (its spec, if elastic)."""

    @abstractmethod
    def rank_key(self, job: JobView, now: float) -> Key:
        """The key that orders waiting jobs for the API's queue positions (smaller first)."""

    def starting(self, start: Start, row: JobRow, owner: str) -> None:  # noqa: B027 (optional)
        """Called before ``start`` (of ``row``, pending) is marked started by service
        ``owner``: record what its attempt must run with, so a relaunch finds it."""

    def batch_size(self, row: JobRow) -> int | None:
        """The per-GPU batch ``row``'s current attempt launches with."""
        return row.batch_size


class OrderingPlanning(Planning):
    """An ordering policy (FIFO, SJF, Tiresias, ...) and a placer on the simulator's
    :class:`~dlsched.scheduler.cycle.Scheduler`: rigid jobs at the GPUs they asked for. The
    placer gets its text ``options`` (``--placement-opt``), so a topology placer's required
    level also decides which submissions can ever run."""

    def __init__(
        self,
        policy: Policy,
        placement: str,
        seed: int,
        state: ClusterState,
        options: Mapping[str, str] | None = None,
    ) -> None:
        self.policy = policy
        self.name = policy.name
        self.preemptive = policy.preemptive
        self.needs_estimate = policy.needs_estimate
        self.placement = placement
        self._state = state
        self._placer = create_placer(placement, seed, options)
        # Admission is checked against an empty cluster of its own (the API's threads call it).
        empty = ClusterState(state.spec, use_partitions=False)
        self._admission = Scheduler(policy, self._placer.clone(), empty)
        self._demands: dict[int, Demand] = {}
        self._lock = threading.Lock()

    def scheduler(self) -> Scheduler:
        return Scheduler(self.policy, self._placer, self._state)

    def infeasible_reason(self, gpus: int) -> str | None:
        """Why a job of ``gpus`` GPUs could never run on this cluster, or None."""
        with self._lock:
            demand = self._demands.get(gpus)
            if demand is None:
                demand = self._demands[gpus] = Demand(gpus)
            return self._admission.never_fits(0, demand)

    def submission_problem(self, gpus: int, elastic: ElasticSpec | None) -> str | None:
        if elastic is not None:
            return "elastic: this service's policy is not elastic; submit without --elastic"
        reason = self.infeasible_reason(gpus)
        return None if reason is None else f"infeasible: gpus={gpus}: {reason}"

    def rank_key(self, job: JobView, now: float) -> Key:
        return self.policy.key(job, now)
