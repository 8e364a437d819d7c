"""Elastic policies (Pollux, ONES, Optimus, Gavel, Themis) run live: :class:`ElasticPlanning` and
the live side's allocation adapter, :class:`LiveElasticAdapter`.

The controller runs an elastic policy as the simulator does, on an
:class:`~dlsched.scheduler.allocation.AllocationScheduler`: each cycle the scheduler asks the
adapter for the wanted allocation of every active job, and the shared step
(:func:`~dlsched.scheduler.allocation.diff`) turns it into a Plan of starts, preemptions and
resizes that the controller applies as it applies every plan.

Rounds. The adapter asks the policy every ``interval_s`` seconds, and at once when a job arrived
or left or a node went down or came back since the last round. In a round every active job
(pending, running, or stopped by its plan and still stopping; not one being cancelled) is shown
to the policy through the :class:`~dlsched.service.control.elastic_driver.ElasticDriver` with its
latest
report, and the policy is told (:func:`~dlsched.elastic.round.decide_round`) what it may use: a
node the back end reports down has 0 GPUs, any other its free GPUs plus those its own jobs hold,
and every node keeps its size. The answer is validated against that view and cut to each job's
``max_gpus``. Between rounds it stands: every cycle gives its GPU counts per node concrete GPUs
on the cluster as it is then (:func:`~dlsched.scheduler.allocation.gpu_ids_for`: a job keeps its
GPUs on every node where its count is unchanged; waiting jobs pick before running jobs that
move) and re-diffs them, so a resized job is stopped once and, once its process is gone,
started once at the size decided, and a waiting job takes GPUs as they become free.

Configurations. The training workload has no gradient accumulation, so a policy's
``local_bsz`` × (``accum_steps`` + 1) is the per-GPU batch its job takes in one step: the wanted
configuration is ``BatchSetting(per-GPU batch)``, and a running job's is the batch recorded for
its attempt (:class:`~dlsched.service.control.elastic_book.ElasticBook`), written before the
attempt is
marked started (:meth:`ElasticPlanning.starting`). A change of batch alone is not applied (it
would cost a restart: the controller skips a resize to the GPUs a job already holds).

A job stored without its elastic spec (the service stopped between the two writes of a
submission) is cancelled with a log line. The API's queue positions are submit order.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace

from dlsched.cluster.state import ClusterState
from dlsched.elastic.policy import ElasticPolicy
from dlsched.elastic.round import decide_round, round_view
from dlsched.elastic.types import Allocation
from dlsched.perf.elastic_progress import BatchSetting
from dlsched.perf.model import ELASTIC
from dlsched.policy.base import Key
from dlsched.scheduler.allocation import AllocationAdapter, AllocationScheduler, Want, gpu_ids_for
from dlsched.scheduler.plan import JobConfig, Start
from dlsched.scheduler.view import JobView
from dlsched.service.control.elastic_book import AttemptSize, ElasticBook, ElasticSpec
from dlsched.service.control.elastic_driver import (
    ElasticDriver,
    LiveElasticJob,
    per_gpu_batch,
    run_history,
)
from dlsched.service.control.planning import JobBoard, Planning
from dlsched.service.store.database import Store
from dlsched.service.store.records import COMPLETED, RUNNING, JobRow

log = logging.getLogger(__name__)


class LiveElasticAdapter(AllocationAdapter):
    """One elastic policy over the controller's cluster state ``state`` (module docstring);
    ``board`` gives the jobs' rows, reports and the nodes down."""

    def __init__(
        self,
        policy: ElasticPolicy,
        store: Store,
        book: ElasticBook,
        state: ClusterState,
        board: JobBoard,
        seed: int,
        interval_s: float,
    ) -> None:
        self.policy = policy
        self.name = policy.name
        self.store = store
        self.book = book
        self.state = state
        self.board = board
        self.interval_s = interval_s
        self.driver = ElasticDriver(policy, state.spec, seed)
        self.view = self.driver.view
        """The cluster at full size, as the policy was bound to it."""
        index = {name: i for i, name in enumerate(state.node_names)}
        self.members = [index[n.name] for n in self.view.nodes]
        """The state's index of each node of :attr:`view`, in view order."""
        self.rounds = 0
        self._answer: dict[int, tuple[dict[int, int], BatchSetting]] = {}
        self._decided_at: float | None = None
        self._decided_for: tuple[frozenset[int], frozenset[str]] = (frozenset(), frozenset())
        self._sizes: dict[int, tuple[int, str | None, AttemptSize | None]] = {}

    @property
    def interval(self) -> float | None:
        return self.interval_s

    def never_fits(self, pool: int, job: JobView) -> str | None:
        spec = self.book.spec(job.seq)
        if spec is None:
            return "no elastic spec (its submission broke off)"
        return self.policy.never_fits(spec.application, job.gpus, self.view)

    def current_config(self, job: JobView) -> JobConfig | None:
        row = self.board.row(job.seq)
        size = self._size(row) if row is not None else None
        return None if size is None else BatchSetting(size.batch_size)

    def finished(self, job: JobView, now: float) -> None:
        """``job`` left the scheduler: a completion is told to the policy, anything else
        (cancelled, failed, taken over) forgotten."""
        self._settle_gone((job.seq,), now)

    def decide(
        self, pool: int, now: float, jobs: Sequence[JobView], available: Sequence[int]
    ) -> dict[JobView, Want]:
        shown: list[tuple[JobView, LiveElasticJob]] = []
        for job in sorted(jobs, key=lambda j: j.seq):
            row = self.board.row(job.seq)
            if row is None or row.cancel_requested:
                continue
            spec = self.book.spec(job.seq)
            if spec is None:
                log.error(
                    "job %s has no elastic spec (its submission broke off); cancelled", row.id
                )
                self.store.request_cancel(job.seq, now)
                continue
            status = self.board.reported_status(job.seq)
            shown.append((job, LiveElasticJob(row, spec, None, self._batch(row, spec), status)))
        down = self.board.down_nodes()
        decided_for = (frozenset(job.seq for job, _ in shown), down)
        due = self._decided_at is None or now - self._decided_at >= self.interval_s
        if shown and (due or decided_for != self._decided_for):
            self._round(pool, now, jobs, shown, available, down)
            self._decided_at, self._decided_for = now, decided_for
        answer = self._answer
        # Waiting jobs pick GPUs before running ones that move (and free GPUs of their own).
        order = sorted((job for job, _ in shown if job.seq in answer), key=lambda j: j.running)
        counts = {job: answer[job.seq][0] for job in order}
        running = [job for job in jobs if job.placement is not None]
        placements = gpu_ids_for(self.state, running, counts)
        return {job: Want(placements[job], answer[job.seq][1]) for job in counts}

    def _round(
        self,
        pool: int,
        now: float,
        jobs: Sequence[JobView],
        shown: Sequence[tuple[JobView, LiveElasticJob]],
        available: Sequence[int],
        down: frozenset[str],
    ) -> None:
        """One decision round: take in the running jobs' reports, settle the jobs that left,
        ask the policy and give its answer concrete GPUs."""
        driver = self.driver
        for job, live in shown:
            if live.row.state == RUNNING:
                driver.observe(job.seq, live.status, live.row.gpu_ids, live.batch_size)
        active = {job.seq for job in jobs}
        self._settle_gone([seq for seq in driver.tracks if seq not in active], now)
        infos = [
            driver.info(replace(live, history=run_history(self.store.events(job.seq), now)), now)
            for job, live in shown
        ]
        free = dict(zip(self.state.pool_nodes[pool], available, strict=True))
        usable = [
            0 if node.name in down else free[member]
            for node, member in zip(self.view.nodes, self.members, strict=True)
        ]
        answer = decide_round(self.policy, now, infos, round_view(self.view, usable))
        self._answer = {}
        for job, live in shown:
            alloc = answer.get(live.row.id)
            if alloc is not None:
                capped = _cap(alloc, live.spec.max_gpus)
                counts = {self.members[pos]: k for pos, k in capped.gpus}
                self._answer[job.seq] = (counts, BatchSetting(per_gpu_batch(capped)))
        self.rounds += 1

    def _settle_gone(self, seqs: Iterable[int], now: float) -> None:
        """Jobs ``seqs`` left: tell the policy of those that completed, forget the others."""
        done: list[tuple[int, float]] = []
        for seq in seqs:
            self._sizes.pop(seq, None)
            self._answer.pop(seq, None)
            row = self.store.get(seq)
            if row is not None and row.state == COMPLETED:
                done.append((seq, row.end_time if row.end_time is not None else now))
            else:
                self.driver.forget(seq)
        self.driver.finished(done)

    def _size(self, row: JobRow) -> AttemptSize | None:
        """The size ``row``'s running attempt was started with (None if it is not running or
        has no record). Cached: the record of an attempt that launched no longer changes."""
        if row.state != RUNNING:
            return None
        cached = self._sizes.get(row.seq)
        if cached is not None and cached[:2] == (row.attempt, row.owner):
            return cached[2]
        size = self.book.attempt(row.seq, row.attempt, row.owner)
        self._sizes[row.seq] = (row.attempt, row.owner, size)
        return size

    def _batch(self, row: JobRow, spec: ElasticSpec) -> int | None:
        """The per-GPU batch ``row`` runs with now (None unless it runs)."""
        if row.state != RUNNING:
            return None
        size = self._size(row)
        return size.batch_size if size is not None else (row.batch_size or spec.batch_size)


class ElasticPlanning(Planning):
    """An elastic policy as the controller runs it (module docstring). ``interval_s`` is the
    time between decision rounds (default: the policy's ``interval_s``)."""

    kind = ELASTIC
    preemptive = True
    keeps_stopping = True

    def __init__(
        self,
        policy: ElasticPolicy,
        store: Store,
        state: ClusterState,
        board: JobBoard,
        seed: int = 0,
        interval_s: float | None = None,
    ) -> None:
        interval = policy.interval_s if interval_s is None else interval_s
        if not (math.isfinite(interval) and interval > 0):
            raise ValueError(f"interval_s: must be a positive number of seconds, got {interval}")
        self.policy = policy
        self.name = policy.name
        self.book = ElasticBook(store)
        self.adapter = LiveElasticAdapter(policy, store, self.book, state, board, seed, interval)
        self._state = state
        self._total_gpus = sum(state.node_gpus)

    def scheduler(self) -> AllocationScheduler:
        return AllocationScheduler(self.adapter, self._state)

    def submission_problem(self, gpus: int, elastic: ElasticSpec | None) -> str | None:
        if elastic is None:
            return (
                f"elastic: policy {self.name!r} schedules elastic jobs only; submit with "
                "elastic=true, an application and a batch_size (dlsched submit --elastic)"
            )
        try:
            elastic.check(gpus)
        except ValueError as e:
            return str(e)
        if elastic.max_gpus > self._total_gpus:
            return (
                f"infeasible: max_gpus={elastic.max_gpus}: the cluster has {self._total_gpus} GPUs"
            )
        reason = self.policy.never_fits(elastic.application, gpus, self.adapter.view)
        return None if reason is None else f"infeasible: gpus={gpus}: {reason}"

    def submitted(self, seq: int, elastic: ElasticSpec | None) -> None:
        if elastic is not None:
            self.book.add(seq, elastic)

    def rank_key(self, job: JobView, now: float) -> Key:
        return (job.submit_time, float(job.seq))

    def starting(self, start: Start, row: JobRow, owner: str) -> None:
        """Record the GPU count and per-GPU batch the attempt starts with."""
        config = start.config
        if not isinstance(config, BatchSetting):
            raise TypeError(f"start of job {row.id}: expected a BatchSetting, got {config!r}")
        gpus = sum(len(g) for _, g in start.placement)
        batch = config.local_bsz * (config.accum_steps + 1)
        self.book.set_attempt(row.seq, row.attempt + 1, owner, AttemptSize(gpus, batch))

    def batch_size(self, row: JobRow) -> int | None:
        """The batch recorded for the attempt when it has one."""
        size = self.book.attempt(row.seq, row.attempt, row.owner)
        return row.batch_size if size is None else size.batch_size


def _cap(alloc: Allocation, cap: int) -> Allocation:
    """``alloc`` cut to at most ``cap`` GPUs, nodes in order."""
    if alloc.num_gpus <= cap:
        return alloc
    left, kept = cap, []
    for node, count in alloc.gpus:
        take = min(count, left)
        if take > 0:
            kept.append((node, take))
        left -= take
    return Allocation(tuple(kept), alloc.local_bsz, alloc.accum_steps, alloc.adaptive)
