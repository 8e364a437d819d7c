"""The scheduling cycle: the one place where a policy and a placer meet.

The :class:`Scheduler` keeps, per pool, the jobs waiting and running, and turns a policy's
priorities into a :class:`Plan` for one pool at a time:

- non-preemptive policies: waiting jobs sit in a heap by their key (fixed, unless the policy
  sets ``waiting_key_fixed = False``: then the heap is re-keyed at each cycle); the cycle starts
  jobs from the head while they fit. With head-of-line blocking (the default) the first job
  that does not fit stops the cycle; with backfill the cycle tries every waiting job in key order.
- preemptive policies: every cycle ranks all active (waiting and running) jobs of the pool by key
  and admits them greedily while their GPU count fits the pool's healthy capacity; running jobs
  not admitted are preempted and admitted waiting jobs are placed, in key order, on what is free
  after those preemptions. An admitted job that cannot be placed (fragmentation) keeps waiting,
  and a job chosen for preemption whose resources no new start took keeps running. A waiting
  job's key is fixed while it waits (:attr:`Policy.waiting_key_fixed`), so waiting jobs stay in a
  sorted list keyed once and only running jobs are re-keyed each cycle; once the capacity is
  spent, the walk skips the waiting jobs and only settles the running ones left.

The cycle tries placements on the live :class:`ClusterState` inside ``state.tentative()`` so the
state is unchanged afterwards: the driver applies the plan. The scheduler's own bookkeeping (who
waits, who runs) changes only through the ``on_*`` notifications a driver sends as it applies
plans and sees events. Exception: a non-preemptive cycle removes the jobs it plans to start from
its wait heap; a driver that cannot carry a start out must call :meth:`Scheduler.on_requeued`.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Callable
from heapq import heapify, heappop, heappush
from operator import itemgetter

from dlsched.cluster.state import ClusterState, Demand, OverCommitError
from dlsched.placement.base import Placer, fragmented
from dlsched.policy.base import Key, Policy
from dlsched.scheduler.plan import EMPTY_PLAN, Plan, Start
from dlsched.scheduler.view import JobView

KindPlacer = Callable[[ClusterState, int, JobView], Start | None]
"""Places a job of a kind the run's placer cannot place alone (a parameter-server job's
workers and PS): a start on free resources of the pool, or None. Must not change the state."""


class PoolQueues:
    """Waiting and running jobs of one pool, with the counters the recorder reads."""

    __slots__ = (
        "entry",
        "heap",
        "pending_cpu_only",
        "pending_gpus",
        "pending_jobs",
        "running",
        "running_jobs",
        "waiting",
    )

    def __init__(self) -> None:
        self.heap: list[tuple[Key, JobView]] = []
        # Preemptive policies: waiting jobs sorted by (key, seq), each job's entry, and the
        # running jobs in start order.
        self.waiting: list[tuple[Key, int, JobView]] = []
        self.entry: dict[JobView, tuple[Key, int, JobView]] = {}
        self.running: dict[JobView, None] = {}
        self.pending_cpu_only = 0
        self.pending_jobs = 0
        self.pending_gpus = 0
        self.running_jobs = 0


class Scheduler:
    """Composes one policy and one placer over the pools of one cluster state."""

    def __init__(
        self,
        policy: Policy,
        placer: Placer,
        state: ClusterState,
        kind_placers: dict[int, KindPlacer] | None = None,
    ) -> None:
        """``kind_placers`` place the jobs of the kinds they name (``job.kind``) instead of the
        placer. ``foreign_gpus[pool]`` (kept by the driver) counts GPUs of the pool held by jobs
        other schedulers run: preemptive cycles leave them out of the capacity they admit into."""
        self.policy = policy
        self.placer = placer
        self.state = state
        self.pools = [PoolQueues() for _ in range(state.num_pools)]
        self.kind_placers = kind_placers or {}
        self.foreign_gpus = [0.0] * state.num_pools
        self._placeable: dict[tuple[int, Demand], bool] = {}
        self._empty: ClusterState | None = None
        # Jobs (by seq) that waited with enough free GPUs in their pool for a topology-aware
        # placer that found no placement: None when the placer models no topology.
        self.fragmented: set[int] | None = set() if placer.topology_aware else None

    @property
    def interval(self) -> float | None:
        return self.policy.interval

    def _start(self, state: ClusterState, pool: int, job: JobView) -> Start | None:
        """Where ``job`` can start now, by its kind's placer or the run's."""
        if job.kind in self.kind_placers:
            return self.kind_placers[job.kind](state, pool, job)
        placement = self.placer.place(state, pool, job.demand)
        if placement is None:
            self._note_unplaced(state, pool, job)
            return None
        return Start(job, placement)

    def _note_unplaced(self, state: ClusterState, pool: int, job: JobView) -> None:
        """Count ``job`` as fragmented if the placer models topology and the pool has its GPUs
        free in total (the placer found no placement satisfying the topology)."""
        if self.fragmented is not None and fragmented(state, pool, job.demand):
            self.fragmented.add(job.seq)

    def never_fits(self, pool: int, demand: Demand) -> str | None:
        """Why a job of ``demand`` can never run in ``pool``, or None if it can: the cluster's
        own reasons (size, GPU type, CPUs, memory), then whether this run's placer finds room
        for it on the pool when every node is up and empty."""
        reason = self.state.can_ever_fit(pool, demand)
        if reason is not None:
            return reason
        key = (pool, demand)
        if key not in self._placeable:
            if self._empty is None:
                self._empty = ClusterState(self.state.spec, self.state.use_partitions)
            probe = self.placer.clone()
            self._placeable[key] = probe.place(self._empty, pool, demand) is not None
        if self._placeable[key]:
            return None
        return (
            f"placement {self.placer.name!r} finds no room for {demand.gpus} GPUs, "
            f"{demand.cpus:g} CPUs and {demand.memory_mib:g} MiB in pool "
            f"{self.state.pool_names[pool]!r} even when it is empty"
        )

    # ---- notifications from the driver ---------------------------------------------------
    def on_submitted(self, job: JobView, now: float) -> None:
        """A job arrives (admitted: it can fit its pool when the pool is empty)."""
        q = self.pools[job.pool]
        q.pending_jobs += 1
        q.pending_gpus += job.gpus
        q.pending_cpu_only += job.gpus == 0
        if self.policy.preemptive:
            self._wait(q, job, now)
        else:
            heappush(q.heap, (self.policy.key(job, now), job))

    def _wait(self, q: PoolQueues, job: JobView, now: float) -> None:
        entry = (self.policy.key(job, now), job.seq, job)
        q.entry[job] = entry
        insort(q.waiting, entry)

    def on_started(self, job: JobView) -> None:
        q = self.pools[job.pool]
        q.pending_jobs -= 1
        q.pending_gpus -= job.gpus
        q.pending_cpu_only -= job.gpus == 0
        q.running_jobs += 1
        if self.policy.preemptive:
            entry = q.entry.pop(job)
            del q.waiting[bisect_left(q.waiting, entry)]
            q.running[job] = None

    def on_stopped(self, job: JobView, now: float) -> None:
        """A running job was preempted or lost its node: it waits again."""
        q = self.pools[job.pool]
        q.running_jobs -= 1
        q.pending_jobs += 1
        q.pending_gpus += job.gpus
        q.pending_cpu_only += job.gpus == 0
        if self.policy.preemptive:
            del q.running[job]
            self._wait(q, job, now)
        else:
            heappush(q.heap, (self.policy.key(job, now), job))

    def on_withdrawn(self, job: JobView) -> None:
        """A waiting job leaves without running (an admission stage took its admission back)."""
        q = self.pools[job.pool]
        q.pending_jobs -= 1
        q.pending_gpus -= job.gpus
        q.pending_cpu_only -= job.gpus == 0
        if self.policy.preemptive:
            entry = q.entry.pop(job)
            del q.waiting[bisect_left(q.waiting, entry)]
        else:
            q.heap = [e for e in q.heap if e[1] is not job]
            heapify(q.heap)

    def on_requeued(self, job: JobView, now: float) -> None:
        """A planned start was not carried out (non-preemptive policies only)."""
        if not self.policy.preemptive:
            heappush(self.pools[job.pool].heap, (self.policy.key(job, now), job))

    def on_finished(self, job: JobView, now: float = 0.0) -> None:
        q = self.pools[job.pool]
        q.running_jobs -= 1
        if self.policy.preemptive:
            del q.running[job]

    # ---- the cycle -----------------------------------------------------------------------
    def cycle(self, pool: int, now: float) -> Plan:
        """The plan for ``pool`` at ``now`` (see the module docstring for the semantics)."""
        if self.policy.preemptive:
            return self._preemptive_cycle(pool, now)
        q = self.pools[pool]
        if not q.heap or (self.state.pool_free_gpus(pool) <= 0 and not q.pending_cpu_only):
            return EMPTY_PLAN
        if not self.policy.waiting_key_fixed:
            key = self.policy.key
            q.heap = [(key(job, now), job) for _, job in q.heap]
            heapify(q.heap)
        if self.policy.backfill:
            return self._backfill_cycle(pool)
        return self._blocking_cycle(pool)

    def _blocking_cycle(self, pool: int) -> Plan:
        heap = self.pools[pool].heap
        state, place = self.state, self.placer.place
        starts: list[Start] = []
        # The first placement needs no bookkeeping; only if a second job is tried must the
        # first one's resources look taken, so tentative recording starts then.
        recording = False
        try:
            while heap:
                job = heap[0][1]
                d = job.demand
                if job.kind:
                    start = self._start(state, pool, job)
                    placement = None if start is None else start.placement
                else:
                    placement = place(state, pool, d)
                    start = None if placement is None else Start(job, placement)
                if start is None or placement is None:
                    if not job.kind:
                        self._note_unplaced(state, pool, job)
                    break
                heappop(heap)
                starts.append(start)
                if heap:
                    if not recording:
                        state.begin_tentative()
                        recording = True
                    _take(state, start)
        finally:
            if recording:
                state.rollback()
        return Plan(tuple(starts)) if starts else EMPTY_PLAN

    def _backfill_cycle(self, pool: int) -> Plan:
        q = self.pools[pool]
        heap = q.heap
        state, place = self.state, self.placer.place
        starts: list[Start] = []
        skipped: list[tuple[Key, JobView]] = []
        cpu_only_left = q.pending_cpu_only
        with state.tentative():
            while heap:
                free = state.pool_free_gpus(pool)
                if free <= 0 and not cpu_only_left:
                    break
                entry = heappop(heap)
                job = entry[1]
                d = job.demand
                cpu_only_left -= job.gpus == 0
                start = None
                if job.gpus * d.milli / 1000 <= free:
                    if job.kind:
                        start = self._start(state, pool, job)
                    else:
                        placement = place(state, pool, d)
                        start = None if placement is None else Start(job, placement)
                        if start is None:
                            self._note_unplaced(state, pool, job)
                if start is None:
                    skipped.append(entry)
                    continue
                _take(state, start)
                starts.append(start)
        for entry in skipped:
            heappush(heap, entry)
        return Plan(tuple(starts)) if starts else EMPTY_PLAN

    def _preemptive_cycle(self, pool: int, now: float) -> Plan:
        q = self.pools[pool]
        # With nobody waiting, every active job runs and keeps running: nothing to decide, and
        # no priority change can matter until a job arrives or stops (each triggers a cycle).
        if q.pending_jobs == 0:
            return EMPTY_PLAN
        policy, state = self.policy, self.state
        key = policy.key
        running = sorted([(key(j, now), j.seq, j) for j in q.running], key=_KEY)
        if policy.waiting_key_fixed:
            waiting = q.waiting
        else:
            waiting = sorted([(key(e[2], now), e[1], e[2]) for e in q.waiting], key=_KEY)
        capacity = state.pool_up_gpus[pool] - self.foreign_gpus[pool]
        staying, admitted, preempts = _admit(running, waiting, capacity, q.pending_cpu_only)
        starts: list[Start] = []
        with state.tentative():
            for job in preempts:
                _give_back(state, job)
            # The state only fills up during this loop, so a shape that found no room once
            # finds none later in the same cycle (per kind: kinds place differently).
            unplaceable: set[tuple[int, Demand]] = set()
            for job in admitted:
                if (job.kind, job.demand) in unplaceable:
                    continue
                start = self._start(state, pool, job)
                if start is None:
                    unplaceable.add((job.kind, job.demand))
                    continue
                _take(state, start)
                starts.append(start)
            kept = [job for job in preempts if _still_free(state, job)]
        if kept:
            preempts = [job for job in preempts if job not in kept]
            staying.extend(kept)
        wake = math.inf
        for job in [*staying, *(s.job for s in starts)]:
            t = policy.next_change(job, now)
            if t is not None and t < wake:
                wake = t
        return Plan(tuple(starts), tuple(preempts), None if wake == math.inf else wake)


Ranked = list[tuple[Key, int, JobView]]
# Keys are unique (a policy breaks ties inside its key, by seq at the latest), so sorting on the
# key alone gives the (key, seq) order, at half the comparisons of whole entries.
_KEY = itemgetter(0)


def _admit(
    running: Ranked, waiting: Ranked, capacity: float, cpu_only_waiting: int
) -> tuple[list[JobView], list[JobView], list[JobView]]:
    """Walk running and waiting jobs merged in rank order, admitting each whose GPU need fits
    what is left of ``capacity``. Returns the running jobs admitted (to keep running), the
    waiting jobs admitted (to start, in rank order) and the running jobs not admitted (to
    preempt). Once the capacity is spent and no CPU-only job waits, no waiting job can be
    admitted, so the walk skips the rest of the waiting list and only settles the running jobs
    left. The merge compares entries as plain tuples (a Python function per comparison is what
    made this walk slow); seq is unique, so the job itself is never compared."""
    staying: list[JobView] = []
    admitted: list[JobView] = []
    preempts: list[JobView] = []
    wi, nw = 0, len(waiting)
    # One loop over the running jobs, each preceded by the waiting jobs ranked before it; the
    # final None takes the waiting jobs ranked after every running one.
    for entry in [*running, None]:
        while (
            wi < nw
            and (capacity > 0 or cpu_only_waiting)
            and (entry is None or waiting[wi] < entry)
        ):
            job = waiting[wi][2]
            wi += 1
            cpu_only_waiting -= job.gpus == 0
            need = job.gpus * job.demand.milli / 1000
            if need <= capacity:
                admitted.append(job)
                capacity -= need
        if entry is None:
            break
        job = entry[2]
        need = job.gpus * job.demand.milli / 1000
        if need <= capacity:
            staying.append(job)
            capacity -= need
        else:
            preempts.append(job)
    return staying, admitted, preempts


def _take(state: ClusterState, start: Start) -> None:
    """Allocate what ``start`` gives its job (inside a tentative block)."""
    d = start.job.demand
    state.allocate(start.placement, d.milli, d.cpus, d.memory_mib, start.split)


def _give_back(state: ClusterState, job: JobView) -> None:
    """Release what a running ``job`` holds (inside a tentative block)."""
    d = job.demand
    assert job.placement is not None
    state.release(job.placement, d.milli, d.cpus, d.memory_mib, job.split)


def _still_free(state: ClusterState, job: JobView) -> bool:
    """Whether a job chosen for preemption could keep its resources: nothing placed since took
    them. Takes them back (inside the tentative block) when so."""
    d = job.demand
    assert job.placement is not None
    for node, gpus in job.placement:
        if not state.node_up[node] or any(state.free_milli[node][g] < d.milli for g in gpus):
            return False
    try:
        state.allocate(job.placement, d.milli, d.cpus, d.memory_mib, job.split)
    except OverCommitError:
        return False
    return True
