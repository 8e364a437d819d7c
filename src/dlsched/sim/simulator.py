"""The simulator: the composition root that replays a trace on a cluster under a policy.

It owns the clock (an :class:`Engine`), the :class:`ClusterState`, the :class:`Scheduler` and
the jobs, and applies each cycle's :class:`Plan`. Events at one instant run in a fixed order:
node failures and repairs, then job finishes, then arrivals, then one scheduling cycle over the
pools those events touched. Round-based policies decide only at multiples of their interval;
rounds in which nothing happened (no event in the pool, no priority threshold crossed) are
skipped, which gives the same result as running every round (``every_round`` checks it).
"""

from __future__ import annotations

import math
import time as wallclock
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from dlsched.cluster.spec import ClusterSpec
from dlsched.cluster.state import WHOLE, ClusterState, Demand
from dlsched.metrics.jobs import JobRecords
from dlsched.metrics.summary import baseline_comparison, makespan_window, summarize
from dlsched.metrics.timeline import TimelineRecorder
from dlsched.perf.duration.base import DurationEstimator
from dlsched.perf.duration.registry import create_estimator, estimators
from dlsched.perf.model import PerfModel, ReplayModel
from dlsched.placement.registry import create_placer
from dlsched.policy.base import Policy
from dlsched.policy.registry import create_policy
from dlsched.power.registry import create_power_manager
from dlsched.scheduler.cycle import Scheduler
from dlsched.scheduler.plan import Plan
from dlsched.sim.config import SimConfig
from dlsched.sim.engine import Engine
from dlsched.sim.faults import MtbfModel, read_outages
from dlsched.sim.job import DONE, PENDING, RUNNING, SimJob
from dlsched.sim.power_states import NodePower
from dlsched.trace.schema import Trace

P_NODE, P_FINISH, P_ARRIVAL, P_CYCLE, P_POWER = 0, 1, 2, 3, 4
ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class RunResult:
    """Everything a run produced: per-job records, the sampled timeline and the summary; with
    ``record_segments``, every allocation interval and node power transition
    ``(time, node, state)`` (states of :mod:`dlsched.sim.power_states`)."""

    jobs: pa.Table
    timeline: pa.Table
    summary: dict[str, Any]
    config: SimConfig
    segments: list[Segment] | None = None
    power_transitions: list[tuple[float, int, int]] | None = None


@dataclass(frozen=True, slots=True)
class Segment:
    """One GPU share held by one job over ``[begin, end)``; GPU -1 marks a CPU-only job."""

    row: int
    node: int
    gpu: int
    milli: int
    begin: float
    end: float


class Simulator:
    """Replays ``trace`` on ``cluster`` (see the module docstring). One instance, one run."""

    def __init__(
        self,
        trace: Trace,
        cluster: ClusterSpec,
        config: SimConfig,
        perf: PerfModel | None = None,
        policy: Policy | None = None,
        progress: ProgressFn | None = None,
        record_segments: bool = False,
        estimator: DurationEstimator | None = None,
    ) -> None:
        """``record_segments`` keeps every allocation interval (for invariant checks)."""
        self.trace = trace
        self.cluster = cluster
        self.config = config
        self.perf = perf or ReplayModel()
        self.policy = policy or create_policy(config.policy, config.policy_options)
        self.placer = create_placer(config.placement, config.seed)
        self.estimator = estimator
        if self.estimator is None and config.estimator is not None:
            self.estimator = create_estimator(config.estimator, config.seed)
        if self.policy.needs_estimate and self.estimator is None:
            raise ValueError(
                f"policy {self.policy.name!r} needs a duration estimator (--estimator); "
                f"available: {', '.join(sorted(estimators()))}"
            )
        self.state = ClusterState(cluster, config.use_partitions)
        self.scheduler = Scheduler(self.policy, self.placer, self.state)
        self.engine = Engine()
        power = config.power
        manager = (
            None
            if power.manager is None
            else create_power_manager(power.manager, power.manager_options)
        )
        self.power = NodePower(
            self.state,
            power.wake_latency_s,
            lambda at, fn, node: self.engine.schedule(at, P_NODE, fn, node),
            self._on_node_ready,
            lambda: self.engine.now,
            manager,
        )
        self._track_nodes = self.power.tracks_idle
        self.progress = progress
        self.interval = self.policy.interval
        # Event-driven policies run a cycle, which samples the timeline, after every instant
        # with events; round-based ones also need a sample at each event between rounds.
        self._sample_events = self.interval is not None
        self.timeline = TimelineRecorder(
            self.state.pool_names, self.state.pool_total_gpus, config.timeline_step_s
        )
        self._load_columns()
        n = len(trace)
        self.records = JobRecords(n)
        self._next_row = 0
        self._live = 0
        self._finished = 0
        self._dirty: set[int] = set()
        self._cycles_at: set[float] = set()
        self._wake = [math.inf] * self.state.num_pools
        self._next_wake = math.inf
        self._demands: dict[tuple[int, int, float, float, str | None], Demand] = {}
        self._node_jobs: list[set[SimJob]] | None = None
        self._mtbf: MtbfModel | None = None
        self.failures = 0
        self.cycles = 0
        self._progress_every = max(1, n // 200)
        self.segments: list[Segment] | None = [] if record_segments else None

    # ---- setup ---------------------------------------------------------------------------
    def _load_columns(self) -> None:
        t = self.trace.table
        self._ids: list[str] = t.column("job_id").to_pylist()
        self._submit: list[float] = t.column("submit_time").to_pylist()
        self._gpus: list[int] = t.column("num_gpus").to_pylist()
        self._duration: list[float | None] = t.column("duration").to_pylist()
        self._work: list[float | None] = t.column("work").to_pylist()
        self._work_unit: list[str | None] = t.column("work_unit").to_pylist()
        self._milli: list[int | None] = t.column("gpu_milli").to_pylist()
        self._cpus: list[float | None] = t.column("num_cpus").to_pylist()
        self._mem: list[float | None] = t.column("memory_mib").to_pylist()
        self._gtype: list[str | None] = t.column("gpu_type").to_pylist()
        vcs = t.column("vc")
        self._vc: list[str | None] = vcs.to_pylist()
        pool_of = {name: i for i, name in enumerate(self.state.pool_names)}
        self._pool_of_vc = pool_of

    def _pool_for(self, vc: str | None) -> tuple[int, str | None]:
        if not self.config.use_partitions or self.state.num_pools == 1:
            if self.config.use_partitions and vc is not None and vc not in self._pool_of_vc:
                return -1, f"partition {vc!r} not in cluster {self.cluster.name!r}"
            return 0, None
        if vc is None:
            return -1, (
                f"job names no partition and cluster {self.cluster.name!r} has "
                f"{self.state.num_pools}; run without partitions to pool them"
            )
        pool = self._pool_of_vc.get(vc)
        if pool is None:
            return -1, f"partition {vc!r} not in cluster {self.cluster.name!r}"
        return pool, None

    # ---- run -----------------------------------------------------------------------------
    def run(self) -> RunResult:
        """Simulate to the end: every admitted job finishes. Returns the run's records."""
        started = wallclock.perf_counter()
        if self.estimator is not None:
            self.estimator.bind(self.trace)
        if self._submit:
            self._setup_faults()
            self.engine.schedule(self._submit[0], P_ARRIVAL, self._on_arrival)
            manager = self.power.manager
            if manager is not None:
                manager.bind(self._submit[0], self.trace.origin_unix, self.config.seed)
                self.engine.schedule(self._submit[0], P_POWER, self._on_power_step, 0)
            self.engine.run()
        if self._live:
            raise RuntimeError(f"simulation ended with {self._live} unfinished jobs (a bug)")
        wall = wallclock.perf_counter() - started
        jobs = self.records.to_table(self._ids, self.state.pool_names)
        start = self._submit[0] if self._submit else 0.0
        end = max(self.engine.now, start)
        timeline = self.timeline.to_table(start, end)
        managed = self.power.manager is not None
        summary = summarize(
            jobs,
            partition_gpus=dict(
                zip(self.state.pool_names, self.state.pool_total_gpus, strict=True)
            ),
            policy=self.policy.name,
            placement=self.placer.name,
            sim_wall_s=wall,
            idle_w_per_gpu=self.config.power.idle_w_per_gpu,
            busy_extra_w_per_gpu=self.config.power.busy_extra_w_per_gpu,
            powered_gpus=self.power.powered_gpus() if managed else None,
            extra={
                "failures": self.failures,
                "events": self.engine.events_processed,
                "cycles": self.cycles,
                "cluster": self.cluster.name,
                "seed": self.config.seed,
            },
        )
        if managed:
            summary.update(self.power.report(*makespan_window(jobs)))
            always_on = summary["energy_always_on_kwh"]
            summary["energy_saved_kwh"] = always_on - summary["energy_kwh"]
            summary["energy_saved_fraction"] = (
                summary["energy_saved_kwh"] / always_on if always_on else None
            )
        transitions = self.power.transitions if self.segments is not None else None
        return RunResult(jobs, timeline, summary, self.config, self.segments, transitions)

    # ---- arrivals ------------------------------------------------------------------------
    def _on_arrival(self, _: Any) -> None:
        now = self.engine.now
        submit = self._submit
        n = len(submit)
        i = self._next_row
        touched = self._dirty
        while i < n and submit[i] == now:
            job = self._admit(i, now)
            if job is not None:
                self.scheduler.on_submitted(job, now)
                self._live += 1
                touched.add(job.pool)
                if self._sample_events:
                    self._sample(job.pool, now)
            i += 1
        self._next_row = i
        if i < n:
            self.engine.schedule(submit[i], P_ARRIVAL, self._on_arrival)
        self._request_cycle(now)
        if self._live == 0 and i >= n:
            self.engine.stop()

    def _admit(self, row: int, now: float) -> SimJob | None:
        pool, reason = self._pool_for(self._vc[row])
        gpus = self._gpus[row]
        milli = self._milli[row]
        shape = (
            gpus,
            WHOLE if milli is None or gpus == 0 else milli,
            self._cpus[row] or 0.0,
            self._mem[row] or 0.0,
            self._gtype[row],
        )
        demand = self._demands.get(shape)
        if demand is None:
            demand = self._demands[shape] = Demand(*shape)
        duration = self._duration[row]
        work = self._work[row]
        if self._work_unit[row] not in (None, "seconds") or work is None:
            work = duration
        if reason is None and work is None:
            reason = "no run time or work: replay needs a duration (or a performance model)"
        if reason is None:
            reason = self.scheduler.never_fits(pool, demand)
        if reason is not None:
            self.records.set_aside(row, reason, gpus, now)
            return None
        assert work is not None
        job = SimJob(row, self._ids[row], now, demand, work, duration, pool)
        if self.estimator is not None:
            job.estimate = self.estimator.estimate(row, now)
        return job

    # ---- cycles --------------------------------------------------------------------------
    def _request_cycle(self, at: float) -> None:
        """Make sure a cycle runs at ``at`` (rounded up to a round for round-based policies)
        after every other event of that instant. An event-driven cycle whose instant has no
        other event left runs at once instead of through the heap (same order, less work)."""
        now = self.engine.now
        if self.interval is not None:
            at = max(math.ceil(at / self.interval - 1e-9) * self.interval, now)
        elif at == now and at not in self._cycles_at:
            nxt = self.engine.peek_time()
            if nxt is None or nxt > now:
                self._run_cycle(now)
                return
        if at not in self._cycles_at:
            self._cycles_at.add(at)
            self.engine.schedule(at, P_CYCLE, self._on_cycle, at)

    def _on_cycle(self, at: float) -> None:
        self._cycles_at.discard(at)
        self._run_cycle(self.engine.now)

    def _run_cycle(self, now: float) -> None:
        pools = self._dirty
        self._dirty = set()
        if self._next_wake <= now + 1e-9:
            self._next_wake = math.inf
            for p, wake in enumerate(self._wake):
                if wake <= now + 1e-9:
                    pools.add(p)
                    self._wake[p] = math.inf
                elif wake < self._next_wake:
                    self._next_wake = wake
        every_round = self.config.every_round and self.interval is not None
        if every_round:
            pools = set(range(self.state.num_pools))
        for pool in sorted(pools) if len(pools) > 1 else pools:
            self.cycles += 1
            plan = self.scheduler.cycle(pool, now)
            if plan:
                self._apply(plan, now)
            self._sample(pool, now)
            if self._track_nodes:
                q = self.scheduler.pools[pool]
                if q.pending_jobs:
                    self.power.on_demand(pool, q.pending_gpus, q.running_jobs, now)
            if plan.wake_at is not None:
                self._wake[pool] = plan.wake_at
                self._next_wake = min(self._next_wake, plan.wake_at)
                self._request_cycle(max(plan.wake_at, now))
        if every_round and self._live:
            self._request_cycle(now + self.interval)  # type: ignore[operator]

    def _apply(self, plan: Plan, now: float) -> None:
        state, sched = self.state, self.scheduler
        for view in plan.preempts:
            job = view
            assert isinstance(job, SimJob)
            self._stop(job, now)
            job.preemptions += 1
            job.stall_next = self.config.checkpoint.cost(job.gpus)
            sched.on_stopped(job, now)
        for start in plan.starts:
            job = start.job
            assert isinstance(job, SimJob)
            placement = start.placement
            d = job.demand
            state.allocate(placement, d.milli, d.cpus, d.memory_mib)
            job.placement = placement
            job.status = RUNNING
            job.epoch += 1
            job.seg_begin = now
            job.seg_start = now + job.stall_next
            job.stall_next = 0.0
            if job.first_start != job.first_start:
                job.first_start = now
            rate = self.perf.rate(job, placement, state)
            job.rate = rate
            finish = job.seg_start + (job.work - job.done) / rate
            self.engine.schedule(finish, P_FINISH, self._on_finish, (job, job.epoch))
            sched.on_started(job)
            if self._node_jobs is not None:
                for node, _ in placement:
                    self._node_jobs[node].add(job)
            if self._track_nodes:
                for node, _ in placement:
                    self.power.node_used(node)

    def _stop(self, job: SimJob, now: float, keep_progress: bool = True) -> None:
        """Take a running job off its resources, accounting progress and GPU time."""
        d = job.demand
        assert job.placement is not None
        if keep_progress:
            job.done = job.done_at(now)
        held = (now - job.seg_begin) * job.gpu_weight()
        job.held_gpu_s += held
        job.attained_base += (now - job.seg_begin) * job.gpus
        self.state.release(job.placement, d.milli, d.cpus, d.memory_mib)
        if self.segments is not None:
            for node, gpus in job.placement:
                for g in gpus or (-1,):
                    self.segments.append(Segment(job.row, node, g, d.milli, job.seg_begin, now))
        if self._node_jobs is not None:
            for node, _ in job.placement:
                self._node_jobs[node].discard(job)
        if self._track_nodes:
            for node, _ in job.placement:
                self.power.node_freed(node, now)
        job.placement = None
        job.status = PENDING
        job.epoch += 1

    # ---- finishes ------------------------------------------------------------------------
    def _on_finish(self, arg: tuple[SimJob, int]) -> None:
        job, epoch = arg
        if job.epoch != epoch:
            return
        now = self.engine.now
        job.done = job.work
        self._stop(job, now, keep_progress=False)
        job.status = DONE
        job.end = now
        self.scheduler.on_finished(job)
        self.records.finish(job)
        if self.estimator is not None:
            self.estimator.observe(job.row, job.duration or job.work, now)
        self._live -= 1
        self._finished += 1
        self._dirty.add(job.pool)
        if self._sample_events:
            self._sample(job.pool, now)
        self._request_cycle(now)
        if self.progress is not None and self._finished % self._progress_every == 0:
            self.progress(self._finished, len(self._submit))
        if self._live == 0 and self._next_row >= len(self._submit):
            self.engine.stop()

    def _sample(self, pool: int, now: float) -> None:
        q = self.scheduler.pools[pool]
        self.timeline.record(
            pool,
            now,
            self.state.busy_gpus(pool),
            self.state.pool_up_gpus[pool],
            q.running_jobs,
            q.pending_jobs,
            q.pending_gpus,
        )

    # ---- power management ----------------------------------------------------------------
    def _on_power_step(self, step: int) -> None:
        if self._live == 0 and self._next_row >= len(self._submit):
            return
        now = self.engine.now
        queued = [q.pending_jobs for q in self.scheduler.pools]
        self.power.decide(step, now, queued)
        for pool in range(self.state.num_pools):
            self._sample(pool, now)
        manager = self.power.manager
        assert manager is not None
        nxt = self._submit[0] + (step + 1) * manager.interval_s
        self.engine.schedule(nxt, P_POWER, self._on_power_step, step + 1)

    def _on_node_ready(self, node: int) -> None:
        now = self.engine.now
        pool = self.state.node_pool[node]
        self._dirty.add(pool)
        self._sample(pool, now)
        self._request_cycle(now)

    # ---- faults --------------------------------------------------------------------------
    def _setup_faults(self) -> None:
        faults = self.config.faults
        if not faults.enabled:
            return
        self._node_jobs = [set() for _ in self.cluster.nodes]
        if faults.file:
            for outage in read_outages(faults.file, self.state.node_names):
                self.engine.schedule(outage.fail_time, P_NODE, self._on_fail, outage.node)
                self.engine.schedule(outage.repair_time, P_NODE, self._on_repair, outage.node)
        if faults.mtbf_s is not None:
            self._mtbf = MtbfModel(faults, self.config.seed)
            for node in range(len(self.cluster.nodes)):
                t = self._mtbf.next_failure(0.0)
                self.engine.schedule(t, P_NODE, self._on_fail, node)

    def _on_fail(self, node: int) -> None:
        now = self.engine.now
        if self.power.failed[node]:
            return
        assert self._node_jobs is not None
        interval = self.config.checkpoint.interval_s
        for job in sorted(self._node_jobs[node], key=lambda j: j.seq):
            saved, saved_at = job.done, job.seg_begin
            if interval > 0 and now > job.seg_start:
                checkpoints = math.floor((now - job.seg_start) / interval)
                if checkpoints > 0:
                    saved += checkpoints * interval * job.rate
                    saved_at = job.seg_start + checkpoints * interval
            lost_s = now - saved_at
            self._stop(job, now)
            job.done = min(saved, job.work)
            job.lost_gpu_s += max(0.0, lost_s) * job.gpu_weight()
            job.restarts += 1
            job.stall_next = self.config.checkpoint.cost(job.gpus)
            self.scheduler.on_stopped(job, now)
            self._dirty.add(job.pool)
        self.power.set_failed(node, True)
        self.failures += 1
        pool = self.state.node_pool[node]
        self._dirty.add(pool)
        self._sample(pool, now)
        self._request_cycle(now)
        if self._mtbf is not None:
            self.engine.schedule(self._mtbf.repair_time(now), P_NODE, self._on_repair, node)

    def _on_repair(self, node: int) -> None:
        now = self.engine.now
        if not self.power.failed[node]:
            return
        self.power.set_failed(node, False)
        pool = self.state.node_pool[node]
        self._dirty.add(pool)
        self._sample(pool, now)
        self._request_cycle(now)
        if self._mtbf is not None:
            self.engine.schedule(self._mtbf.next_failure(now), P_NODE, self._on_fail, node)


def simulate(
    trace: Trace,
    cluster: ClusterSpec,
    config: SimConfig | None = None,
    perf: PerfModel | None = None,
    progress: ProgressFn | None = None,
    record_segments: bool = False,
) -> RunResult:
    """Run one simulation and return its records (see :class:`Simulator`). A run with a power
    manager and ``compare_baseline`` also runs the same setup with every node always on and
    adds the comparison to its summary (:func:`baseline_comparison`)."""
    config = config or SimConfig()
    result = Simulator(
        trace, cluster, config, perf, progress=progress, record_segments=record_segments
    ).run()
    power = config.power
    if power.manager is not None and power.compare_baseline:
        always_on = replace(power, manager=None, manager_options={})
        baseline = Simulator(trace, cluster, replace(config, power=always_on), perf).run()
        result.summary.update(baseline_comparison(result.summary, baseline.summary))
    return result
