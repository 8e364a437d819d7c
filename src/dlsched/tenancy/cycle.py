"""Kueue's scheduling cycle over an :class:`~dlsched.tenancy.admission.Admission`'s quota.

Kueue's scheduler (pkg/scheduler/scheduler.go, ``schedule``; Kueue commit ff69552e) runs
cycles back to back. Each cycle, as modelled here:

1. **Heads.** Every ClusterQueue that is not stopped gives the head of its active queue:
   its sticky preemptor if it has one (a BestEffortFIFO queue's head that issued evictions
   keeps its place until it is admitted or found unschedulable), else the highest priority,
   then the oldest.
2. **Nomination.** Each head's flavor assignment is computed against the quota as the cycle
   found it (:mod:`dlsched.tenancy.flavor_assignment`), with its preemption targets when it
   needs preemption (:mod:`dlsched.tenancy.classic_preemption` or fair sharing's).
3. **Order.** Heads that borrow less high in their cohort tree come first (those within
   their nominal quota first of all), then higher priority, then older (with fair sharing:
   lowest share first).
4. **Processing**, in that order. No fit: requeued as ``NoFit``. Preemption with no
   candidates: requeued as ``PreemptionNoCandidates`` (a queue whose ``reclaimWithinCohort``
   is not ``Any`` then reserves the quota it could use, so that the entries after it in the
   cycle cannot take it). Targets that overlap another entry's victims of this cycle: the
   assignment is computed again as if those victims were gone; if it then fits, the entry
   waits for them (``PendingPreemption``) holding its quota for the rest of the cycle. An
   entry whose request no longer fits once the quota taken by the entries before it is
   counted (and the victims of this cycle are not) is skipped; else it takes the quota:
   a preempting entry issues its evictions (its victims stay admitted and charged, being
   terminated, until :meth:`KueueQueues.terminated`) and waits, any other entry is
   admitted.
5. **Requeue.** A head not admitted goes back: to the active queue when the requeue is
   immediate (StrictFIFO except on a namespace mismatch; otherwise a skip after nomination
   or a pending preemption), else among the inadmissible workloads, with every active
   workload of the same shape and priority (Kueue's scheduling-equivalence hashing, on by
   default). Inadmissible workloads of a cohort tree go back to the active queues when quota
   of the tree is released (a workload finished or terminated), as Kueue requeues them on
   those events.

With ``waitForPodsReady`` (:class:`~dlsched.tenancy.model.PodsReady`), an admitted workload
is unready until :meth:`KueueQueues.ready`; its caller evicts one still unready at the
timeout (:meth:`KueueQueues.not_ready`) and queues it again after its backoff; with
``blockAdmission`` nothing is admitted while one is unready.

Workloads whose namespace the ClusterQueue's ``namespaceSelector`` does not match wait as
inadmissible (a namespace's labels do not change in a run). A ClusterQueue with a
``stopPolicy`` other than ``None`` gives no head; ``HoldAndDrain`` also evicts what it had
admitted (:meth:`KueueQueues.drain`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dlsched.tenancy.active_queue import PendingQueue, shape_of
from dlsched.tenancy.admission import (
    FIT,
    NO_FIT,
    PREEMPTS,
    Admission,
    Eviction,
    Workload,
    queue_order,
)
from dlsched.tenancy.model import ANY, BEST_EFFORT_FIFO, STOP_NONE
from dlsched.tenancy.quota import EPS

# Why a head goes back to its queue (Kueue's RequeueReason): immediate requeues return to the
# active queue of a BestEffortFIFO ClusterQueue, the others make it inadmissible.
FAILED_AFTER_NOMINATION = "FailedAfterNomination"
PENDING_PREEMPTION = "PendingPreemption"
NO_FIT_REASON = "NoFit"
NO_CANDIDATES = "PreemptionNoCandidates"
NAMESPACE_MISMATCH = "NamespaceMismatch"
_IMMEDIATE = frozenset({FAILED_AFTER_NOMINATION, PENDING_PREEMPTION})


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


@dataclass
class _Entry:
    """A head in a cycle: its assignment, targets, and why it goes back if it does."""

    wl: Workload
    mode: int
    request: dict[int, float]
    borrows: bool
    flavors: tuple[str, ...]
    targets: list[Eviction]
    level: int = 0
    requeue: str = FAILED_AFTER_NOMINATION


class KueueQueues:
    """Kueue's queue manager and scheduling cycle over ``admission`` (module docstring).

    ``submit`` a pending workload (``namespace``: its namespace, checked against its
    ClusterQueue's ``namespaceSelector``; None: not checked); ``cycle`` runs one scheduling
    cycle; ``terminated`` frees the quota of an evicted workload whose pods are gone (its
    caller submits it again when it should queue again); ``finished`` frees an admitted
    workload's quota; ``withdraw`` takes a pending workload out. ``active`` and
    ``inadmissible`` list a ClusterQueue's pending workloads as Kueue's queue dumps do
    (``Dump`` and ``DumpInadmissible``), in queue order."""

    def __init__(self, admission: Admission) -> None:
        self.admission = admission
        n = len(admission.cqs)
        self._ready: set[int] = set()
        """ClusterQueues whose active queue is not empty."""
        self._pending = [PendingQueue(cq, self._ready) for cq in range(n)]
        # Shapes (with priority) bulk-moved to inadmissible per queue: a new workload of one
        # goes there directly until the tree's inadmissible workloads are requeued.
        self._bulk: list[set[Any]] = [set() for _ in range(n)]
        self._preemptor: list[Workload | None] = [None] * n
        self._best_effort = [cq.queueing_strategy == BEST_EFFORT_FIFO for cq in admission.cqs]
        self._stopped = [cq.stop_policy != STOP_NONE for cq in admission.cqs]
        self._always_reclaims = [cq.preemption.reclaim_within_cohort == ANY for cq in admission.cqs]
        self.terminating: dict[Workload, Workload] = {}
        """Victims being terminated -> the workload that evicted them."""
        clock = admission.tenancy.clock
        self.pods_ready = clock.pods_ready if clock.mode == "cycle" else None
        self.unready: dict[Workload, None] = {}
        """Admitted workloads whose pods are not all running yet (with ``waitForPodsReady``)."""
        self._queued_at: dict[Workload, float] = {}
        # Queue-order time of workloads requeued after a PodsReady timeout (Kueue's
        # requeuingStrategy timestamp Eviction); others are ordered by creation.

    # ---- the queues ----------------------------------------------------------------------
    def submit(self, wl: Workload, now: float, namespace: str | None = None) -> None:
        """``wl`` waits for admission (new, or back after an eviction)."""
        adm = self.admission
        if wl.options is None:
            adm.flavor_options(wl)
        cq = wl.cq
        if namespace is not None and not adm.namespace_matches(cq, namespace):
            self._pending[cq].park(wl, self._order(wl), grouped=False)
            return
        if self._best_effort[cq] and shape_of(wl) in self._bulk[cq]:
            self._pending[cq].park(wl, self._order(wl), grouped=True)
            return
        self._pending[cq].push(wl, self._order(wl))

    def _order(self, wl: Workload) -> tuple[int, float, int]:
        at = self._queued_at.get(wl)
        return queue_order(wl) if at is None else (-wl.priority, at, wl.seq)

    def withdraw(self, wl: Workload) -> bool:
        """``wl`` leaves without being admitted; False if it was not pending."""
        cq = wl.cq
        if self._preemptor[cq] is wl:
            self._preemptor[cq] = None
        return self._pending[cq].remove(wl)

    def active(self, cq: int) -> list[Workload]:
        """The workloads of ``cq``'s active queue, in queue order."""
        found = self._pending[cq].active()
        sticky = self._preemptor[cq]
        if sticky is not None and self._pending[cq].is_active(sticky):
            found.remove(sticky)
            found.insert(0, sticky)
        return found

    def inadmissible(self, cq: int) -> list[Workload]:
        """The inadmissible workloads of ``cq``, in queue order."""
        return self._pending[cq].inadmissible()

    def pending(self, cq: int) -> int:
        queue = self._pending[cq]
        return queue.n_active + queue.n_inadmissible

    def counts(self, cq: int) -> tuple[int, int]:
        """How many workloads of ``cq`` are active and how many inadmissible."""
        queue = self._pending[cq]
        return queue.n_active, queue.n_inadmissible

    def _head(self, cq: int) -> Workload | None:
        """Pop ``cq``'s head (module docstring, step 1)."""
        sticky = self._preemptor[cq]
        queue = self._pending[cq]
        if sticky is not None and self._best_effort[cq] and queue.is_active(sticky):
            queue.remove(sticky)
            return sticky
        return queue.pop()

    def _requeue(self, e: _Entry) -> None:
        wl, cq = e.wl, e.wl.cq
        reason = e.requeue
        if reason == PENDING_PREEMPTION:
            self._preemptor[cq] = wl
        elif self._preemptor[cq] is wl:
            self._preemptor[cq] = None
        immediate = (
            reason != NAMESPACE_MISMATCH if not self._best_effort[cq] else reason in _IMMEDIATE
        )
        queue = self._pending[cq]
        if immediate:
            queue.push(wl, self._order(wl))
            return
        if self._best_effort[cq] and reason in (NO_FIT_REASON, NO_CANDIDATES):
            shape = shape_of(wl)
            self._bulk[cq].add(shape)
            queue.park(wl, self._order(wl), grouped=True)
            queue.park_shape(shape)
            return
        queue.park(wl, self._order(wl), grouped=False)

    def _requeue_tree(self, cq: int) -> None:
        """Quota of ``cq``'s tree was released: its inadmissible workloads become active."""
        for other in self.admission.tree_queues(cq):
            self._bulk[other].clear()
            self._pending[other].wake()

    # ---- quota released ------------------------------------------------------------------
    def finished(self, wl: Workload) -> None:
        """Admitted ``wl`` ended: its quota is free."""
        self.unready.pop(wl, None)
        self._queued_at.pop(wl, None)
        self.admission.release(wl)
        self._requeue_tree(wl.cq)

    def ready(self, wl: Workload) -> None:
        """Admitted ``wl``'s pods all run (Kueue's ``PodsReady`` condition)."""
        self.unready.pop(wl, None)

    def not_ready(self, wl: Workload, now: float) -> None:
        """Admitted ``wl`` is evicted because its pods were not ready in time (reason
        ``PodsReadyTimeout``): its quota is free, and when it queues again (:meth:`submit`,
        after its backoff) it is ordered by ``now`` (requeuing timestamp ``Eviction``) or by
        its creation (``Creation``)."""
        self.unready.pop(wl, None)
        self.admission.release(wl)
        self._requeue_tree(wl.cq)
        if self.pods_ready is not None and self.pods_ready.requeue_by_eviction:
            self._queued_at[wl] = now

    def terminated(self, wl: Workload) -> None:
        """Evicted ``wl``'s pods are gone: its quota is free (submit it to queue it again)."""
        self.terminating.pop(wl, None)
        self.unready.pop(wl, None)
        wl.evicting = False
        self.admission.evicting -= 1
        self.admission.release(wl)
        self._requeue_tree(wl.cq)

    def drain(self) -> list[Eviction]:
        """Evict what ``HoldAndDrain`` ClusterQueues have admitted (reason
        ``ClusterQueueStopped``)."""
        adm = self.admission
        out: list[Eviction] = []
        for cq, queue in enumerate(adm.cqs):
            if queue.stop_policy != "HoldAndDrain":
                continue
            for wl in list(adm.admitted[cq]):
                if not wl.evicting:
                    self._evict(wl, None)
                    out.append(Eviction(wl, "ClusterQueueStopped"))
        return out

    def _evict(self, victim: Workload, by: Workload | None) -> None:
        victim.evicting = True
        self.admission.evicting += 1
        if by is not None:
            self.terminating[victim] = by

    # ---- the cycle -----------------------------------------------------------------------
    def cycle(self, now: float) -> CycleResult:
        """One scheduling cycle at ``now`` (module docstring)."""
        adm = self.admission
        quota = adm.quota
        result = CycleResult()
        heads = [
            wl
            for cq in sorted(self._ready)
            if not self._stopped[cq] and (wl := self._head(cq)) is not None
        ]
        if not heads:
            return result
        adm.at(now)
        entries = [self._nominate(wl) for wl in heads]
        if adm.fair:
            entries.sort(
                key=lambda e: (
                    quota.share(e.wl.cq, e.request),
                    -e.wl.priority,
                    e.wl.created,
                    e.wl.seq,
                )
            )
        else:
            entries.sort(key=lambda e: (e.level, -e.wl.priority, e.wl.created, e.wl.seq))
        # Quota held for the rest of the cycle by entries not admitted (preemptors, deferred
        # fits, reservations), given back when the cycle ends.
        held: list[tuple[int, dict[int, float]]] = []
        victims: dict[Workload, None] = {}
        for e in entries:
            self._process(e, now, held, victims, result)
        for cq, request in reversed(held):
            quota.remove(cq, request)
        admitted = set(result.admitted)
        for e in entries:
            if e.wl not in admitted:
                self._requeue(e)
        return result

    def _nominate(self, wl: Workload) -> _Entry:
        adm = self.admission
        a = adm.assignment(wl)
        targets = adm.evictions_for(wl, a) if a.mode == PREEMPTS else []
        # Kueue's borrowing of a preempting entry is what it borrows once its targets are gone.
        with _without(adm, dict.fromkeys(t.workload for t in targets)):
            level = adm.borrowing_level(wl, a.request)
        return _Entry(wl, a.mode, a.request, level > 0, a.flavors, targets, level)

    def _process(
        self,
        e: _Entry,
        now: float,
        held: list[tuple[int, dict[int, float]]],
        victims: dict[Workload, None],
        result: CycleResult,
    ) -> None:
        """Step 4 of the module docstring for one entry (Kueue's ``processEntry``)."""
        adm = self.admission
        cq = e.wl.cq
        if victims and any(t.workload in victims for t in e.targets):
            # Kueue's RecomputeAssignmentUponPreemptionTargetsOverlap (on by default): the
            # assignment as if this cycle's victims were gone.
            with _without(adm, victims, searched=True):
                again = self._nominate(e.wl)
            e.mode, e.request, e.borrows = again.mode, again.request, again.borrows
            e.flavors, e.targets = again.flavors, again.targets
            if e.mode == FIT:
                # Kueue's DeferredFit: it fits once those preemptions complete.
                e.requeue = PENDING_PREEMPTION
                self._hold(cq, e.request, held)
                return
        if e.mode == NO_FIT:
            e.requeue = NO_FIT_REASON
            return
        if e.mode == PREEMPTS and not e.targets:
            e.requeue = NO_CANDIDATES
            if not self._always_reclaims[cq]:
                self._hold(cq, self._reservable(e), held)
            return
        if any(t.workload in victims for t in e.targets) or not self._fits(e, victims):
            e.requeue = FAILED_AFTER_NOMINATION
            return
        for t in e.targets:
            victims[t.workload] = None
        if e.mode == PREEMPTS:
            fresh = tuple(t for t in e.targets if not t.workload.evicting)
            for t in fresh:
                self._evict(t.workload, e.wl)
            self._hold(cq, e.request, held)
            e.requeue = PENDING_PREEMPTION
            if fresh:
                result.preempting.append((e.wl, fresh))
            return
        pods_ready = self.pods_ready
        if pods_ready is not None:
            if pods_ready.block_admission and self.unready:
                # Kueue's blockAdmission: nothing is admitted while an admitted workload's
                # pods are not ready.
                e.requeue = FAILED_AFTER_NOMINATION
                return
            self.unready[e.wl] = None
        adm.reserve(e.wl, e.request, e.flavors, now)
        if self._preemptor[cq] is e.wl:
            self._preemptor[cq] = None
        result.admitted.append(e.wl)

    def _fits(self, e: _Entry, victims: dict[Workload, None]) -> bool:
        """Whether ``e``'s request fits once this cycle's victims and its own are gone."""
        gone = dict(victims)
        for t in e.targets:
            gone[t.workload] = None
        with _without(self.admission, gone):
            return self.admission.quota.fits(e.wl.cq, e.request)

    def _hold(
        self, cq: int, request: dict[int, float], held: list[tuple[int, dict[int, float]]]
    ) -> None:
        """``cq`` takes ``request`` for the rest of the cycle (given back at its end)."""
        if request:
            self.admission.quota.add(cq, request)
            held.append((cq, request))

    def _reservable(self, e: _Entry) -> dict[int, float]:
        """What a preempting entry with no candidates holds (Kueue's
        ``quotaResourcesToReserve``): when it borrows, its request up to its borrowing
        limit, else up to its nominal quota."""
        quota = self.admission.quota
        cq = e.wl.cq
        out: dict[int, float] = {}
        for fr, amount in e.request.items():
            used = quota.usage[cq].get(fr, 0.0)
            nominal = quota.nominal[cq].get(fr, 0.0)
            if e.borrows:
                limit = quota.borrow_limit[cq].get(fr)
                keep = amount if limit is None else min(amount, nominal + limit - used)
            else:
                keep = max(0.0, min(amount, nominal - used))
            if keep > EPS:
                out[fr] = keep
        return out


class _without:
    """Within the block, ``workloads`` (admitted) are not charged to the quota; with
    ``searched``, they are also not among their queues' admitted workloads, so that a
    preemption search inside the block cannot take them (and uncharge them) a second time.
    On exit all is as it was, in the same order."""

    def __init__(
        self, adm: Admission, workloads: dict[Workload, None], searched: bool = False
    ) -> None:
        self.adm = adm
        self.workloads = [w for w in workloads if w.assignment is not None]
        self.searched = searched
        self._saved: dict[int, dict[Workload, None]] = {}

    def __enter__(self) -> None:
        adm = self.adm
        gone = set(self.workloads)
        for w in self.workloads:
            assert w.assignment is not None
            adm.quota.remove(w.cq, w.assignment)
            if self.searched and w.cq not in self._saved:
                self._saved[w.cq] = kept = adm.admitted[w.cq]
                adm.admitted[w.cq] = {x: None for x in kept if x not in gone}

    def __exit__(self, *exc: object) -> None:
        for cq, kept in self._saved.items():
            self.adm.admitted[cq] = kept
        self._saved = {}
        for w in reversed(self.workloads):
            assert w.assignment is not None
            self.adm.quota.add(w.cq, w.assignment)
