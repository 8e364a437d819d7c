"""The control loop's body: observe the back end, record outcomes, run the scheduling cycle on a
snapshot of the store, and reconcile the :class:`~dlsched.scheduler.plan.Plan` with the back end.

This is the live driver of the same core the simulator drives (one core, two drivers), for every
policy: an ordering policy (FIFO, Tiresias, ...) plans through the simulator's
:class:`~dlsched.scheduler.cycle.Scheduler` and a placer, an elastic policy (Pollux, ONES, ...)
through an :class:`~dlsched.scheduler.allocation.AllocationScheduler` and the live allocation
adapter; :mod:`dlsched.service.control.planning` holds what differs between them, and every plan,
with its starts, preemptions and resizes, is applied by one reconcile path
(:meth:`Controller.apply`). The controller keeps a mirror of the store's active jobs (with their
:class:`~dlsched.service.control.live_job.LiveJob` views) and a
:class:`~dlsched.cluster.state.ClusterState` of the GPUs they hold, refreshed at every step from the
store's event log (every state change appends an event, so only changed jobs are re-read): the store
stays the only source of truth, whoever changed it (API, this loop, or a previous run of the
service). The scheduler is kept across cycles and told of every submission, start, stop and finish
through its ``on_*`` notifications, as the simulator does; a change it has no notification for (a
waiting job cancelled, a job first seen running after a restart) makes the next cycle rebuild it
from the mirror.

Reconciliation rules (each state change is one store transaction, then the back-end call, so a crash
between the two is repaired by the next step: back-end calls are idempotent by request id):

- a RUNNING job whose request the back end does not know is launched (again);
- an exited request ends its job: exit 0 → COMPLETED; a cancelled job → CANCELLED; exit 75, or
  killed after a preemption's grace period → PENDING (resumable, one more restart); anything
  else → FAILED with the reason; a PREEMPTING job whose process is gone for good is requeued;
- a PREEMPTING job is (again) asked to stop: SIGTERM, then SIGKILL after the grace period;
- preemptions of a plan are applied at once; so are its resizes to other GPUs, which are the
  same stop through a checkpoint: the job exits 75, is requeued, and the plan of the cycle its
  exit triggers starts it at the new size and configuration (an allocation policy's answer
  stands until its next round). A resize to the GPUs the job holds changes its configuration
  alone, which a live job cannot take without a restart: it is not applied;
- a start waits for a later cycle while any of its GPUs is held (by a job shutting down, or by
  an earlier start of the same plan) or on a node the back end reports down; the preempted
  job's exit triggers one. This one check guards every start, so no GPU is held twice whatever
  a policy answers;
- requests the back end runs that belong to no job holding GPUs are stopped.

Several services may share one store (see :mod:`dlsched.service.store.database`). A controller has a
service id; the attempts it starts are recorded as its own, and its mirror holds only the jobs it
owns and the pending ones: a job another service runs is, to this controller, gone (its GPUs are
that service's). Every service schedules its own cluster from the one shared queue, and a start is a
conditional update on the job being pending, so one service wins each attempt and the others see the
job leave their queue. Every ``lease_s / 4`` seconds a controller renews its lease (its jobs stay
its own until ``lease_s`` after the renewal) and takes over the jobs of services whose lease ran
out (a service that died, or one cut off from the store); a service restarted under the same id
before its lease runs out adopts its own jobs.

Exactly once under takeover:

- Fencing: a controller starts a new epoch of its service id and fences its store with it
  (:meth:`Store.begin_service <dlsched.service.store.database.Store.begin_service>`); a takeover
  moves the lapsed service to a new epoch in the same transaction, so every later write of the
  lapsed service raises :class:`~dlsched.service.store.database.Fenced`. A fenced controller
  stops: :attr:`Controller.fenced` is set and :meth:`step` raises it again without doing
  anything (no launch, no stop, no write).
- A taken-over job goes to ORPHAN_CHECK, not back to the queue: at each step the new owner asks
  its back end (:meth:`Backend.probe <dlsched.backends.base.Backend.probe>`) what became of the
  old attempt. Alive: it waits; exited: the attempt's own outcome is recorded (a job that
  completed under the old owner is COMPLETED, not run again); gone: the job is queued again.
  Meanwhile its GPUs stay held in the old owner's mirror, should that service come back.
- Every attempt is started with a launch deadline (``lease_s / 2`` after its start) past which
  no back end is asked to launch it (the attempt is requeued instead), so a probe can tell an
  attempt that never started from one that still may.

For non-preemptive policies the scheduler sees only waiting jobs in its queue (running jobs only
hold their GPUs in the state); preemptive ones, and allocation policies, see running jobs as active
jobs too. A job stopping (PREEMPTING) holds its GPUs; an ordering policy's scheduler no longer sees
it, an allocation policy's keeps it until it is queued again unless it is being cancelled
(:attr:`Planning.keeps_stopping <dlsched.service.control.planning.Planning.keeps_stopping>`)."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from time import perf_counter
from typing import Any

from dlsched.backends.base import (
    EXIT_PREEMPTED,
    RESUMABLE_ERRORS,
    AttemptFate,
    Backend,
    BackendError,
    KnownRequest,
    LaunchRequest,
    Observation,
    PriorAttempt,
    ProcState,
)
from dlsched.cluster.spec import ClusterSpec
from dlsched.cluster.state import WHOLE, ClusterState, Demand, Placement
from dlsched.elastic.policy import ElasticPolicy
from dlsched.placement.registry import create_placer
from dlsched.policy.base import Policy
from dlsched.scheduler.allocation import AnyScheduler
from dlsched.scheduler.plan import Plan
from dlsched.service.control.elastic_book import ElasticSpec
from dlsched.service.control.elastic_planning import ElasticPlanning
from dlsched.service.control.estimates import DurationHistory
from dlsched.service.control.live_admission import LiveAdmission
from dlsched.service.control.live_job import LiveJob
from dlsched.service.control.live_metrics import LiveMetrics
from dlsched.service.control.planning import OrderingPlanning, Planning
from dlsched.service.store.database import Fenced, Store
from dlsched.service.store.records import (
    CANCELLED,
    COMPLETED,
    FAILED,
    HOLDING,
    ORPHAN_CHECK,
    PENDING,
    PREEMPTING,
    RUNNING,
    GpuIds,
    JobRow,
)

log = logging.getLogger(__name__)

DEFAULT_GRACE_S = 30.0
DEFAULT_PLACEMENT = "consolidate"
PROGRESS_SAVE_S = 10.0
"""How often (wall seconds) reported progress is written to the store: it is informational,
kept in memory between saves, so thousands of running jobs cost no write per step."""
DEFAULT_LEASE_S = 60.0
"""How long a service's jobs stay its own after its last lease renewal."""
LAUNCH_WINDOW = 0.5
"""An attempt may be launched until this fraction of the lease after its start: a takeover
comes at least ``3/4`` of a lease after it (renewals are a quarter lease apart), so a
taken-over attempt that never started is known dead soon after."""
_ELSEWHERE = "ELSEWHERE"
"""The mirror's name for a job holding GPUs of another service."""
_STOPPED_BY_US = (None, 128 + 15, 128 + 9)
"""Exit codes of a job that did not checkpoint but died of our SIGTERM or SIGKILL (as the
local back end's shell wrapper reports them): it restarts from scratch or its last checkpoint."""


def check_lease(lease_s: float) -> None:
    """ValueError naming the field unless ``lease_s`` is a usable lease length."""
    if not (math.isfinite(lease_s) and lease_s > 0):
        raise ValueError(f"lease_s (--lease): must be a positive number of seconds, got {lease_s}")


def check_placement(
    policy: Policy | ElasticPolicy,
    placement: str,
    placement_options: Mapping[str, str] | None = None,
) -> None:
    """ValueError naming the field unless ``policy`` can honour ``placement`` with its text
    ``placement_options``: an elastic policy places its jobs itself, so it takes only the
    default placement and no options; an ordering policy's placer must exist and take them."""
    if isinstance(policy, ElasticPolicy):
        if placement != DEFAULT_PLACEMENT:
            raise ValueError(
                f"placement (--placement) {placement!r}: elastic policy {policy.name!r} places "
                "its jobs itself"
            )
        if placement_options:
            raise ValueError(
                f"placement_options (--placement-opt) {', '.join(placement_options)}: elastic "
                f"policy {policy.name!r} places its jobs itself"
            )
        return
    create_placer(placement, 0, placement_options)


class Controller:
    """Drives one store and one back end with one policy (see the module docstring): an
    ordering policy with the ``placement`` placer (given its text ``placement_options``), or an
    elastic policy deciding every
    ``interval_s`` seconds (default: the policy's own interval; an ordering policy plans at
    every cycle and takes no ``interval_s``). Only :meth:`step`, :meth:`apply` and
    :meth:`recover` change anything; they must run on one thread."""

    def __init__(
        self,
        store: Store,
        backend: Backend,
        cluster: ClusterSpec,
        policy: Policy | ElasticPolicy,
        placement: str = DEFAULT_PLACEMENT,
        clock: Callable[[], float] = time.time,
        grace_s: float = DEFAULT_GRACE_S,
        seed: int = 0,
        service_id: str | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        interval_s: float | None = None,
        admission: LiveAdmission | None = None,
        placement_options: Mapping[str, str] | None = None,
    ) -> None:
        check_lease(lease_s)
        self.admission = admission
        """Kueue admission before the policy (``--queues``; None: every job goes to it)."""
        self.store = store
        self.service_id = store.instance if service_id is None else service_id
        """The owner this controller records on the attempts it starts."""
        self.lease_s = lease_s
        self.taken_over = 0
        """Jobs of lapsed services this controller requeued."""
        self.backend = backend
        self.cluster = cluster
        self.policy = policy
        self.placement = placement
        self.placement_options = dict(placement_options or {})
        """The placer's text options (``--placement-opt``; topology: required or preferred)."""
        self.clock = clock
        self.grace_s = grace_s
        self.node_names = [n.name for n in cluster.nodes]
        self.node_index = {name: i for i, name in enumerate(self.node_names)}
        self.total_gpus = sum(n.gpus for n in cluster.nodes)
        self.metrics = LiveMetrics()
        self.history = DurationHistory(store.finished_durations())
        self.wake_at: float | None = None
        self.cycles = 0
        self.last_plan_ms = 0.0
        """Time of the last cycle's planning alone (the scheduler's cycle and its policy)."""
        self.resizes = 0
        """Running jobs stopped to be started at another size (not counting preemptions)."""
        self._demands: dict[int, Demand] = {}
        self._lock = threading.Lock()
        # The mirror of the store's active jobs (see the module docstring).
        self._state = ClusterState(cluster, use_partitions=False)
        self.planning: Planning
        """How this controller plans with its policy (:mod:`dlsched.service.control.planning`)."""
        check_placement(policy, placement, self.placement_options)
        if isinstance(policy, ElasticPolicy):
            self.planning = ElasticPlanning(policy, store, self._state, self, seed, interval_s)
        elif interval_s is not None:
            raise ValueError(
                f"interval_s: policy {policy.name!r} plans at every cycle; only elastic "
                "policies decide in rounds"
            )
        elif policy.colocates:
            raise ValueError(
                f"policy {policy.name!r} co-locates jobs on shared GPUs, which the live service "
                "does not do (it starts every job on GPUs of its own); run it in the simulator"
            )
        else:
            self.planning = OrderingPlanning(
                policy, placement, seed, self._state, self.placement_options
            )
        self._rows: dict[int, JobRow] = {}
        self._views: dict[int, LiveJob] = {}
        self._waiting: dict[int, LiveJob] = {}
        self._rid: dict[int, str] = {}
        self._held: dict[int, Placement] = {}
        self._cells: dict[tuple[int, int], int] = {}
        self._reported: dict[int, tuple[float | None, float | None]] = {}
        self._status: dict[int, Mapping[str, Any]] = {}
        self._down: frozenset[str] = frozenset()
        self._sched: AnyScheduler | None = None
        self._unsaved: set[int] = set()
        self._saved_at = time.monotonic()
        self._orphans: dict[int, JobRow] = {}
        """Jobs in ORPHAN_CHECK this controller took over (their old attempt is probed)."""
        self._kept: dict[int, str] = {}
        """Request ids of this service's own earlier attempts in ORPHAN_CHECK elsewhere: their
        GPUs stay held and their processes are left alone."""
        self.fenced: Fenced | None = None
        """Set once a write found this service fenced (module docstring): it acts no more."""
        self._renewed_at = clock()
        self.epoch = store.begin_service(
            self.service_id, self._renewed_at, lease_s, backend.location
        )
        """This process's epoch of its service id (see :meth:`Store.begin_service`)."""
        store.fence_as(self.service_id, self.epoch)
        self._event, rows = store.snapshot()
        self._mirror_all(rows)

    # ---- helpers -------------------------------------------------------------------------
    def demand(self, gpus: int) -> Demand:
        """The (shared) demand of a job of ``gpus`` GPUs."""
        return self._demand(gpus)

    def _demand(self, gpus: int) -> Demand:
        d = self._demands.get(gpus)
        if d is None:
            d = self._demands[gpus] = Demand(gpus)
        return d

    def submission_problem(self, gpus: int, elastic: ElasticSpec | None) -> str | None:
        """Why a submission of ``gpus`` GPUs (elastic if ``elastic`` is given) is refused,
        naming the field, or None: an elastic policy takes elastic jobs only, an ordering
        policy rigid jobs only."""
        return self.planning.submission_problem(gpus, elastic)

    def submitted(self, seq: int, elastic: ElasticSpec | None) -> None:
        """Called after job ``seq`` was stored by the API (an elastic policy records its
        spec)."""
        self.planning.submitted(seq, elastic)

    def _placement(self, gpu_ids: GpuIds | None) -> Placement:
        """``gpu_ids`` as this cluster's placement; ValueError naming a node or GPU that the
        cluster does not have (a store written for another cluster)."""
        placement = []
        for node, gpus in (gpu_ids or {}).items():
            index = self.node_index.get(node)
            if index is None:
                raise ValueError(f"node {node!r} is not in this service's cluster")
            size = self.cluster.nodes[index].gpus
            if any(not 0 <= g < size for g in gpus):
                raise ValueError(f"GPUs {list(gpus)} are not all on node {node!r} ({size} GPUs)")
            placement.append((index, tuple(gpus)))
        return tuple(placement)

    def request_for(self, row: JobRow) -> LaunchRequest:
        """The back-end request of ``row``'s current attempt."""
        return LaunchRequest(
            request_id=row.request_id,
            job_id=row.id,
            command=row.command,
            gpu_ids={n: tuple(g) for n, g in (row.gpu_ids or {}).items()},
            batch_size=self.planning.batch_size(row),
            expected_duration_s=row.expected_duration_s,
            tenant=row.tenant,
            launch_by=row.launch_by,
        )

    # ---- the mirror -----------------------------------------------------------------------
    def _mirror(self, row: JobRow) -> None:
        """Bring the mirror (rows, views, held GPUs) and the scheduler in line with ``row``."""
        seq = row.seq
        state = row.state
        kept = state == ORPHAN_CHECK and row.orphan_of == self.service_id
        if state == ORPHAN_CHECK and row.owner == self.service_id:
            self._orphans[seq] = row
        else:
            self._orphans.pop(seq, None)
        if kept:
            self._kept[seq] = row.request_id
        else:
            self._kept.pop(seq, None)
        if (state in HOLDING and row.owner != self.service_id) or state == ORPHAN_CHECK:
            state = _ELSEWHERE
        old = self._held.get(seq)
        new = self._placement(row.gpu_ids) if state in HOLDING or kept else None
        if old != new:
            if old is not None:
                self._state.release(old, WHOLE, 0.0, 0.0)
                for n, gs in old:
                    for g in gs:
                        del self._cells[(n, g)]
                del self._held[seq]
            if new is not None:
                self._state.allocate(new, WHOLE, 0.0, 0.0)
                self._held[seq] = new
                for n, gs in new:
                    for g in gs:
                        self._cells[(n, g)] = seq
        before = self._rows.get(seq)
        was = before.state if before is not None else None
        if state in (PENDING, RUNNING, PREEMPTING):
            self._rows[seq] = row
            self._rid[seq] = row.request_id
        else:
            self._rows.pop(seq, None)
            self._rid.pop(seq, None)
            if self.admission is not None and state != _ELSEWHERE:
                self.admission.leave(seq, self.clock())
            with self._lock:
                self._reported.pop(seq, None)
            self._status.pop(seq, None)
            self._unsaved.discard(seq)
        if was != state:
            self._transition(row, state, was, new)

    def _transition(
        self, row: JobRow, state: str, was: str | None, placement: Placement | None
    ) -> None:
        """Tell the persistent scheduler about a change to ``state`` (the row's, or
        ``_ELSEWHERE``), as the simulator does; a change it has no notification for (a waiting
        job withdrawn or started by another service, a job first seen running) makes the next
        cycle rebuild it from the mirror instead."""
        seq, now, sched = row.seq, self.clock(), self._sched
        view = self._views.get(seq)
        if state == PENDING:
            if view is not None and view.running:
                # It ran, or stopped while its policy kept it: it waits again.
                view.stop(row.attained_gpu_s)
                if sched is not None:
                    sched.on_stopped(view, now)
            else:
                view = self._views[seq] = self._view(row, None)
                admitted = self._admitted(row, now)
                if sched is not None and admitted:
                    sched.on_submitted(view, now)
            with self._lock:
                self._waiting[seq] = view
            return
        with self._lock:
            self._waiting.pop(seq, None)
        if state == RUNNING:
            if was == PENDING and view is not None and placement is not None:
                view.start(placement, row.run_start)
                if sched is not None:
                    sched.on_started(view)
            else:
                self._views[seq] = self._view(row, placement)
                self._sched = None
                if was is None and self.admission is not None:
                    self.admission.adopt(seq, row.queue, self._demand(row.gpus), now)
        elif (
            state == PREEMPTING
            and view is not None
            and view.running
            and self.planning.keeps_stopping
            and not row.cancel_requested
        ):
            pass  # stopped by its plan: still its policy's job (module docstring)
        else:
            # PREEMPTING, final or elsewhere: the job leaves the scheduler (a preempting job
            # keeps its GPUs in the state until its process is gone, but is not schedulable).
            if view is not None and view.running:
                if sched is not None:
                    sched.on_finished(view, now)
            elif was == PENDING:
                self._sched = None
            self._views.pop(seq, None)

    def _scheduler(self, now: float) -> AnyScheduler:
        """The persistent scheduler, rebuilt from the mirror when needed."""
        if self._sched is not None:
            return self._sched
        sched = self._sched = self.planning.scheduler()
        for view in self._views.values():
            if not view.running:
                if self.admission is None or self.admission.admits(view.seq):
                    sched.on_submitted(view, now)
            elif self.planning.preemptive:
                # Running jobs are active jobs of a preemptive policy; a non-preemptive one
                # only queues waiting jobs (its running counters are not used here).
                sched.on_submitted(view, now)
                sched.on_started(view)
        return sched

    def _admitted(self, row: JobRow, now: float) -> bool:
        """Whether waiting job ``row`` may go to the policy: always without admission;
        with it, once admitted. A job that can never be admitted fails, with the reason."""
        if self.admission is None:
            return True
        reason = self.admission.arrive(row.seq, row.queue, self._demand(row.gpus), now)
        if reason is not None:
            self.store.fail_pending(row.seq, now, reason)
        return self.admission.admits(row.seq)

    def _admit(self, now: float) -> None:
        """Run admission before the policy's cycle: admitted jobs go to the scheduler; evicted
        running jobs are stopped through a checkpoint (they wait for admission again once
        stopped), evicted waiting ones leave the scheduler and wait for admission again."""
        assert self.admission is not None
        admitted, evicted = self.admission.run(now)
        for seq in evicted:
            if seq in self._held:
                self._stop(seq, now)
            else:
                self.admission.requeue(seq, now)
                self._sched = None
        sched = self._sched
        for seq in admitted:
            view = self._views.get(seq)
            if sched is not None and view is not None and not view.running:
                sched.on_submitted(view, now)

    def _sync(self) -> None:
        """Re-read the jobs that changed since the last sync. A row the mirror cannot take
        (its GPUs are not this cluster's, or clash with another job's) fails that job alone."""
        self._event, rows = self.store.changed_since(self._event)
        self._mirror_all(rows)

    def _mirror_all(self, rows: list[JobRow]) -> None:
        for row in rows:
            try:
                self._mirror(row)
            except Exception as exc:  # one job's data never stops the others
                self._fail(row, "its record cannot be scheduled", exc)

    def _fail(self, row: JobRow, what: str, exc: BaseException) -> None:
        """End ``row``'s current attempt as FAILED because ``what`` raised ``exc``; the reason
        is stored (and shown by the API). A job that holds no GPUs is failed too, so no row
        the control loop cannot handle stays active."""
        reason = f"{what}: {type(exc).__name__}: {exc}"
        log.warning("job %s failed: %s", row.id, reason)
        now = self.clock()
        if row.state in HOLDING:
            self.store.mark_exited(row.seq, row.attempt, FAILED, now, None, reason)
        else:
            self.store.fail_pending(row.seq, now, reason)
        self._forget(row.request_id)

    def _launch(self, row: JobRow) -> bool:
        """Ask the back end to run ``row``'s current attempt; an error fails the job alone.
        Past its launch deadline the attempt is never launched (another service may have
        judged it dead, module docstring): the back end is asked what became of it instead,
        and it is requeued once gone, settled once exited. True if the job changed state."""
        now = self.clock()
        if row.launch_by is not None and now > row.launch_by:
            prior = PriorAttempt(
                self.request_for(row),
                self.service_id,
                self.backend.location,
                row.pid,
                row.pid_start,
                row.launch_by,
            )
            check = self.backend.probe(prior)
            if check.fate is AttemptFate.GONE:
                return self.store.mark_exited(
                    row.seq, row.attempt, PENDING, now, None, "launch deadline passed"
                )
            if check.fate is AttemptFate.EXITED:
                seen = Observation(row.request_id, ProcState.EXITED, check.exit_code)
                outcome, reason = _outcome(row, seen, None)
                return self.store.mark_exited(
                    row.seq, row.attempt, outcome, now, check.exit_code, reason
                )
            return False
        try:
            self.backend.launch(self.request_for(row))
        except Exception as exc:  # the back end's contract says never; contain it anyway
            self._fail(row, "the back end could not launch it", exc)
            return True
        return False

    def _forget(self, request_id: str) -> None:
        """Tell the back end an exited request's outcome is stored (an error is logged: the
        outcome is safe, the back end may report the request again)."""
        try:
            self.backend.forget(request_id)
        except Exception:
            log.exception("the back end could not forget request %s", request_id)

    def _terminate(self, row: JobRow, grace_s: float) -> None:
        """Ask the back end to stop ``row``'s current attempt; an error fails the job alone."""
        try:
            self.backend.terminate(row.request_id, grace_s)
        except Exception as exc:
            self._fail(row, "the back end could not stop it", exc)

    # ---- recovery ------------------------------------------------------------------------
    def recover(self) -> None:
        """After a restart: let the back end adopt the processes of jobs holding GPUs and
        clean up the rest. The next :meth:`step` settles whatever ended meanwhile."""
        self._sync()
        known = {
            row.request_id: KnownRequest(self.request_for(row), row.pid, row.pid_start)
            for row in self._rows.values()
            if row.state in HOLDING
        }
        # Our own earlier attempts another service is checking: adopted, never killed.
        for seq in self._kept:
            row = self.store.get(seq)
            if row is not None and row.state == ORPHAN_CHECK:
                known[row.request_id] = KnownRequest(self.request_for(row), row.pid, row.pid_start)
        self.backend.recover(known)

    # ---- one step ------------------------------------------------------------------------
    def step(self, cycle: bool = True) -> bool:
        """Observe and record outcomes; then, if ``cycle`` or any job ended, run a scheduling
        cycle and reconcile its plan. Returns whether a cycle ran."""
        if self.fenced is not None:
            raise self.fenced
        try:
            return self._step(cycle)
        except Fenced as exc:
            self.fenced = exc
            log.error("%s; this service stops acting", exc)
            raise

    def _step(self, cycle: bool) -> bool:
        began = perf_counter()
        now = self.clock()
        self._keep_lease(now)
        self._sync()
        changed = self._observe(now)
        changed |= self._check_orphans(now)
        if not (cycle or changed):
            return False
        self._sync()
        self._cycle(now)
        self.cycles += 1
        self.metrics.cycle((perf_counter() - began) * 1000.0)
        return True

    def _keep_lease(self, now: float) -> None:
        """Renew this service's lease and take over the jobs of lapsed services, every
        quarter lease."""
        if now - self._renewed_at < self.lease_s / 4:
            return
        self._renewed_at = now
        self.store.renew_lease(self.service_id, now, self.lease_s)
        self.taken_over += len(self.store.claim_lapsed(self.service_id, now))

    def _observe(self, now: float) -> bool:
        """Settle exits, (re)launch and (re)terminate as the rules say; True if a job ended."""
        try:
            obs = self.backend.observe()
            failures = {e.request_id: e for e in self.backend.errors()}
        except Exception:  # not one job's fault: this step settles nothing, the next retries
            log.exception("the back end could not be observed")
            return False
        changed = False
        owned: set[str] = set(self._kept.values())
        for seq in list(self._held):
            row = self._rows.get(seq)
            if row is None:  # one of ours another service is checking (module docstring)
                continue
            rid = self._rid[seq]
            owned.add(rid)
            o = obs.get(rid)
            if o is None:
                if row.state == RUNNING:
                    changed |= self._launch(row)
                else:
                    outcome = CANCELLED if row.cancel_requested else PENDING
                    changed |= self.store.mark_exited(
                        row.seq, row.attempt, outcome, now, None, "process gone while stopping"
                    )
                continue
            if o.state is ProcState.EXITED:
                last = self._reported.get(row.seq)
                if last is not None:
                    self.store.update_progress([(row.seq, *last)])
                outcome, reason = _outcome(row, o, failures.get(rid))
                if self.store.mark_exited(row.seq, row.attempt, outcome, now, o.exit_code, reason):
                    changed = True
                    if outcome == COMPLETED and row.start_time is not None:
                        self.history.add(row.name, row.user, now - row.start_time)
                self._forget(rid)
                continue
            if row.pid is None and o.pid is not None:
                self.store.mark_launched(row.seq, row.attempt, o.pid, o.start_time)
            if row.state == PREEMPTING:
                self._terminate(row, self.grace_s)
            if o.status:
                self._status[row.seq] = o.status
                report = (_number(o.status.get("progress")), _number(o.status.get("samples_per_s")))
                if report != self._reported.get(row.seq):
                    with self._lock:
                        self._reported[row.seq] = report
                    self._unsaved.add(row.seq)
        for rid, o in obs.items():
            if rid in owned:
                continue
            try:
                if o.state is ProcState.EXITED:
                    self.backend.forget(rid)
                else:
                    self.backend.terminate(rid, 0.0)
            except Exception:  # a stray request of no job: retried at the next step
                log.exception("the back end could not clean up request %s", rid)
        wall = time.monotonic()
        if self._unsaved and wall - self._saved_at >= PROGRESS_SAVE_S:
            self._saved_at = wall
            self.store.update_progress(
                (seq, *self._reported[seq]) for seq in self._unsaved if seq in self._reported
            )
            self._unsaved.clear()
        return changed

    def _check_orphans(self, now: float) -> bool:
        """Probe the old attempt of every job this service took over and settle those the
        back end says are dead (module docstring); True if one was settled. A probe that
        fails leaves the job as it is until the next step."""
        changed = False
        for row in list(self._orphans.values()):
            owner = row.orphan_of or ""
            info = self.store.service_info(owner)
            prior = PriorAttempt(
                self.request_for(row),
                owner,
                None if info is None else info[1],
                row.pid,
                row.pid_start,
                row.launch_by,
            )
            try:
                check = self.backend.probe(prior)
            except Exception:
                log.exception("the back end could not check job %s's attempt", row.id)
                continue
            if check.fate is AttemptFate.EXITED:
                outcome, reason = _outcome(
                    row, Observation(row.request_id, ProcState.EXITED, check.exit_code), None
                )
            elif check.fate is AttemptFate.GONE:
                outcome = CANCELLED if row.cancel_requested else PENDING
                reason = f"its attempt under service {owner} never ran or was killed"
            else:
                continue
            code = check.exit_code
            changed |= self.store.settle_orphan(row.seq, row.attempt, outcome, now, code, reason)
        return changed

    def live_progress(self) -> dict[int, tuple[float | None, float | None]]:
        """The latest (progress, samples/s) each running job reported (the store holds them
        as of the last save, at most ``PROGRESS_SAVE_S`` seconds older)."""
        with self._lock:
            return dict(self._reported)

    def row(self, seq: int) -> JobRow | None:
        """Job ``seq``'s row as of the last sync, while it is active here (else None)."""
        return self._rows.get(seq)

    def reported_status(self, seq: int) -> Mapping[str, Any] | None:
        """The latest status job ``seq`` reported while it ran here (None if none)."""
        return self._status.get(seq)

    def down_nodes(self) -> frozenset[str]:
        """The nodes the back end reported lost, drained or down at the last cycle."""
        with self._lock:
            return self._down

    def _exclude_unavailable_nodes(self) -> None:
        """Ask the back end which nodes take no new job now (remembered for
        :meth:`down_nodes`), keep them out of the plans (a node still holding jobs is taken
        out once they leave it) and bring them back when they return. If the back end cannot
        say, plan on the nodes known before; the next cycle asks again."""
        try:
            down = self.backend.unavailable_nodes()
        except Exception:
            log.exception("the back end could not list its unavailable nodes")
            down = self.down_nodes()
        with self._lock:
            self._down = down
        state = self._state
        for node, name in enumerate(state.node_names):
            up = name not in down
            if state.node_up[node] != up and (up or state.node_idle(node)):
                state.set_node_up(node, up)

    def _cycle(self, now: float) -> None:
        began = perf_counter()
        self._exclude_unavailable_nodes()
        if self.admission is not None:
            self._admit(now)
        plan = self._scheduler(now).cycle(0, now)
        self.last_plan_ms = (perf_counter() - began) * 1000.0
        taken = self.apply(plan, now)
        self.wake_at = plan.wake_at
        busy = len(self._cells) + taken
        self.metrics.sample(now, busy / max(1, self.total_gpus), len(self._waiting))

    def apply(self, plan: Plan, now: float) -> int:
        """Reconcile ``plan`` with the store and the back end, whichever policy made it (the
        rules of the module docstring): its preemptions, then its resizes (a resize to other
        GPUs is a stop through a checkpoint, and counts in :attr:`resizes`), then its starts,
        each after :meth:`start_blocked` and the planning's record of what the attempt runs
        with. Returns the GPUs its starts took."""
        for job in plan.preempts:
            self._stop(job.seq, now)
        for resize in plan.resizes:
            if resize.placement != self._held.get(resize.job.seq) and self._stop(
                resize.job.seq, now
            ):
                self.resizes += 1
        taken: set[tuple[int, int]] = set()
        for start in plan.starts:
            job = start.job
            cells = {(n, g) for n, gs in start.placement for g in gs}
            row = self._rows.get(job.seq)
            if row is None or self.start_blocked(cells, taken):
                if self._sched is not None:
                    self._sched.on_requeued(job, now)
                continue
            self.planning.starting(start, row, self.service_id)
            gpu_ids = {self.node_names[n]: list(gs) for n, gs in start.placement}
            new = self.store.mark_started(
                job.seq, gpu_ids, now, self.service_id, now + self.lease_s * LAUNCH_WINDOW
            )
            if new is None:
                self._sched = None  # withdrawn meanwhile (cancelled): rebuild the queue
                continue
            taken |= cells
            with self._lock:
                self._waiting.pop(new.seq, None)
            self._launch(new)
        return len(taken)

    def start_blocked(self, cells: set[tuple[int, int]], taken: set[tuple[int, int]]) -> bool:
        """Whether a start on GPUs ``cells`` ((node index, GPU) pairs) must wait: one of them
        is held by a job (running, or shutting down) or in ``taken`` (by an earlier start of
        the same plan), or on a node the back end reports down. The one check every start of
        every plan passes, so no GPU is ever held twice."""
        if cells & taken:
            return True
        down = self._down
        return any(c in self._cells or self.node_names[c[0]] in down for c in cells)

    def _stop(self, seq: int, now: float) -> bool:
        """Stop running job ``seq`` through a checkpoint: RUNNING → PREEMPTING, then SIGTERM
        (SIGKILL after the grace period; a back-end error fails the job alone). False if it
        was not running (already stopping, or gone)."""
        row = self._rows.get(seq)
        if row is None or not self.store.mark_preempting(row.seq, row.attempt, now):
            return False
        self._terminate(row, self.grace_s)
        return True

    def _view(self, row: JobRow, placement: Placement | None) -> LiveJob:
        duration = row.expected_duration_s
        estimate = duration
        if estimate is None and self.planning.needs_estimate:
            estimate = self.history.estimate(row.name, row.user)
        return LiveJob(
            row.seq,
            row.id,
            row.submit_time,
            self._demand(row.gpus),
            duration,
            estimate,
            placement,
            row.run_start,
            row.attained_gpu_s,
            self.planning.kind,
        )

    def queue_ranks(self) -> dict[int, int]:
        """Waiting jobs' positions (1 = next) in the policy's order now."""
        with self._lock:
            waiting = list(self._waiting.values())
        if self.admission is not None:
            waiting = [v for v in waiting if self.admission.admits(v.seq)]
        now = self.clock()
        rank_key = self.planning.rank_key
        keyed = sorted(waiting, key=lambda v: rank_key(v, now))
        return {v.seq: i for i, v in enumerate(keyed, 1)}


def _outcome(row: JobRow, o: Observation, failure: BackendError | None) -> tuple[str, str | None]:
    code = o.exit_code
    if code == 0:
        return COMPLETED, None
    if row.cancel_requested:
        return CANCELLED, "cancelled"
    if failure is not None:
        return (PENDING if failure.kind in RESUMABLE_ERRORS else FAILED), failure.message
    if code == EXIT_PREEMPTED or (row.state == PREEMPTING and code in _STOPPED_BY_US):
        return PENDING, None
    if code is None:
        return FAILED, "killed by a signal"
    return FAILED, f"exit code {code}"


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
