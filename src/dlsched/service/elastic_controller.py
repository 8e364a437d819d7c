"""The control loop's body for elastic policies (ONES, Pollux, Optimus, ...): each cycle asks the
policy for every job's GPUs and batch and resizes running jobs through the preemption protocol.

Observation, recording of outcomes and recovery are the rigid :class:`Controller`'s; only the
cycle differs:

1. A decision round comes every ``interval_s`` (the service's round), and at once when a job
   arrived or left since the last one. In it every active elastic job (pending, running, or
   preempting but not cancelled) is shown to the policy through the
   :class:`~dlsched.service.elastic_driver.ElasticDriver`, with its latest report (progress,
   measured throughput at its current size). Between rounds the last answer stands: the
   cycles that settle exits only start what it allocated, so a job the round resized is
   stopped once and relaunched once at the size decided.
2. A running job whose GPUs the answer changes, or leaves out, is asked to stop: PREEMPTING,
   then SIGTERM (it checkpoints and exits 75), SIGKILL after the grace period. Its exit requeues
   it (one more restart) and triggers the next cycle. A change of batch alone is not applied (it
   would cost a restart): the job keeps its batch until its GPUs change.
3. A pending job the answer allocates is started once every GPU it needs is free (held by no
   running or preempting job, on a node the back end has up): the size of the new attempt (GPU
   count, per-GPU batch) is recorded first, then the job is marked started on those GPUs and
   launched with ``DLSCHED_NUM_GPUS`` and ``DLSCHED_BATCH_SIZE``; the training workload resumes
   from its checkpoint directory. GPUs are only ever taken from the free set, so no two jobs
   hold one GPU, whatever the policy answers.

Queue ranks shown by the API are submit order (the elastic policy has no queue). A job stored
without its elastic spec (the service stopped between the two writes of a submission) is
cancelled with a log line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from time import perf_counter

from dlsched.backends.base import Backend, LaunchRequest
from dlsched.cluster.spec import ClusterSpec
from dlsched.elastic.policy import ElasticPolicy
from dlsched.elastic.types import Allocation
from dlsched.policy.registry import create_policy
from dlsched.service.controller import DEFAULT_GRACE_S, DEFAULT_LEASE_S, Controller
from dlsched.service.elastic_book import AttemptSize, ElasticBook, ElasticSpec
from dlsched.service.elastic_driver import ElasticDriver, LiveElasticJob, per_gpu_batch, run_history
from dlsched.service.records import COMPLETED, PENDING, RUNNING, GpuIds, JobRow
from dlsched.service.store import Store

log = logging.getLogger(__name__)


class ElasticController(Controller):
    """A :class:`Controller` whose cycle is an elastic policy's round (module docstring)."""

    def __init__(
        self,
        store: Store,
        backend: Backend,
        cluster: ClusterSpec,
        policy: ElasticPolicy,
        book: ElasticBook,
        clock: Callable[[], float] = time.time,
        grace_s: float = DEFAULT_GRACE_S,
        seed: int = 0,
        interval_s: float | None = None,
        service_id: str | None = None,
        lease_s: float = DEFAULT_LEASE_S,
    ) -> None:
        # The rigid FIFO policy only serves admission checks and the queue ranks.
        super().__init__(
            store,
            backend,
            cluster,
            create_policy("fifo"),
            clock=clock,
            grace_s=grace_s,
            seed=seed,
            service_id=service_id,
            lease_s=lease_s,
        )
        self.book = book
        self.elastic_policy = policy
        self.driver = ElasticDriver(policy, cluster, seed)
        self.interval_s = policy.interval_s if interval_s is None else interval_s
        if self.interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {self.interval_s}")
        self.resizes = 0
        """Running jobs stopped because their GPUs changed (not counting cancellations)."""
        self._answer: dict[str, Allocation] = {}
        self._decided_at: float | None = None
        self._decided_for: frozenset[int] = frozenset()

    # ---- submissions ---------------------------------------------------------------------
    def submission_problem(self, gpus: int, elastic: ElasticSpec | None) -> str | None:
        name = self.elastic_policy.name
        if elastic is None:
            return (
                f"elastic: policy {name!r} schedules elastic jobs only; submit with "
                "elastic=true, an application and a batch_size (dlsched submit --elastic)"
            )
        try:
            elastic.check(gpus)
        except ValueError as e:
            return str(e)
        if elastic.max_gpus > self.total_gpus:
            return (
                f"infeasible: max_gpus={elastic.max_gpus}: the cluster has {self.total_gpus} GPUs"
            )
        reason = self.infeasible_reason(gpus)
        return None if reason is None else f"infeasible: gpus={gpus}: {reason}"

    def submitted(self, seq: int, elastic: ElasticSpec | None) -> None:
        if elastic is not None:
            self.book.add(seq, elastic)

    # ---- launches ------------------------------------------------------------------------
    def request_for(self, row: JobRow) -> LaunchRequest:
        """The attempt's request, with the batch recorded for it (the per-GPU batch the policy
        chose) when it has one."""
        request = super().request_for(row)
        size = self.book.attempt(row.seq, row.attempt, row.owner)
        if size is None:
            return request
        return replace(request, batch_size=size.batch_size)

    # ---- the cycle -----------------------------------------------------------------------
    def _cycle(self, now: float) -> None:
        began = perf_counter()
        jobs: list[LiveElasticJob] = []
        for seq in sorted(self._rows):
            row = self._rows[seq]
            if row.cancel_requested:
                continue
            spec = self.book.spec(seq)
            if spec is None:
                log.error(
                    "job %s has no elastic spec (its submission broke off); cancelled", row.id
                )
                self.store.request_cancel(seq, now)
                continue
            batch = None
            if row.state == RUNNING:
                size = self.book.attempt(seq, row.attempt, row.owner)
                batch = size.batch_size if size else (row.batch_size or spec.batch_size)
            jobs.append(LiveElasticJob(row, spec, None, batch, self._status.get(seq)))
        self._finish_gone(now)
        active = frozenset(j.row.seq for j in jobs)
        due = self._decided_at is None or now - self._decided_at >= self.interval_s
        if jobs and (due or active != self._decided_for):
            self._decide(jobs, now)
            self._decided_at, self._decided_for = now, active
        answer = {j.row.id: self._answer[j.row.id] for j in jobs if j.row.id in self._answer}
        starts = self._start_allocated(jobs, answer, now) if jobs else 0
        self.last_plan_ms = (perf_counter() - began) * 1000.0
        busy = len(self._cells)
        self.metrics.sample(now, busy / max(1, self.total_gpus), len(self._waiting) - starts)

    def _decide(self, jobs: list[LiveElasticJob], now: float) -> None:
        """One decision round: record the running jobs' reports, ask the policy, stop the
        running jobs whose GPUs it changes."""
        shown = []
        for job in jobs:
            row = job.row
            if row.state == RUNNING:
                self.driver.observe(row.seq, job.status, row.gpu_ids, job.batch_size)
            history = run_history(self.store.events(row.seq), now)
            shown.append(LiveElasticJob(row, job.spec, history, job.batch_size, job.status))
        _, self._answer = self.driver.decide(now, shown)
        self._stop_changed(shown, self._answer, now)

    def _finish_gone(self, now: float) -> None:
        """Tell the policy of tracked jobs that left the active set: completions (ONES refits
        its predictor on them); the others are forgotten."""
        done: list[tuple[int, float]] = []
        for seq in [s for s in self.driver.tracks if s not in self._rows]:
            row = self.store.get(seq)
            if row is not None and row.state == COMPLETED:
                done.append((seq, row.end_time if row.end_time is not None else now))
            else:
                self.driver.forget(seq)
        self.driver.finished(done)

    def _stop_changed(
        self, jobs: list[LiveElasticJob], answer: dict[str, Allocation], now: float
    ) -> None:
        for job in jobs:
            row = job.row
            if row.state != RUNNING or job.batch_size is None:
                continue
            want = answer.get(row.id)
            have = self.driver.allocation_of(row.gpu_ids, job.batch_size)
            if have is not None and want is not None and want.gpus == have.gpus:
                continue
            if self.store.mark_preempting(row.seq, row.attempt, now):
                self.resizes += 1
                self._terminate(row, self.grace_s)

    def _start_allocated(
        self, jobs: list[LiveElasticJob], answer: dict[str, Allocation], now: float
    ) -> int:
        """Start the pending jobs the answer allocates whose GPUs are free; how many started."""
        down = self._observe_unavailable_nodes()
        free: dict[str, list[int]] = {}
        for n, spec in enumerate(self.cluster.nodes):
            free[spec.name] = [g for g in range(spec.gpus) if (n, g) not in self._cells]
        started = 0
        for job in jobs:
            row = job.row
            want = answer.get(row.id)
            if row.state != PENDING or want is None:
                continue
            gpu_ids: GpuIds = {}
            for index, count in want.gpus:
                node = self.driver.node_name(index)
                if node in down or len(free[node]) < count:
                    break
                gpu_ids[node] = free[node][:count]
            else:
                size = AttemptSize(want.num_gpus, per_gpu_batch(want))
                self.book.set_attempt(row.seq, row.attempt + 1, self.service_id, size)
                new = self.store.mark_started(row.seq, gpu_ids, now, self.service_id)
                if new is None:
                    continue
                for node, gs in gpu_ids.items():
                    free[node] = [g for g in free[node] if g not in gs]
                with self._lock:
                    self._waiting.pop(row.seq, None)
                self._launch(new)
                started += 1
        return started
