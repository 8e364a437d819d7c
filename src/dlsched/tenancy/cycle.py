"""Kueue's scheduling cycle over an :class:`~dlsched.tenancy.admission.Admission`'s quota.

Kueue's scheduler (pkg/scheduler/scheduler.go, ``schedule``) runs cycles back to back; each
takes the head of every ClusterQueue's active queue, computes its flavor assignment against
one snapshot of the quota ("nomination"), orders the entries (those that fit without
borrowing first, then priority, then time queued; with fair sharing, by share) and processes
them in order: an entry that still fits reserves its quota; an entry that needs preemption
issues its evictions and stays pending until its victims have terminated; an entry that does
not fit, or no longer fits after the entries before it, is requeued. Requeued heads return to
the active queue (StrictFIFO, or a requeue Kueue makes immediate) or wait as inadmissible
until a change in their cohort tree can admit them (BestEffortFIFO).

:class:`KueueQueues` is that queue manager and cycle; the simulator's admission stage drives
it at :attr:`~dlsched.tenancy.model.KueueClock.cycle_period` intervals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlsched.tenancy.admission import Admission, Eviction, Workload


@dataclass
class CycleResult:
    """What one cycle did: workloads that reserved quota (in order), heads that issued
    evictions (they stay pending; their victims stay admitted and charged until
    :meth:`KueueQueues.terminated`), and whether the cycle made progress (Kueue's
    ``KeepGoing``: something was admitted or evicted)."""

    admitted: list[Workload] = field(default_factory=list)
    preempting: list[tuple[Workload, tuple[Eviction, ...]]] = field(default_factory=list)

    @property
    def progress(self) -> bool:
        return bool(self.admitted or self.preempting)


class KueueQueues:
    """Kueue's queue manager and scheduling cycle over ``admission`` (module docstring).

    ``submit`` a pending workload (``namespace``: its namespace, checked against its
    ClusterQueue's ``namespaceSelector``; None: not checked); ``cycle`` runs one scheduling
    cycle; ``terminated`` frees the quota of an evicted workload whose pods are gone (its
    caller submits it again when it should queue again); ``finished`` frees an admitted
    workload's quota. ``active`` and ``inadmissible`` list a ClusterQueue's pending
    workloads as Kueue's queue dumps do (``Dump`` and ``DumpInadmissible``)."""

    def __init__(self, admission: Admission) -> None:
        self.admission = admission

    def submit(self, wl: Workload, now: float, namespace: str | None = None) -> None:
        raise NotImplementedError

    def cycle(self, now: float) -> CycleResult:
        raise NotImplementedError

    def terminated(self, wl: Workload) -> None:
        raise NotImplementedError

    def finished(self, wl: Workload) -> None:
        raise NotImplementedError

    def active(self, cq: int) -> list[Workload]:
        raise NotImplementedError

    def inadmissible(self, cq: int) -> list[Workload]:
        raise NotImplementedError
