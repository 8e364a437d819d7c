"""The scheduling cycle of co-locating policies (:mod:`dlsched.policy.colocation`).

While the policy's packing is off, the cycle is the non-preemptive one of :class:`Scheduler`
(key order, head-of-line blocking unless the policy backfills). While it is on, waiting jobs are
taken in key order and each either shares the GPUs of a running job the policy picks (a
:class:`~dlsched.scheduler.plan.Start` with ``partner`` and the pair's ``speeds``), starts alone
where the placer finds room, or is skipped for this cycle; jobs started earlier in the same
cycle are candidates too. A ``share_first`` policy (Lucid) looks for a partner before GPUs of
the job's own, otherwise (Gandiva) only when none fit. A ``migrates`` policy first moves the
later-started job of each pair to GPUs of its own when the placer finds some (a
:class:`~dlsched.scheduler.plan.Resize`), before any waiting job is placed.

Candidates are the pool's rigid jobs holding whole GPUs that no other job shares yet, in the
order they started. Whether a GPU is shared is the cluster state's (``ClusterState.shared``), so
the cycle keeps no pairing of its own. The driver tells the scheduler each job's workload
(``workload_of``); the interference model gives the measured speeds the policy chooses from,
and the driver runs the pair at the speeds the start carries.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush

from dlsched.cluster.state import WHOLE, ClusterState, Placement
from dlsched.perf.arrival_forecast import ArrivalForecast
from dlsched.perf.interference import InterferenceModel, Workload, WorkloadProfile
from dlsched.placement.base import Placer
from dlsched.policy.base import Key
from dlsched.policy.colocation import Candidate, CoLocatingPolicy, Speeds
from dlsched.scheduler.cycle import Scheduler, _take
from dlsched.scheduler.plan import EMPTY_PLAN, Plan, Resize, Start
from dlsched.scheduler.view import JobView


class CoLocationScheduler(Scheduler):
    """A :class:`Scheduler` whose policy may pack jobs (module docstring)."""

    policy: CoLocatingPolicy

    def __init__(
        self,
        policy: CoLocatingPolicy,
        placer: Placer,
        state: ClusterState,
        interference: InterferenceModel,
    ) -> None:
        super().__init__(policy, placer, state)
        self.interference = interference
        self.workload_of: Callable[[JobView], Workload | None] = lambda job: None
        self.forecast = ArrivalForecast()
        # Per pool, the running jobs in the order they started.
        self._started: list[dict[JobView, Key]] = [{} for _ in range(state.num_pools)]
        self._packing = True
        self._packing_until: float | None = -1.0

    def on_submitted(self, job: JobView, now: float) -> None:
        super().on_submitted(job, now)
        if job.gpus > 0:
            self.forecast.observe(now)

    def on_started(self, job: JobView) -> None:
        super().on_started(job)
        self._started[job.pool][job] = self.policy.key(job, job.submit_time)

    def on_stopped(self, job: JobView, now: float) -> None:
        self._started[job.pool].pop(job, None)
        super().on_stopped(job, now)

    def on_finished(self, job: JobView, now: float = 0.0) -> None:
        self._started[job.pool].pop(job, None)
        super().on_finished(job, now)

    def _profile(self, job: JobView) -> WorkloadProfile | None:
        return self.interference.profile(self.workload_of(job))

    def _shareable(self, job: JobView, placement: Placement | None) -> bool:
        if job.kind or job.demand.milli != WHOLE or not placement:
            return False
        shared = self.state.shared
        return not any((node, g) in shared for node, gpus in placement for g in gpus)

    def cycle(self, pool: int, now: float) -> Plan:
        policy = self.policy
        q = self.pools[pool]
        if not q.heap and not (policy.migrates and self.state.shared):
            return EMPTY_PLAN
        check = policy.check_interval
        wake = None if check is None else (now // check + 1) * check
        if wake != self._packing_until:
            # The policy re-evaluates packing once per check interval (Lucid: every 100 s).
            self._packing = policy.packing_on(self.forecast, now)
            self._packing_until = wake
        plan = self._packing_cycle(pool, now) if self._packing else super().cycle(pool, now)
        if wake is not None and (q.heap or plan.starts):
            return plan._replace(wake_at=wake)
        return plan

    def _speeds(self, job: JobView) -> Speeds:
        workload = self.workload_of(job)

        def speeds(mate: JobView) -> tuple[float, float]:
            return self.interference.speeds(workload, self.workload_of(mate))

        return speeds

    def _packing_cycle(self, pool: int, now: float) -> Plan:
        q = self.pools[pool]
        heap, state, policy = q.heap, self.state, self.policy
        # Running jobs no other shares yet, in start order; this cycle's lone starts join them.
        candidates = [
            Candidate(j, k[0], self._profile(j))
            for j, k in self._started[pool].items()
            if self._shareable(j, j.placement)
        ]
        where_of: dict[JobView, Placement] = {}
        starts: list[Start] = []
        resizes: list[Resize] = []
        skipped: list[tuple[Key, JobView]] = []
        share_first = policy.share_first
        with state.tentative():
            if policy.migrates:
                resizes = self._migrations(pool)
            while heap:
                entry = heappop(heap)
                key, job = entry
                d = job.demand
                start: Start | None = None
                shares = not job.kind and d.milli == WHOLE and job.gpus > 0
                fits = state.pool_free_gpus(pool) >= job.gpus * d.milli / WHOLE
                if fits and not (share_first and shares and candidates):
                    start = self._alone(state, pool, job, key, where_of, candidates)
                if start is None and shares and candidates:
                    start = self._shared(state, job, key, where_of, candidates, now)
                    if start is not None:
                        mate = start.partner
                        candidates = [c for c in candidates if c.job is not mate]
                if start is None and fits and share_first:
                    start = self._alone(state, pool, job, key, where_of, candidates)
                if start is None:
                    skipped.append(entry)
                    continue
                starts.append(start)
        for entry in skipped:
            heappush(heap, entry)
        if not (starts or resizes):
            return EMPTY_PLAN
        return Plan(tuple(starts), resizes=tuple(resizes))

    def _alone(
        self,
        state: ClusterState,
        pool: int,
        job: JobView,
        key: Key,
        where_of: dict[JobView, Placement],
        candidates: list[Candidate],
    ) -> Start | None:
        """``job`` on GPUs of its own, if the placer finds some; it becomes a candidate."""
        start = self._start(state, pool, job)
        if start is not None:
            _take(state, start)
            if self._shareable(job, start.placement):
                where_of[job] = start.placement
                candidates.append(Candidate(job, key[0], self._profile(job)))
        return start

    def _shared(
        self,
        state: ClusterState,
        job: JobView,
        key: Key,
        where_of: dict[JobView, Placement],
        candidates: list[Candidate],
        now: float,
    ) -> Start | None:
        """``job`` on the GPUs of the partner the policy picks, if any and they can take it."""
        d = job.demand
        picked = self.policy.partner(
            job, key[0], self._profile(job), candidates, now, self._speeds(job)
        )
        if picked is None:
            return None
        mate, speeds = picked
        where = mate.placement or where_of[mate]
        if not state.can_join(where, d.cpus, d.memory_mib):
            return None
        state.join(where, d.cpus, d.memory_mib)
        return Start(job, where, partner=mate, speeds=speeds)

    def _migrations(self, pool: int) -> list[Resize]:
        """Each pair of the pool whose later-started job the placer can now place on GPUs of
        its own: that job moves there (inside the cycle's tentative block)."""
        state = self.state
        shared = state.shared
        if not shared:
            return []
        first_on: dict[Placement, JobView] = {}
        moves: list[Resize] = []
        for job in self._started[pool]:
            placement = job.placement
            if not placement or job.kind:
                continue
            node, gpus = placement[0]
            if not gpus or (node, gpus[0]) not in shared:
                continue
            if placement not in first_on:
                first_on[placement] = job
                continue
            target = self.placer.place(state, pool, job.demand)
            if target is None:
                continue
            d = job.demand
            state.leave(placement, d.cpus, d.memory_mib)
            state.allocate(target, d.milli, d.cpus, d.memory_mib)
            moves.append(Resize(job, target))
        return moves
