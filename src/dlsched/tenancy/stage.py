"""The admission stage the simulator puts in front of its ordering schedulers.

A job that arrives is not shown to its policy at once: it becomes a Kueue workload in its
ClusterQueue (through its LocalQueue, :mod:`~dlsched.tenancy.queue_map`) and waits for
admission (:class:`~dlsched.tenancy.admission.Admission`: quota, borrowing, reclaim and
preemption). Admitted jobs go to the ordering policy and placer as usual; the evictions an
admission needs come back as the preemptions of a :class:`~dlsched.scheduler.plan.Plan`, and the
evicted jobs wait for admission again. A job's quota is what it asked for (its GPUs, CPUs and
memory), held from admission until it finishes or is evicted.

The stage also keeps what the run reports per ClusterQueue (:meth:`AdmissionStage.report`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import nan as NAN
from typing import Any, NamedTuple

import numpy as np

from dlsched.cluster.state import WHOLE
from dlsched.tenancy.admission import CAUSES, Admission, DryRun, Eviction, Workload, queue_order
from dlsched.tenancy.cycle import KueueQueues
from dlsched.tenancy.errors import TenancyError
from dlsched.tenancy.grouping import group_order
from dlsched.tenancy.kueue_metrics import KueueCounters
from dlsched.tenancy.model import (
    CPU,
    GPU,
    MEMORY,
    PODS,
    STOP_NONE,
    LocalQueue,
    Tenancy,
    resource_kind,
)
from dlsched.tenancy.queue_map import QueueMap


class Decisions(NamedTuple):
    """What admission decided at one instant: the jobs now admitted, and the admitted jobs
    evicted (with the cause of each: ``priority``, ``reclaim`` or ``fair_share``), which the
    caller stops and gives back with :meth:`AdmissionStage.requeue` once stopped."""

    admitted: list[Any]
    evicted: list[tuple[Any, str]]


@dataclass(frozen=True, slots=True, eq=False)
class _Kind:
    """What the workloads of one demand in one ClusterQueue share: why they can never be
    admitted (else None), their requests, shape number, flavor options and fast path (slotted:
    read on every arrival)."""

    demand: Any
    reason: str | None
    requests: dict[str, float]
    shape: int
    options: Any
    fast: Any


class AdmissionStage:
    """Admission of one run's jobs (module docstring), given each trace row's VC and user. A
    queue map naming queues or classes the manifests lack is refused here; a job that maps to
    no LocalQueue is set aside when it arrives, with the reason."""

    def __init__(
        self,
        tenancy: Tenancy,
        queue_map: QueueMap,
        gpu_types: Iterable[str],
        vcs: Sequence[str | None],
        users: Sequence[str | None],
    ) -> None:
        queue_map.check(tenancy)
        self.tenancy = tenancy
        self.admission = Admission(tenancy, gpu_types)
        self.clock = tenancy.clock
        self.queues = KueueQueues(self.admission) if self.clock.mode == "cycle" else None
        """Kueue's queues and cycle (None: the fixpoint clock, the Admission's own)."""
        self.pods_ready = self.queues.pods_ready if self.queues is not None else None
        """``waitForPodsReady`` (only under Kueue's cycle)."""
        if tenancy.clock.pods_ready is not None and self.queues is None:
            raise TenancyError(
                f"{tenancy.source}: waitForPodsReady needs Kueue's cycle clock, not fixpoint"
            )
        self._requeues: dict[Any, int] = {}
        self.next_cycle: float | None = None
        """When the next scheduling cycle is due after :meth:`run` (None: at the next
        change), under a cycle period."""
        index = self.admission.quota.index
        self.unmapped: dict[int, str] = {}
        # Per (VC, user) of the trace, numbered as they first appear: its ClusterQueue,
        # priority and the admitted workloads of its tree at that priority (None for a queue
        # it lacks); each row's number.
        pairs: dict[tuple[str | None, str | None], int] = {}
        rows = zip(vcs, users, strict=True)
        self._row_target = [pairs.setdefault(pair, len(pairs)) for pair in rows]
        self._targets: list[tuple[int, int, dict[Workload, None] | None]] = []
        for vc, user in pairs:
            cq, priority = self._resolve(queue_map, vc, user, index)
            level = self.admission.level(cq, priority) if cq >= 0 else None
            self._targets.append((cq, priority, level))
        self.names = list(tenancy.cluster_queues)
        self._workloads: dict[Any, Workload] = {}
        self._seq = 0
        self.preemptions = [dict.fromkeys(CAUSES, 0) for _ in self.names]
        self.kueue = KueueCounters(len(self.names))
        # When an evicted job was requeued (Kueue's admission wait counts from then).
        self._requeued: dict[Any, float] = {}
        quota = self.admission.quota
        gpu_frs = {fr for fr, (_, name) in quota.fr_names.items() if resource_kind(name) == GPU}
        self._gpu_frs = [[fr for fr in quota.nominal[cq] if fr in gpu_frs] for cq in index.values()]
        # A queue with one GPU flavor-resource (most): its figures without the general sums.
        self._one_gpu_fr = [frs[0] if len(frs) == 1 else None for frs in self._gpu_frs]
        self._nominal_gpus = [self.gpu_usage(cq)[0] for cq in range(len(self._gpu_frs))]
        self._usage = quota.usage
        self._start: float | None = None
        # (time, queue, GPUs in use, GPUs borrowed) at each change: the quota time series.
        self._changes = array("d")
        # Per (queue, shape): why it can never be admitted, or its flavor options and fast path.
        self._checked: list[dict[int, tuple[str | None, Any, Any]]] = [{} for _ in self.names]
        self._shapes: dict[Any, int] = {}
        self._requests: list[dict[str, float]] = []
        # Per queue, by the identity of a demand object: what its workloads share (_Kind).
        self._kinds: list[dict[int, _Kind]] = [{} for _ in self.names]

    @property
    def row_cq(self) -> list[int]:
        """Each trace row's ClusterQueue (negative: none, the reason in :attr:`unmapped`)."""
        targets = self._targets
        return [targets[t][0] for t in self._row_target]

    def _resolve(
        self, queue_map: QueueMap, vc: str | None, user: str | None, index: dict[str, int]
    ) -> tuple[int, int]:
        """(ClusterQueue, priority) of a job of ``vc`` and ``user``; ClusterQueue -1 (the
        reason kept in :attr:`unmapped`) when it maps to no LocalQueue."""
        ref = queue_map.queue_ref(vc, user)
        try:
            if ref is None:
                raise TenancyError(f"queue map {queue_map.source} names none")
            lq = self.tenancy.local_queue(ref)
        except TenancyError as exc:
            missing = len(self.unmapped) + 1
            detail = "no such LocalQueue" if ref is not None else str(exc)
            self.unmapped[-missing] = f"vc {vc!r}, user {user!r}: LocalQueue {ref!r}: {detail}"
            return -missing, 0
        closed = self._closed(lq)
        if closed is not None:
            missing = len(self.unmapped) + 1
            self.unmapped[-missing] = f"vc {vc!r}, user {user!r}: {closed}"
            return -missing, 0
        return index[lq.cluster_queue], self.tenancy.priority(queue_map.priority_class(vc, user))

    # ---- jobs in and out ---------------------------------------------------------------------
    def arrive(self, job: Any, row: int, demand: Any, now: float) -> str | None:
        """``job`` (trace row ``row``) waits for admission, asking its ``demand`` (GPUs, CPUs,
        memory in MiB, GPU type; one pod); or the reason it can never be admitted (then it does
        not wait). Demands are compared by value, so equal ones share their checks."""
        cq, priority, level = self._targets[self._row_target[row]]
        if cq < 0:
            return self.unmapped[cq]
        return self._enter(job, cq, priority, level, demand, now)

    def arrive_in(self, job: Any, queue_ref: str, demand: Any, now: float) -> str | None:
        """``job`` waits for admission in LocalQueue ``queue_ref`` (``namespace/name``, or a
        name one namespace has), at the default priority, as :meth:`arrive` (a job of the live
        service, which names its queue itself); or the reason it can never be admitted."""
        cq = self.cluster_queue(queue_ref)
        if isinstance(cq, str):
            return cq
        priority = self.tenancy.priority(None)
        return self._enter(job, cq, priority, self.admission.level(cq, priority), demand, now)

    def adopt(self, job: Any, queue_ref: str, demand: Any, now: float) -> bool:
        """Charge ``job``, found already running (a restarted service), to LocalQueue
        ``queue_ref`` at once; False (nothing charged) if its quota has no room for it."""
        reason = self.arrive_in(job, queue_ref, demand, now)
        if reason is not None:
            return False
        wl = self._workloads[job]
        self._withdraw(wl)
        if self.admission.admit_now(wl, now):
            self._note(wl.cq, now)
            return True
        del self._workloads[job]
        return False

    def probe(self, queue_ref: str, demand: Any) -> Workload | str:
        """A workload for ``demand`` in LocalQueue ``queue_ref`` at the default priority, not
        submitted (for :meth:`Admission.dry_run`), or why there can be none."""
        cq = self.cluster_queue(queue_ref)
        if isinstance(cq, str):
            return cq
        kind = self._kind(cq, demand)
        if kind.reason is not None:
            return kind.reason
        priority = self.tenancy.priority(None)
        return Workload(None, cq, priority, math.inf, 1 << 62, kind.requests, demand.gpu_type,
                        kind.shape, kind.options, kind.fast)  # fmt: skip

    def withdraw(self, job: Any) -> None:
        """A waiting ``job`` leaves without being admitted (cancelled)."""
        wl = self._workloads.pop(job, None)
        if wl is not None:
            self._withdraw(wl)

    def _withdraw(self, wl: Workload) -> None:
        if self.queues is not None:
            self.queues.withdraw(wl)
        else:
            self.admission.withdraw(wl)

    def pending(self, cq: int) -> tuple[int, int]:
        """ClusterQueue ``cq``'s workloads waiting for admission: (active, inadmissible)
        as Kueue counts them (under the fixpoint clock every waiting workload is active)."""
        if self.queues is not None:
            return self.queues.counts(cq)
        return self.admission.pending_count[cq], 0

    def dry_run(self, wl: Workload) -> DryRun:
        """:meth:`Admission.dry_run` of probe ``wl`` (:meth:`probe`), with the waiting
        workloads ahead of it counted in whichever queues this stage's clock keeps."""
        found = self.admission.dry_run(wl)
        if self.queues is None:
            return found
        key = queue_order(wl)
        waiting = [*self.queues.active(wl.cq), *self.queues.inadmissible(wl.cq)]
        return found._replace(ahead=sum(1 for w in waiting if queue_order(w) < key))

    def cluster_queue(self, queue_ref: str) -> int | str:
        """The ClusterQueue index LocalQueue ``queue_ref`` feeds, or why none admits its
        workloads: no such LocalQueue, a stopped queue, or a ClusterQueue whose
        ``namespaceSelector`` does not take the LocalQueue's namespace (a namespace's labels
        do not change during a run, so such a workload would wait for ever)."""
        try:
            lq = self.tenancy.local_queue(queue_ref)
        except TenancyError as exc:
            return str(exc)
        closed = self._closed(lq)
        return closed if closed is not None else self.admission.quota.index[lq.cluster_queue]

    def _closed(self, lq: LocalQueue) -> str | None:
        """Why no workload of ``lq`` is ever admitted (see :meth:`cluster_queue`), or None."""
        if lq.stop_policy != STOP_NONE:
            return f"LocalQueue {lq.ref} is stopped (stopPolicy {lq.stop_policy})"
        cq = self.admission.quota.index[lq.cluster_queue]
        policy = self.admission.cqs[cq].stop_policy
        if policy != STOP_NONE:
            return f"ClusterQueue {lq.cluster_queue!r} is stopped (stopPolicy {policy})"
        if not self.admission.namespace_matches(cq, lq.namespace):
            return (
                f"ClusterQueue {lq.cluster_queue!r}'s namespaceSelector does not match "
                f"namespace {lq.namespace!r} of LocalQueue {lq.ref}"
            )
        return None

    def _enter(
        self,
        job: Any,
        cq: int,
        priority: int,
        level: dict[Workload, None] | None,
        demand: Any,
        now: float,
    ) -> str | None:
        # The simulator hands the same object for equal demands, so their kind is found by
        # identity (the object is kept in the kind, so its id is not reused).
        kind = self._kinds[cq].get(id(demand))
        if kind is None or kind.demand is not demand:
            kind = self._kinds[cq][id(demand)] = self._kind(cq, demand)
        if kind.reason is not None:
            return kind.reason
        self._seq += 1
        # By position: a keyword argument costs a third of the construction.
        wl = Workload(
            job,
            cq,
            priority,
            now,
            self._seq,
            kind.requests,
            demand.gpu_type,
            kind.shape,
            kind.options,
            kind.fast,
            level,
        )
        self._workloads[job] = wl
        if self.queues is not None:
            self.queues.submit(wl, now)
        else:
            self.admission.submit(wl)
        return None

    def _kind(self, cq: int, demand: Any) -> _Kind:
        """What workloads of ``demand`` in ``cq`` share. Equal demands share one small shape
        number, by which the admission keys its checks."""
        shape = self._shape(demand)
        checks = self._checked[cq]
        checked = checks.get(shape)
        if checked is None:
            checked = checks[shape] = self._check(cq, shape, demand.gpu_type)
        return _Kind(demand, checked[0], self._requests[shape], shape, checked[1], checked[2])

    def _check(self, cq: int, shape: int, gpu_type: str | None) -> tuple[str | None, Any, Any]:
        """For workloads of ``shape`` in ``cq``: why they can never be admitted, or None and
        their flavor options and fast path."""
        probe = Workload(None, cq, 0, 0.0, 0, self._requests[shape], gpu_type, shape)
        reason = self.admission.never_admitted(probe)
        if reason is not None:
            return reason, None, None
        self.admission.flavor_options(probe)
        return None, probe.options, probe.fast

    def _shape(self, demand: Any) -> int:
        """The shape number of ``demand`` (equal demands, one number)."""
        shape = self._shapes.get(demand)
        if shape is None:
            shape = self._shapes[demand] = len(self._shapes)
            # A GPU share is charged its fraction, as Kueue charges a partitioned device (a
            # MIG slice is one unit of its own, smaller resource): two half-GPU pods fill one
            # GPU of quota, not two.
            gpus = demand.gpus * demand.milli / WHOLE
            asked = {GPU: float(gpus), CPU: demand.cpus, MEMORY: demand.memory_mib}
            requests = {k: v for k, v in asked.items() if v}
            requests[PODS] = 1.0
            self._requests.append(requests)
        return shape

    def requeue(self, job: Any, now: float) -> None:
        """An evicted job, now stopped, waits for admission again (under Kueue's cycle its
        quota is free only now: its pods have terminated)."""
        wl = self._workloads[job]
        if self.queues is not None:
            self.queues.terminated(wl)
            self._note(wl.cq, now)
            self.queues.submit(wl, now)
        else:
            self.admission.submit(wl)

    def ready(self, job: Any) -> None:
        """Admitted ``job`` started: its pods are ready (``waitForPodsReady``)."""
        assert self.queues is not None
        wl = self._workloads.get(job)
        if wl is not None:
            self.queues.ready(wl)

    def pods_ready_timeout(self, job: Any, admitted: float, now: float) -> float | str | None:
        """``waitForPodsReady``'s timeout of ``job``'s admission at ``admitted`` came at
        ``now``: None if its pods became ready (or that admission is over); else it is evicted
        (reason ``PodsReadyTimeout``, its quota free) and this returns the seconds after which
        it queues again (:meth:`resubmit`), or, past ``backoffLimitCount`` requeues, why it is
        deactivated (it no longer waits)."""
        queues, pods_ready = self.queues, self.pods_ready
        assert queues is not None and pods_ready is not None
        wl = self._workloads.get(job)
        if wl is None or wl not in queues.unready or wl.admitted_at != admitted:
            return None
        queues.not_ready(wl, now)
        evicted = self.kueue.evicted[wl.cq]
        evicted["PodsReadyTimeout"] = evicted.get("PodsReadyTimeout", 0) + 1
        self._note(wl.cq, now)
        n = self._requeues[job] = self._requeues.get(job, 0) + 1
        limit = pods_ready.backoff_limit
        if limit is not None and n > limit:
            del self._workloads[job]
            return (
                f"deactivated by waitForPodsReady: its pods were not ready within "
                f"{pods_ready.timeout:g} s after {n} admissions (backoffLimitCount {limit})"
            )
        return pods_ready.backoff(n)

    def resubmit(self, job: Any, now: float) -> None:
        """``job``, evicted by a PodsReady timeout, queues again after its backoff."""
        assert self.queues is not None
        self._requeued[job] = now
        self.queues.submit(self._workloads[job], now)

    def finish(self, job: Any, now: float) -> None:
        """An admitted job ended: its quota is free again."""
        wl = self._workloads.pop(job)
        if self.queues is not None:
            self.queues.finished(wl)
        else:
            self.admission.release(wl)
        self.kueue.finished[wl.cq] += 1
        self._note(wl.cq, now)

    def queue_of(self, job: Any) -> str:
        return self.names[self._workloads[job].cq]

    def gpu_type_of(self, job: Any) -> str | None:
        """The GPU type the flavors an admitted job got select (None: any; always None
        when :attr:`typed_flavors` is false)."""
        return self.admission.gpu_type_of(self._workloads[job])

    @property
    def typed_flavors(self) -> bool:
        """Whether some flavor selects a GPU type (else no admission changes a job's)."""
        return self.admission.typed

    # ---- the stage ---------------------------------------------------------------------------
    def run(self, now: float) -> Decisions:
        """Admit what can be admitted at ``now`` (module docstring); evicted jobs must be
        stopped and then given back with :meth:`requeue`. Under Kueue's cycle with a cycle
        period, one cycle runs and :attr:`next_cycle` says when the next one is due (None:
        this one made no progress, so the next waits for a change)."""
        if self._start is None:
            self._start = now
        out = Decisions([], [])
        if self.queues is None:
            for wl, evictions in self.admission.schedule(now):
                self._evicted(wl.cq, evictions, now, out)
                self._admitted(wl, now, out)
            return out
        self.next_cycle = None
        period = self.clock.cycle_period
        while True:
            result = self.queues.cycle(now)
            for preemptor, evictions in result.preempting:
                self._evicted(preemptor.cq, evictions, now, out)
            for wl in result.admitted:
                self._admitted(wl, now, out)
            if not result.progress:
                return out
            if period > 0:
                self.next_cycle = now + period
                return out

    def _admitted(self, wl: Workload, now: float, out: Decisions) -> None:
        self._note(wl.cq, now)
        since = self._requeued.pop(wl.key, None) if self._requeued else None
        self.kueue.waits[wl.cq].append(now - (wl.created if since is None else since))
        out.admitted.append(wl.key)

    def _evicted(self, cq: int, evictions: Sequence[Eviction], now: float, out: Decisions) -> None:
        """Count the evictions a workload of ``cq`` needed."""
        for ev in evictions:
            victim = ev.workload
            self.preemptions[victim.cq][ev.cause] += 1
            self.kueue.preempt(cq, victim.cq, ev.reason)
            self._requeued[victim.key] = now
            self._note(victim.cq, now)
            out.evicted.append((victim.key, ev.cause))

    # ---- what the run reports ----------------------------------------------------------------
    def gpu_usage(self, cq: int) -> tuple[float, float, float]:
        """ClusterQueue ``cq``'s GPUs now: (nominal quota, in use by its admitted jobs, of
        those borrowed beyond its nominal quota)."""
        quota = self.admission.quota
        frs = self._gpu_frs[cq]
        if len(frs) == 1:
            nominal = quota.nominal[cq].get(frs[0], 0.0)
            used = quota.usage[cq].get(frs[0], 0.0)
            return nominal, used, used - nominal if used > nominal else 0.0
        nominal = sum(quota.nominal[cq].get(fr, 0.0) for fr in frs)
        used = sum(quota.usage[cq].get(fr, 0.0) for fr in frs)
        borrowed = sum(
            max(0.0, quota.usage[cq].get(fr, 0.0) - quota.nominal[cq].get(fr, 0.0)) for fr in frs
        )
        return nominal, used, borrowed

    def _note(self, cq: int, now: float) -> None:
        """Record ``cq``'s GPUs in use (and borrowed) at ``now``, changed or not (readers
        drop repeats). For a queue of one GPU flavor-resource the borrowed GPUs are left NaN
        here and derived in :meth:`change_array`, which keeps this hot path short."""
        fr = self._one_gpu_fr[cq]
        if fr is not None:
            self._changes.fromlist([now, cq, self._usage[cq][fr], NAN])
        else:
            _, used, borrowed = self.gpu_usage(cq)
            self._changes.fromlist([now, cq, used, borrowed])

    def change_array(self) -> np.ndarray:
        """A queue's GPUs in use and borrowed at each change (and at some instants where
        they did not change), in time order: rows (time, queue, GPUs in use, GPUs borrowed)
        of a float array (a copy)."""
        change = np.array(self._changes, dtype=np.float64).reshape(-1, 4)
        derive = np.isnan(change[:, 3])
        if derive.any():
            nominal = np.array(self._nominal_gpus)[change[derive, 1].astype(np.int64)]
            change[derive, 3] = np.maximum(0.0, change[derive, 2] - nominal)
        return change

    def _integrals(self, end: float) -> tuple[np.ndarray, np.ndarray]:
        """Per queue, GPU-seconds in use and borrowed from the first change to ``end``."""
        n = len(self.names)
        change = self.change_array()
        if not len(change):
            return np.zeros(n), np.zeros(n)
        cq = change[:, 1].astype(np.int64)
        order = group_order(cq, n)
        t, cq = change[order, 0], cq[order]
        # Each value holds until its queue's next change, the last one until the end.
        until = np.append(t[1:], end)
        last = np.append(cq[1:] != cq[:-1], True)
        until[last] = end
        dt = until - t
        used = np.bincount(cq, weights=change[order, 2] * dt, minlength=n)
        borrowed = np.bincount(cq, weights=change[order, 3] * dt, minlength=n)
        return used, borrowed

    def report(self, end: float) -> dict[str, dict[str, Any]]:
        """Per ClusterQueue: nominal GPU quota, time-averaged GPUs in use and borrowed over
        the run, and evictions by cause and by Kueue's reason."""
        used_s, borrowed_s = self._integrals(end)
        span = end - (self._start if self._start is not None else end)
        out: dict[str, dict[str, Any]] = {}
        for cq, name in enumerate(self.names):
            nominal = self.gpu_usage(cq)[0]
            out[name] = {
                "cohort": self.tenancy.cluster_queues[name].cohort,
                "nominal_gpus": nominal,
                "used_gpus_avg": float(used_s[cq]) / span if span > 0 else None,
                "borrowed_gpus_avg": float(borrowed_s[cq]) / span if span > 0 else None,
                "preemptions": dict(self.preemptions[cq]),
                "evictions_by_reason": dict(self.kueue.evicted[cq]),
            }
        return out
