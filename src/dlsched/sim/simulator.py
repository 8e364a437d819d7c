"""The simulator: the composition root that replays a trace on a cluster under its policies.

It owns the clock (an :class:`Engine`), the :class:`ClusterState`, the policy groups
(:mod:`dlsched.sim.groups`: ordering schedulers and allocation schedulers) and the jobs of
every kind (rigid, elastic, parameter-server), and applies each cycle's :class:`Plan`. A job's
progress is work ÷ rate from its kind's progress model (:mod:`dlsched.perf.model`); the next
event of a running job is its next boundary (an elastic job's epoch end) or its finish.

Events at one instant run in a fixed order: node failures and repairs, then job boundaries and
finishes, then arrivals, then the cycles of the groups whose pools those events touched
(allocation groups first, then ordering groups), then power management. Round-based policies
decide only at multiples of their interval; an ordering policy's rounds in which nothing happened
(no event in the pool, no priority threshold crossed) are skipped, which gives the same result
as running every round (``every_round`` checks it); an allocation policy decides at every round
while it has jobs (its decisions may change with time alone).

Restart costs (:class:`~dlsched.sim.config.RestartCost`, per job kind) stall a job that resumes
or moves; a node failure rolls the jobs on it back to their last checkpoint and requeues them.
"""

from __future__ import annotations

import math
import time as wallclock
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dlsched.cluster.spec import ClusterSpec
from dlsched.cluster.state import WHOLE, ClusterState, Demand, OverCommitError, Placement
from dlsched.cluster.topology import TIER_NAMES, placement_tier
from dlsched.metrics.jobs import JobRecords
from dlsched.metrics.summary import (
    baseline_comparison,
    colocation_figures,
    makespan_window,
    summarize,
)
from dlsched.metrics.timeline import TimelineRecorder
from dlsched.perf.comm import TierComm, check_comm_model
from dlsched.perf.duration.base import DurationEstimator
from dlsched.perf.duration.registry import create_estimator, estimators
from dlsched.perf.elastic_progress import ElasticModel, new_state
from dlsched.perf.model import ELASTIC, KIND_NAMES, PS, RIGID, ProgressModel, ReplayModel
from dlsched.perf.perfbook import PerfBook, variant_for_gpu_type
from dlsched.perf.profiles import APPLICATIONS
from dlsched.perf.throughput_tables import TableError, is_table_application
from dlsched.placement.registry import create_placer
from dlsched.power.registry import create_power_manager
from dlsched.progress import ProgressFn
from dlsched.scheduler.allocation import AllocationScheduler
from dlsched.scheduler.colocation import CoLocationScheduler
from dlsched.scheduler.cycle import Scheduler
from dlsched.scheduler.plan import EMPTY_PLAN, Plan
from dlsched.sim.config import RestartCost, SimConfig
from dlsched.sim.engine import Engine, frozen_heap
from dlsched.sim.faults import MtbfModel, read_outages
from dlsched.sim.groups import Group, build_groups
from dlsched.sim.job import DONE, PENDING, RUNNING, KindJob, SimJob
from dlsched.sim.kinds import KindColumns, check_elastic, kind_columns, ps_job
from dlsched.sim.power_states import NodePower
from dlsched.sim.report import kind_summary
from dlsched.sim.sharing import Sharing
from dlsched.trace.schema import Trace

if TYPE_CHECKING:
    from dlsched.tenancy.stage import AdmissionStage

# The parameter-server side (dlsched.ps) and the admission stage (dlsched.tenancy) are imported
# only by a run that has PS jobs or queues.

P_NODE, P_FINISH, P_ARRIVAL, P_POWER = 0, 1, 2, 40
PS_DEFAULT_CPUS, PS_DEFAULT_MEMORY_MIB = 32.0, 128.0 * 1024
"""CPUs and memory a node is taken to have, when the cluster does not say, in a run with
parameter-server jobs (whose PS tasks need them); the SMD workload's machines."""


@dataclass(frozen=True)
class RunResult:
    """Everything a run produced: per-job records, the sampled timeline and the summary; with
    ``record_segments``, every allocation interval, node power transition
    ``(time, node, state)`` (states of :mod:`dlsched.sim.power_states`) and node outage
    ``(node, fail time, repair time)`` (inf while never repaired); with queues, the quota
    time series per ClusterQueue (:mod:`dlsched.tenancy.series`) and Kueue's metrics at the
    end (:mod:`dlsched.tenancy.kueue_metrics`)."""

    jobs: pa.Table
    timeline: pa.Table
    summary: dict[str, Any]
    config: SimConfig
    segments: list[Segment] | None = None
    power_transitions: list[tuple[float, int, int]] | None = None
    outages: list[tuple[int, float, float]] | None = None
    tenants: pa.Table | None = None
    kueue_metrics: str | None = None


@dataclass(frozen=True, slots=True)
class Segment:
    """One GPU share held by one job over ``[begin, end)``; GPU -1 marks a node where the job
    holds CPUs and memory only."""

    row: int
    node: int
    gpu: int
    milli: int
    begin: float
    end: float


class StuckError(RuntimeError):
    """A policy left jobs waiting while nothing could ever change its mind."""


def with_task_resources(spec: ClusterSpec) -> ClusterSpec:
    """``spec`` with the CPUs and memory parameter-server tasks need filled in where a node
    does not give them (:data:`PS_DEFAULT_CPUS`, :data:`PS_DEFAULT_MEMORY_MIB`)."""
    nodes = tuple(
        replace(
            n,
            cpus=PS_DEFAULT_CPUS if n.cpus is None else n.cpus,
            memory_mib=PS_DEFAULT_MEMORY_MIB if n.memory_mib is None else n.memory_mib,
        )
        for n in spec.nodes
    )
    return replace(spec, nodes=nodes)


class Simulator:
    """Replays ``trace`` on ``cluster`` (see the module docstring). One instance, one run."""

    def __init__(
        self,
        trace: Trace,
        cluster: ClusterSpec,
        config: SimConfig,
        progress: ProgressFn | None = None,
        record_segments: bool = False,
        estimator: DurationEstimator | None = None,
    ) -> None:
        """``record_segments`` keeps every allocation interval (for invariant checks)."""
        self.trace = trace
        self.config = config
        self.kinds: KindColumns = kind_columns(trace.table, trace.source or "<memory>")
        present = set(self.kinds.kind)
        if PS in present:
            cluster = with_task_resources(cluster)
        self.cluster = cluster
        self.state = ClusterState(cluster, config.use_partitions)
        self.placer = create_placer(config.placement, config.seed, config.placement_options)
        check_comm_model(config.comm_model)
        self.comm = None if config.comm_model is None else TierComm(self.state)
        # Rigid starts by tier (node, rack, block, cluster) when a topology is modelled.
        self.tier_starts: list[int] | None = (
            [0] * len(TIER_NAMES) if self.comm is not None or self.placer.topology_aware else None
        )
        self.models: list[ProgressModel | None] = [ReplayModel(), None, None]
        elastic = None
        if ELASTIC in present:
            perf = PerfBook()
            variants = [variant_for_gpu_type(t) for t in self.state.node_type]
            model = ElasticModel(perf, variants)
            self.models[ELASTIC] = model
            elastic = (model, perf)
        machines = None
        if PS in present:
            from dlsched.perf.ps_progress import PsModel
            from dlsched.ps.machines import machines_from_cluster

            machines = machines_from_cluster(cluster)
            self.models[PS] = PsModel(machines)
        self.groups, self.group_of = build_groups(
            present or {RIGID},
            config.policy,
            config.kind_policies,
            config.policy_options,
            self.state,
            self.placer,
            config.seed,
            elastic,
            machines,
        )
        self.restart: list[RestartCost] = [config.checkpoint.for_kind(name) for name in KIND_NAMES]
        self.estimator = estimator
        if self.estimator is None and config.estimator is not None:
            self.estimator = create_estimator(config.estimator, config.seed)
        needing = []
        for g in self.groups:
            pol = getattr(g.scheduler, "policy", None)
            if pol is not None and pol.needs_estimate:
                needing.append(g.policy)
                if self.estimator is None:
                    raise ValueError(
                        f"policy {g.policy!r} needs a duration estimator (--estimator); "
                        f"available: {', '.join(sorted(estimators()))}"
                    )
        if config.estimator is not None and not needing:
            raise ValueError(
                f"--estimator {config.estimator}: no policy of this run ranks jobs by an "
                "estimated duration (qssf does); drop --estimator"
            )
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
        self._multi = len(self.groups) > 1
        # Whether starts and stops need bookkeeping beyond the job (see _book_start).
        self._book = self._multi or self.power.tracks_idle
        # Rigid jobs are always scheduled by the first group (an ordering one): SimJob.group.
        assert self.group_of.get(RIGID, 0) == 0
        self._rigid_scheduler = self.groups[0].scheduler
        plain = not self._multi and self.groups[0].ordering and not config.every_round
        # The cycle and timeline sample every event runs: the lean ones when one ordering
        # policy schedules everything (the common case).
        self._cycle = self._run_plain_cycle if plain else self._run_cycle
        self._sample = self._sample_one if not self._multi else self._sample_groups
        self._intervals = [g.scheduler.interval for g in self.groups]
        # Only parameter-server jobs' rates depend on other jobs (shared links)...
        self._co_located = self.models[PS] is not None
        # ...and jobs time-sharing GPUs, when a co-locating policy packs them.
        self.sharing: Sharing | None = None
        for g in self.groups:
            if isinstance(g.scheduler, CoLocationScheduler):
                if self.sharing is None:
                    self.sharing = Sharing(g.scheduler.interference, trace.table, record_segments)
                g.scheduler.workload_of = self.sharing.workload_of
        npools = self.state.num_pools
        self._held = [[0.0] * npools for _ in self.groups]
        # An ordering group run by events cycles after every instant with events, which
        # samples the timeline; round-based ones also need a sample at each event between
        # rounds.
        self._sample_events = any(g.scheduler.interval is not None for g in self.groups)
        self.timeline = TimelineRecorder(
            self.state.pool_names, self.state.pool_total_gpus, config.timeline_step_s
        )
        self._load_columns()
        n = len(trace)
        self.records = JobRecords(n)
        self._next_row = 0
        self._live = 0
        self._finished = 0
        self._dirty: list[set[int]] = [set() for _ in self.groups]
        self._cycles_at: list[set[float]] = [set() for _ in self.groups]
        self._wake = [[math.inf] * npools for _ in self.groups]
        self._next_wake = [math.inf] * len(self.groups)
        self._idle_rounds = [0] * len(self.groups)
        self._demands: dict[tuple[int, int, float, float, str | None], Demand] = {}
        # A rigid job's (pool, demand) -> its interned Demand and why it never fits (or None).
        self._rigid_demands: dict[tuple[Any, ...], tuple[Demand, str | None]] = {}
        self._node_jobs: list[set[SimJob]] | None = None
        self._empty: ClusterState | None = None
        self._mtbf: MtbfModel | None = None
        self._elastic_jobs: list[SimJob] = []
        self.failures = 0
        self.cycles = 0
        self._progress_every = max(1, n // 200)
        self.segments: list[Segment] | None = [] if record_segments else None
        self._outages: list[tuple[int, float, float]] = []
        self._down_since: dict[int, float] = {}
        self.admission: AdmissionStage | None = None
        self._pods_ready = False
        if config.queues is not None:
            self.admission = self._admission_stage(config.queues, config.queue_map)
            self.records.queues = (self.admission.row_cq, self.admission.names)
            self._pods_ready = self.admission.pods_ready is not None
            inner = self._cycle

            def admitting_cycle(g: int, now: float) -> None:
                self._run_admission(now)
                inner(g, now)

            self._cycle = admitting_cycle

    # ---- setup ---------------------------------------------------------------------------
    def _load_columns(self) -> None:
        t = self.trace.table
        self._ids: list[str] = t.column("job_id").to_pylist()
        self._submit: list[float] = t.column("submit_time").to_pylist()
        self._gpus: list[int] = t.column("num_gpus").to_pylist()
        self._duration: list[float | None] = t.column("duration").to_pylist()
        self._work: list[float | None] = t.column("work").to_pylist()
        self._applications: list[str | None] = (
            t.column("application").to_pylist() if self.comm is not None else []
        )
        self._work_unit: list[str | None] = t.column("work_unit").to_pylist()
        self._deadline: list[float | None] = t.column("deadline").to_pylist()
        self._milli: list[int | None] = t.column("gpu_milli").to_pylist()
        self._cpus: list[float | None] = t.column("num_cpus").to_pylist()
        self._mem: list[float | None] = t.column("memory_mib").to_pylist()
        self._gtype: list[str | None] = t.column("gpu_type").to_pylist()
        self._vc: list[str | None] = t.column("vc").to_pylist()
        self._user: list[str | None] = t.column("user").to_pylist()
        self._pool_of_vc = {name: i for i, name in enumerate(self.state.pool_names)}

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
            with frozen_heap():
                self.engine.run()
        if self._live:
            waiting = [
                g.policy for g in self.groups if any(q.pending_jobs for q in g.scheduler.pools)
            ]
            raise StuckError(
                f"policy {', '.join(repr(p) for p in waiting) or '?'} left {self._live} jobs "
                "waiting with nothing running and nothing left to happen"
            )
        wall = wallclock.perf_counter() - started
        sharing = self.sharing
        jobs = self.records.to_table(
            self._ids,
            self.state.pool_names,
            self.trace.column("deadline"),
            None if sharing is None else (sharing.shared_s, sharing.lost_s),
        )
        start = self._submit[0] if self._submit else 0.0
        end = max(self.engine.now, start)
        timeline = self.timeline.to_table(start, end)
        managed = self.power.manager is not None
        summary = summarize(
            jobs,
            partition_gpus=dict(
                zip(self.state.pool_names, self.state.pool_total_gpus, strict=True)
            ),
            policy=self.config.policy,
            placement=self.placer.name,
            sim_wall_s=wall,
            idle_w_per_gpu=self.config.power.idle_w_per_gpu,
            busy_extra_w_per_gpu=self.config.power.busy_extra_w_per_gpu,
            powered_gpus=self.power.powered_gpus() if managed else None,
            extra={
                "failures": self.failures if self.config.faults.enabled else None,
                "events": self.engine.events_processed,
                "cycles": self.cycles,
                "cluster": self.cluster.name,
                "seed": self.config.seed,
            },
        )
        if not self.config.faults.enabled:
            summary["lost_gpu_seconds"] = None  # no fault model: nothing could be lost
        summary.update(
            kind_summary(
                self.kinds.kind,
                self.records,
                {KIND_NAMES[k]: self.groups[g].policy for k, g in self.group_of.items()},
                self._elastic_jobs,
                self.models[ELASTIC],
                self.state,
                self.restart[ELASTIC].first_start_s,
            )
        )
        summary.update(self._topology_summary())
        summary["colocation"] = colocation_figures(jobs, None if sharing is None else sharing.pairs)
        tenants: pa.Table | None = None
        kueue: str | None = None
        if self.admission is None:
            from dlsched.metrics.tenant_keys import no_tenants

            summary.update(no_tenants())
        else:
            from dlsched.tenancy.report import tenant_summary
            from dlsched.tenancy.series import quota_series

            total = float(sum(self.state.pool_total_gpus))
            summary.update(tenant_summary(jobs, self.admission, end, total))
            tenants = quota_series(self.admission, summary["tenants"])
            from dlsched.tenancy.kueue_metrics import exposition

            kueue = exposition(self.admission)
        if managed:
            summary.update(self.power.report(*makespan_window(jobs)))
            always_on = summary["energy_always_on_kwh"]
            summary["energy_saved_kwh"] = always_on - summary["energy_kwh"]
            summary["energy_saved_fraction"] = (
                summary["energy_saved_kwh"] / always_on if always_on else None
            )
        if self.segments is None:
            return RunResult(
                jobs, timeline, summary, self.config, tenants=tenants, kueue_metrics=kueue
            )
        outages = [(n, t, math.inf) for n, t in self._down_since.items()]
        return RunResult(
            jobs,
            timeline,
            summary,
            self.config,
            self.segments,
            self.power.transitions,
            sorted(self._outages + outages),
            tenants,
            kueue,
        )

    def _topology_summary(self) -> dict[str, Any]:
        """``fragmented_jobs``: jobs that waited with enough free GPUs in their pool because
        no placement satisfied the topology (null unless the placer is topology-aware);
        ``starts_by_tier``: rigid starts by the tier their placement spans and ``comm_model``
        (null when neither a topology-aware placer nor a comm model is on)."""
        fragmented: set[int] | None = getattr(self.groups[0].scheduler, "fragmented", None)
        starts = self.tier_starts
        return {
            "fragmented_jobs": None if fragmented is None else len(fragmented),
            "starts_by_tier": (
                None if starts is None else dict(zip(TIER_NAMES, starts, strict=True))
            ),
            "comm_model": self.config.comm_model,
        }

    # ---- arrivals ------------------------------------------------------------------------
    def _on_arrival(self, _: Any) -> None:
        now = self.engine.now
        submit = self._submit
        n = len(submit)
        i = self._next_row
        while i < n and submit[i] == now:
            job = self._admit(i, now)
            if job is not None and self.admission is not None:
                job = self._wait_admission(job, now)
            elif job is not None:
                self.groups[job.group].scheduler.on_submitted(job, now)
            if job is not None:
                self._live += 1
                self._dirty[job.group].add(job.pool)
                if self._sample_events:
                    self._sample(job.pool, now)
            i += 1
        self._next_row = i
        if i < n:
            self.engine.schedule(submit[i], P_ARRIVAL, self._on_arrival)
        if self._multi:
            self._request_cycles(now)
        else:
            self._request_cycle(0, now)
        if self._live == 0 and i >= n:
            self.engine.stop()

    def _admit(self, row: int, now: float) -> SimJob | None:
        """The job of trace row ``row`` arriving at ``now``, or None if it is set aside (the
        reason recorded)."""
        kind = self.kinds.kind[row]
        if kind:
            return self._admit_kind(row, kind, now)
        pool, reason = self._pool_for(self._vc[row])
        gpus = self._gpus[row]
        milli = self._milli[row]
        key = (
            pool,
            gpus,
            WHOLE if milli is None or gpus == 0 else milli,
            self._cpus[row] or 0.0,
            self._mem[row] or 0.0,
            self._gtype[row],
        )
        known = self._rigid_demands.get(key)
        if known is None:
            known = self._rigid_demands[key] = self._rigid_demand(key)
        demand, never = known
        duration = self._duration[row]
        work = self._work[row]
        if self._work_unit[row] not in (None, "seconds") or work is None:
            work = duration
        if reason is None and work is None:
            reason = self._no_work(row)
        if reason is None:
            reason = never
        if reason is not None:
            self.records.set_aside(row, reason, gpus, now)
            return None
        assert work is not None
        job = SimJob(row, self._ids[row], now, demand, work, duration, pool)
        job.deadline = self._deadline[row]
        if self.estimator is not None:
            job.estimate = self.estimator.estimate(row, now)
        return job

    def _rigid_demand(self, key: tuple[Any, ...]) -> tuple[Demand, str | None]:
        """The interned Demand of a rigid job's ``key`` (pool, then the Demand's fields) and
        why it never fits that pool (None if it can; a pool of -1 is not asked)."""
        pool, shape = key[0], key[1:]
        demand = self._demands.get(shape)
        if demand is None:
            demand = self._demands[shape] = Demand(*shape)
        never = self._rigid_scheduler.never_fits(pool, demand) if pool >= 0 else None
        return demand, never

    def _no_work(self, row: int) -> str:
        """Why a row taken for a rigid job has no work, naming an application it gives."""
        app = self.kinds.application[row]
        if app is None:
            return "no run time or work: replay needs a duration (or a performance model)"
        return (
            f"no run time, and application {app!r} is neither a profiled elastic application "
            f"({', '.join(APPLICATIONS)}) nor a network of the PS zoo with work in samples"
        )

    def _admit_kind(self, row: int, kind: int, now: float) -> SimJob | None:
        """:meth:`_admit` for an elastic or parameter-server job."""
        pool, reason = self._pool_for(self._vc[row])
        gpus = self._gpus[row]
        shape = (gpus, WHOLE, 0.0, 0.0, None)
        demand = self._demands.get(shape)
        if demand is None:
            demand = self._demands[shape] = Demand(*shape)
        g = self.group_of[kind]
        group = self.groups[g]
        try:
            ext, work = self._kind_state(row, kind, pool)
        except TableError as exc:
            self.records.set_aside(row, str(exc), gpus, now)
            return None
        if reason is None:
            reason = group.scheduler.never_fits(pool, demand)
        job = KindJob(row, self._ids[row], now, demand, work, pool, g, kind, ext)
        job.deadline = self._deadline[row]
        if reason is None:
            reason = self._kind_never_fits(job, group)
        if reason is not None:
            self.records.set_aside(row, reason, gpus, now)
            return None
        if kind == ELASTIC:
            self._elastic_jobs.append(job)
        return job

    def _kind_state(self, row: int, kind: int, pool: int) -> tuple[Any, float]:
        """The kind-specific state of an elastic or PS row and its work; KindError for a
        malformed row, TableError for a table job the pool's GPUs cannot run."""
        k = self.kinds
        where = f"trace {self.trace.source or '<memory>'}: job {self._ids[row]!r}"
        if kind == ELASTIC:
            model = self.models[ELASTIC]
            assert isinstance(model, ElasticModel)
            app = check_elastic(
                where, k.application[row], self._gpus[row], k.batch_size[row], self._work_unit[row]
            )
            batch = k.batch_size[row]
            assert batch is not None
            variants: list[str] = []
            if is_table_application(app):  # only a table job reads its nodes' GPU classes
                gpus = self.state.node_gpus
                nodes = self.state.pool_nodes[pool] if pool >= 0 else range(len(gpus))
                variants = [model.node_variants[n] for n in nodes if gpus[n] > 0]
            state = new_state(model.perf, app, self._gpus[row], batch, self._work[row], variants)
            return state, state.eff.total_progress
        samples = self._work[row] if self._work_unit[row] == "samples" else None
        ps = ps_job(
            where,
            self._ids[row],
            self._submit[row],
            k.application[row],
            k.batch_size[row],
            samples,
            self._gpus[row],
            k.num_servers[row],
            k.max_gpus[row],
            k.max_servers[row],
        )
        return ps, ps.samples

    def _kind_never_fits(self, job: SimJob, group: Group) -> str | None:
        """Why an elastic or PS job can never run under its group's policy, or None."""
        sched = group.scheduler
        if isinstance(sched, AllocationScheduler):
            return sched.never_fits_job(job.pool, job)
        if job.kind != PS:
            return None
        from dlsched.perf.ps_progress import PsModel
        from dlsched.sim.ps_adapter import why_never_runs

        model = self.models[PS]
        assert isinstance(model, PsModel)
        machines = [model.machines[n] for n in self.state.pool_nodes[job.pool]]
        reason = why_never_runs(job.ext, machines)
        if reason is not None:
            return reason
        if self._empty is None:
            self._empty = ClusterState(self.cluster, self.config.use_partitions)
        if sched.kind_placers[PS](self._empty, job.pool, job) is None:
            ps = job.ext
            return (
                f"the requested {ps.requested_workers} workers and {ps.requested_servers} PS "
                "do not fit on the empty machines"
            )
        return None

    # ---- the admission stage (queues and quotas) ------------------------------------------
    def _admission_stage(self, queues: str, queue_map: str | None) -> AdmissionStage:
        """The admission stage of ``--queues`` (refused with an allocation policy: those
        decide whole allocations, beyond the requested sizes quotas are charged for)."""
        from dlsched.tenancy.manifests import read_manifests
        from dlsched.tenancy.queue_map import QueueMap, read_queue_map
        from dlsched.tenancy.stage import AdmissionStage

        allocating = [g.policy for g in self.groups if not g.ordering]
        if allocating:
            raise ValueError(
                f"--queues: policy {allocating[0]!r} allocates GPUs beyond what jobs ask, which "
                "quotas cannot charge; with queues use an ordering policy (fifo, sjf, srtf, "
                "qssf, tiresias)"
            )
        qmap = QueueMap() if queue_map is None else read_queue_map(queue_map)
        tenancy = read_manifests(queues)
        clock = replace(
            tenancy.clock,
            mode=self.config.admission_clock,
            cycle_period=self.config.cycle_period_s,
            termination_grace=self.config.termination_grace_s,
        )
        return AdmissionStage(
            replace(tenancy, clock=clock),
            qmap,
            sorted({t for t in self.state.node_type if t}),
            self._vc,
            self._user,
        )

    def _wait_admission(self, job: SimJob, now: float) -> SimJob | None:
        """``job`` waits for admission; None when it can never be admitted (set aside)."""
        assert self.admission is not None
        reason = self.admission.arrive(job, job.row, job.demand, now)
        if reason is not None:
            self.records.set_aside(job.row, reason, job.gpus, now)
            return None
        return job

    def _run_admission(self, now: float) -> None:
        """Admit what the queues allow before the policies' cycles: admitted jobs go to their
        policy; evicted running jobs are preempted by a Plan and wait for admission again
        once terminated (at once under the fixpoint clock; after the termination grace
        period under Kueue's cycle, their quota held until then: with no grace period, the
        cycles go on at this instant)."""
        stage = self.admission
        assert stage is not None
        again = stage.queues is not None and stage.clock.termination_grace <= 0
        while True:
            decisions = stage.run(now)
            admitted = decisions.admitted
            victims = [victim for victim, _cause in decisions.evicted]
            if victims:
                # A job admitted at this instant and evicted by a later admission never
                # reached its policy.
                unseen = set(admitted).intersection(victims)
                if unseen:
                    admitted = [job for job in admitted if job not in unseen]
                self._evict(victims, unseen, now)
            if admitted:
                self._hand_over(admitted, now)
            if self._multi and (admitted or victims):
                self._request_cycles(now)
            if not (again and victims):
                break
        if stage.next_cycle is not None:
            self._request_cycle(0, stage.next_cycle)

    def _evict(self, victims: list[SimJob], unseen: set[SimJob], now: float) -> None:
        """Evicted running jobs are preempted by a Plan, evicted waiting ones leave their
        policy (those ``unseen`` never reached it); each waits for admission again once
        terminated."""
        stage = self.admission
        assert stage is not None
        running = [v for v in victims if v.status == RUNNING]
        if running:
            self._apply(Plan(preempts=tuple(running)), now)
        for victim in victims:
            if victim not in unseen:
                self._withdraw(victim)
            self._dirty[victim.group].add(victim.pool)
        grace = stage.clock.termination_grace if stage.queues is not None else 0.0
        if grace > 0:
            self.engine.schedule(now + grace, P_FINISH, self._on_terminated, victims)
            return
        for victim in victims:
            stage.requeue(victim, now)

    def _on_terminated(self, victims: list[SimJob]) -> None:
        """Evicted jobs' termination grace period ended: their quota is free."""
        stage = self.admission
        assert stage is not None
        now = self.engine.now
        for victim in victims:
            stage.requeue(victim, now)
        self._request_cycle(0, now)

    def _hand_over(self, admitted: Sequence[SimJob], now: float) -> None:
        """Admitted jobs go to their policy (with the GPU type their flavors select)."""
        assert self.admission is not None
        typed = self.admission.typed_flavors
        groups, dirty = self.groups, self._dirty
        first = self.records.admitted
        for job in admitted:
            if first[job.row] != first[job.row]:  # NaN: its first admission
                first[job.row] = now
            if typed:
                gpu_type = self.admission.gpu_type_of(job)
                d = job.demand
                if gpu_type is not None and d.gpu_type is None:
                    job.demand = replace(d, gpu_type=gpu_type)
            groups[job.group].scheduler.on_submitted(job, now)
            dirty[job.group].add(job.pool)
        pods_ready = self.admission.pods_ready
        if pods_ready is not None:
            at = now + pods_ready.timeout
            for job in admitted:
                self.engine.schedule(at, P_FINISH, self._on_pods_ready_timeout, (job, now))

    def _on_pods_ready_timeout(self, arg: tuple[SimJob, float]) -> None:
        """``waitForPodsReady``: a job admitted at ``arg[1]`` that has not started since is
        evicted, and queues again after its backoff or, past its limit, is set aside."""
        stage = self.admission
        assert stage is not None
        job, admitted = arg
        now = self.engine.now
        outcome = stage.pods_ready_timeout(job, admitted, now)
        if outcome is None:
            return
        self._withdraw(job)
        self._dirty[job.group].add(job.pool)
        if isinstance(outcome, str):
            self.records.set_aside(job.row, outcome, job.gpus, job.submit_time)
            self._live -= 1
        else:
            self.engine.schedule(now + outcome, P_FINISH, self._on_backoff, job)
        self._request_cycle(0, now)
        if self._live == 0 and self._next_row >= len(self._submit):
            self.engine.stop()

    def _on_backoff(self, job: SimJob) -> None:
        stage = self.admission
        assert stage is not None
        now = self.engine.now
        stage.resubmit(job, now)
        self._request_cycle(0, now)

    def _withdraw(self, job: SimJob) -> None:
        sched = self.groups[job.group].scheduler
        assert isinstance(sched, Scheduler)  # queues run with ordering policies only
        sched.on_withdrawn(job)

    # ---- cycles --------------------------------------------------------------------------
    def _request_cycles(self, at: float) -> None:
        if not self._multi:
            if self._dirty[0]:
                self._request_cycle(0, at)
            return
        for g in range(len(self.groups)):
            if self._dirty[g]:
                self._request_cycle(g, at)

    def _request_cycle(self, g: int, at: float) -> None:
        """Make sure group ``g``'s cycle runs at ``at`` (rounded up to a round for round-based
        policies) after every other event of that instant. A lone event-driven group's cycle
        whose instant has no other event left runs at once instead of through the heap (same
        order, less work)."""
        now = self.engine.now
        interval = self._intervals[g]
        pending = self._cycles_at[g]
        if interval is not None:
            at = max(math.ceil(at / interval - 1e-9) * interval, now)
        elif at == now and not self._multi and at not in pending:
            nxt = self.engine.peek_time()
            if nxt is None or nxt > now:
                self._cycle(g, now)
                return
        if at not in pending:
            pending.add(at)
            self.engine.schedule(at, self.groups[g].priority, self._on_cycle, (g, at))

    def _on_cycle(self, arg: tuple[int, float]) -> None:
        self._cycles_at[arg[0]].discard(arg[1])
        self._cycle(arg[0], self.engine.now)

    def _due_wakes(self, g: int, now: float) -> set[int]:
        """The pools whose requested wake-up (a plan's ``wake_at``) has come for group ``g``."""
        wakes = self._wake[g]
        due: set[int] = set()
        self._next_wake[g] = math.inf
        for p, wake in enumerate(wakes):
            if wake <= now + 1e-9:
                due.add(p)
                wakes[p] = math.inf
            elif wake < self._next_wake[g]:
                self._next_wake[g] = wake
        return due

    def _after_plan(self, g: int, pool: int, plan: Plan, now: float) -> None:
        """Wake nodes for queued jobs and keep the plan's wake-up (the timeline sampled)."""
        if self._track_nodes:
            self._power_demand(pool, now)
        if plan.wake_at is not None:
            self._wake[g][pool] = plan.wake_at
            self._next_wake[g] = min(self._next_wake[g], plan.wake_at)
            self._request_cycle(g, max(plan.wake_at, now))

    def _run_plain_cycle(self, g: int, now: float) -> None:
        """:meth:`_run_cycle` of a run with one ordering policy run by events (the common
        case, kept lean): its cycle of every pool those events touched."""
        pools = self._dirty[0]
        self._dirty[0] = set()
        if self._next_wake[0] <= now + 1e-9:
            pools |= self._due_wakes(0, now)
        sched = self._rigid_scheduler
        for pool in sorted(pools) if len(pools) > 1 else pools:
            self.cycles += 1
            plan = sched.cycle(pool, now)
            if plan is not EMPTY_PLAN:
                self._apply(plan, now)
            self._sample(pool, now)
            if self._track_nodes or plan.wake_at is not None:
                self._after_plan(0, pool, plan, now)

    def _run_cycle(self, g: int, now: float) -> None:
        group = self.groups[g]
        sched = group.scheduler
        pools = self._dirty[g]
        self._dirty[g] = set()
        if self._next_wake[g] <= now + 1e-9:
            pools |= self._due_wakes(g, now)
        interval = self._intervals[g]
        every_round = interval is not None and (self.config.every_round or not group.ordering)
        if every_round:
            pools = {p for p in range(self.state.num_pools) if self._active(g, p)}
        for pool in sorted(pools) if len(pools) > 1 else pools:
            self.cycles += 1
            if self._multi:
                self._share(g, pool)
            try:
                plan = sched.cycle(pool, now)
                if plan:
                    self._apply(plan, now)
                elif not group.ordering:
                    self._check_idle(g, pool, now)
            except OverCommitError as exc:
                raise RuntimeError(
                    f"policy {group.policy!r} over-committed the cluster: {exc}"
                ) from None
            self._sample(pool, now)
            self._after_plan(g, pool, plan, now)
        if (
            every_round
            and self._live
            and any(self._active(g, p) for p in range(self.state.num_pools))
        ):
            assert interval is not None
            self._request_cycle(g, now + interval)

    def _active(self, g: int, pool: int) -> bool:
        q = self.groups[g].scheduler.pools[pool]
        return bool(q.pending_jobs or q.running_jobs)

    def _share(self, g: int, pool: int) -> None:
        """Tell group ``g`` what the other groups hold (and, for an allocation group, what the
        ordering groups ranking above it wait for) in ``pool``."""
        total = sum(h[pool] for h in self._held)
        sched = self.groups[g].scheduler
        if self.groups[g].ordering:
            sched.foreign_gpus[pool] = total - self._held[g][pool]  # type: ignore[union-attr]
        else:
            reserve = sum(
                self.groups[o].scheduler.pools[pool].pending_gpus
                for o in range(g)
                if self.groups[o].ordering
            )
            sched.reserved[pool] = float(reserve)  # type: ignore[union-attr]

    def _check_idle(self, g: int, pool: int, now: float) -> None:
        """Count rounds in which an allocation policy runs nothing while its jobs wait and no
        other group holds a GPU of the pool; too many in a row is a policy bug."""
        q = self.groups[g].scheduler.pools[pool]
        state = self.state
        if (
            q.pending_jobs
            and not q.running_jobs
            and state.busy_gpus(pool) == 0
            and state.pool_up_gpus[pool] > 0
        ):
            self._idle_rounds[g] += 1
            if self._idle_rounds[g] > self.config.max_idle_rounds:
                raise StuckError(
                    f"policy {self.groups[g].policy!r} allocated no GPU for "
                    f"{self._idle_rounds[g]} rounds while {q.pending_jobs} jobs waited "
                    f"(at {now:.0f} s)"
                )
        else:
            self._idle_rounds[g] = 0

    def _power_demand(self, pool: int, now: float) -> None:
        pending = sum(gr.scheduler.pools[pool].pending_gpus for gr in self.groups)
        if pending:
            running = sum(gr.scheduler.pools[pool].running_jobs for gr in self.groups)
            self.power.on_demand(pool, pending, running, now)

    # ---- applying a plan -----------------------------------------------------------------
    def _apply(self, plan: Plan, now: float) -> None:
        if plan.declines:
            self._decline(plan.declines, now)
        if not (plan.preempts or plan.resizes or self._co_located or self.sharing):
            # Starts alone, and no job's rate depends on another's: the common case, kept short.
            sched_of = self.groups
            for start in plan.starts:
                started: SimJob = start.job  # type: ignore[assignment]
                self._run_on(started, start.placement, start.config, start.split, now)
                sched_of[started.group].scheduler.on_started(started)
            return
        changed: set[int] = set()
        track = self._co_located
        for job in plan.preempts:
            assert isinstance(job, SimJob)
            if track:
                changed.update(n for n, _ in job.placement or ())
            self._stop(job, now)
            job.preemptions += 1
            self.groups[job.group].scheduler.on_stopped(job, now)
        moving: list[tuple[SimJob, Placement, Any, Any]] = []
        for resize in plan.resizes:
            job = resize.job
            assert isinstance(job, SimJob)
            moved = resize.placement != job.placement or (
                job.kind == PS and resize.config != job.config
            )
            if moved:
                if track:
                    changed.update(n for n, _ in job.placement or ())
                self._stop(job, now)
                moving.append((job, resize.placement, resize.config, resize.split))
            else:
                assert isinstance(job, KindJob)
                self._bank(job, now)
                job.config = resize.config
                self._begin(job, now)
        for job, placement, config, split in moving:
            self._run_on(job, placement, config, split, now)
            if track:
                changed.update(n for n, _ in placement)
        sched_of = self.groups
        for start in plan.starts:
            job = start.job
            assert isinstance(job, SimJob)
            mate = start.partner
            self._run_on(job, start.placement, start.config, start.split, now, mate is not None)
            if mate is not None:
                assert isinstance(mate, SimJob) and self.sharing is not None
                self.sharing.pair(job, mate, now, self._set_speed, start.speeds)
            sched_of[job.group].scheduler.on_started(job)
            if track:
                changed.update(n for n, _ in start.placement)
        if changed:
            self._rerate(self.models[PS].affected(changed), now)  # type: ignore[union-attr]

    def _decline(self, declines: Sequence[tuple[Any, str]], now: float) -> None:
        """Waiting jobs a policy's admission control refused (its scheduler has dropped
        them): recorded as declined; the run ends when nothing else is left."""
        for job, reason in declines:
            assert isinstance(job, SimJob) and not job.running
            job.status = DONE
            self.records.decline(job.row, reason, job.gpus, job.submit_time)
            self._live -= 1
        if self._live == 0 and self._next_row >= len(self._submit):
            self.engine.stop()

    def _book_start(self, job: SimJob, placement: Placement) -> None:
        """Bookkeeping of a start some runs need: GPUs per group, jobs per node, node use."""
        if self._multi:
            self._held[job.group][job.pool] += job.gpu_weight()
        if self._node_jobs is not None:
            for node, _ in placement:
                self._node_jobs[node].add(job)
        if self._track_nodes:
            for node, _ in placement:
                self.power.node_used(node)

    def _book_stop(self, job: SimJob, now: float, weight: float) -> None:
        """:meth:`_book_start`'s counterpart, and the allocation segments when recorded."""
        assert job.placement is not None
        if self._multi:
            self._held[job.group][job.pool] -= weight
        if self.segments is not None:
            d = job.demand
            for node, gpus in job.placement:
                for gpu in gpus or (-1,):
                    self.segments.append(Segment(job.row, node, gpu, d.milli, job.seg_begin, now))
        if self._node_jobs is not None:
            for node, _ in job.placement:
                self._node_jobs[node].discard(job)
        if self._track_nodes:
            for node, _ in job.placement:
                self.power.node_freed(node, now)

    def _run_on(
        self,
        job: SimJob,
        placement: Placement,
        config: Any,
        split: Any,
        now: float,
        joining: bool = False,
    ) -> None:
        """Give ``job`` its GPUs (``joining``: time-share those of the job holding them) and
        start its progress after its restart cost: the first start's, or a restart's (a resume
        or a move, counted in ``restarts``)."""
        d = job.demand
        if joining:
            self.state.join(placement, d.cpus, d.memory_mib)
        else:
            self.state.allocate(placement, d.milli, d.cpus, d.memory_mib, split)
        job.placement = placement
        job.status = RUNNING
        if self._pods_ready:
            assert self.admission is not None
            self.admission.ready(job)
        job.epoch += 1
        job.seg_begin = now
        kind = job.kind
        if kind:
            assert isinstance(job, KindJob)
            job.config = config
            job.split = split
            job.gpus_held = sum(len(g) for _, g in placement)
        cost = self.restart[kind]
        if job.first_start != job.first_start:
            job.first_start = now
            stall = cost.first_start_s
        else:
            job.restarts += 1
            stall = cost.cost(job.held)
        start = job.seg_start = job.run_start = now + stall
        job.alloc_done = done = job.done
        job.ckpt_time = math.nan
        if self._book:
            self._book_start(job, placement)
        if kind:
            model = self.models[kind]
            assert model is not None
            model.moved(job, now)
            model.begin(job, now)
            self._schedule_boundary(job)
            return
        job.boundary = job.work
        if self.tier_starts is not None:
            self.tier_starts[placement_tier(self.state, placement)] += 1
        if self.comm is not None:
            job.rate = rate = self.comm.rate(placement, self._applications[job.row])
            self.engine.schedule(
                start + (job.work - done) / rate, P_FINISH, self._on_finish, (job, job.epoch)
            )
            return
        # A rigid job: the replay model's rate 1 to its finish, inline on the hot path.
        job.rate = 1.0
        self.engine.schedule(start + job.work - done, P_FINISH, self._on_finish, (job, job.epoch))

    def _begin(self, job: SimJob, now: float) -> None:
        """Recompute a running job's rate in place (same GPUs) and re-plan its next event."""
        job.epoch += 1
        model = self.models[job.kind]
        assert model is not None
        model.begin(job, now)
        self._schedule_boundary(job)

    def _rerate(self, jobs: Iterable[SimJob], now: float) -> None:
        model = self.models[PS]
        assert model is not None
        for job in jobs:
            if job.status != RUNNING:
                continue
            self._bank(job, now)
            job.epoch += 1
            model.rerate(job)
            self._schedule_boundary(job)

    def _set_speed(self, job: SimJob, speed: float, now: float) -> None:
        """A running rigid job's rate becomes ``speed`` × its rate alone on its placement (a
        partner started or stopped time-sharing its GPUs); its finish is re-planned."""
        assert job.placement is not None and not job.kind
        job.bank(now, self.config.checkpoint.interval_s)
        app = self._applications[job.row] if self.comm is not None else None
        alone = 1.0 if self.comm is None else self.comm.rate(job.placement, app)
        job.rate = alone * speed
        job.epoch += 1
        start = job.seg_start if job.seg_start > now else now
        self.engine.schedule(
            start + (job.work - job.done) / job.rate, P_FINISH, self._on_finish, (job, job.epoch)
        )

    def _schedule_boundary(self, job: SimJob) -> None:
        now = self.engine.now
        at = (job.seg_start if job.seg_start > now else now) + (job.boundary - job.done) / job.rate
        self.engine.schedule(at, P_FINISH, self._on_boundary, (job, job.epoch))

    def _bank(self, job: SimJob, now: float) -> None:
        model = self.models[job.kind]
        if job.kind:
            assert model is not None
            model.bank(job, now)
        job.bank(now, self.config.checkpoint.interval_s)

    def _stop(self, job: SimJob, now: float, keep_progress: bool = True) -> None:
        """Take a running job off its resources, accounting progress and GPU time."""
        d = job.demand
        assert job.placement is not None
        if keep_progress:
            self._bank(job, now)
        weight = job.gpu_weight()
        job.held_gpu_s += (now - job.seg_begin) * weight
        job.attained_base += (now - job.seg_begin) * (job.held if job.kind else job.gpus)
        mate = None if self.sharing is None else self.sharing.unpair(job, now)
        if mate is None:
            self.state.release(job.placement, d.milli, d.cpus, d.memory_mib, job.split)
        else:
            self.state.leave(job.placement, d.cpus, d.memory_mib)
            self._set_speed(mate, 1.0, now)
        if self._book or self.segments is not None:
            self._book_stop(job, now, weight)
        if job.kind:
            model = self.models[job.kind]
            assert model is not None
            model.stopped(job, now)
            model.moved(job, now)
            assert isinstance(job, KindJob)
            job.split = None
        job.placement = None
        job.status = PENDING
        job.epoch += 1

    # ---- boundaries and finishes ---------------------------------------------------------
    def _on_boundary(self, arg: tuple[SimJob, int]) -> None:
        job, epoch = arg
        if job.epoch != epoch:
            return
        now = self.engine.now
        if job.kind:
            self._bank(job, now)
            job.done = job.boundary
            model = self.models[job.kind]
            assert model is not None
            model.cross(job, now)
            if job.done < job.work:
                job.epoch += 1
                self._schedule_boundary(job)
                return
        self._on_finish(arg)

    def _on_finish(self, arg: tuple[SimJob, int]) -> None:
        """A job's finish event: its last boundary (a rigid job's only one)."""
        job, epoch = arg
        if job.epoch != epoch:
            return
        now = self.engine.now
        job.done = job.work
        placement = job.placement
        self._stop(job, now, keep_progress=False)
        job.status = DONE
        job.end = now
        pool = job.pool
        self.groups[job.group].scheduler.on_finished(job, now)
        if self.admission is not None:
            # Its freed quota may admit jobs of any group: every group's pool is touched below.
            self.admission.finish(job, now)
        if job.kind:
            # Elastic and PS work is not in seconds: their run time is the time from first start.
            job.duration = now - job.first_start
            if job.kind == PS and placement is not None:
                model = self.models[PS]
                assert model is not None
                self._rerate(model.affected({n for n, _ in placement}), now)
        elif self.estimator is not None:
            self.estimator.observe(job.row, job.duration or job.work, now)
        self.records.finish(job)
        self._live -= 1
        self._finished += 1
        if self._sample_events:
            self._sample(pool, now)
        if self._multi:
            for dirty in self._dirty:
                dirty.add(pool)
            self._request_cycles(now)
        else:
            self._dirty[0].add(pool)
            self._request_cycle(0, now)
        if self.progress is not None and self._finished % self._progress_every == 0:
            self.progress(self._finished, len(self._submit))
        if self._live == 0 and self._next_row >= len(self._submit):
            self.engine.stop()

    def _sample_one(self, pool: int, now: float) -> None:
        """Record ``pool`` in the timeline (one policy group)."""
        q = self._rigid_scheduler.pools[pool]
        self.timeline.record(
            pool,
            now,
            self.state.pool_used_milli[pool] / WHOLE,
            self.state.pool_up_gpus[pool],
            q.running_jobs,
            q.pending_jobs,
            q.pending_gpus,
        )

    def _sample_groups(self, pool: int, now: float) -> None:
        """Record ``pool`` in the timeline, counting the jobs of every group."""
        qs = [g.scheduler.pools[pool] for g in self.groups]
        self.timeline.record(
            pool,
            now,
            self.state.busy_gpus(pool),
            self.state.pool_up_gpus[pool],
            sum(q.running_jobs for q in qs),
            sum(q.pending_jobs for q in qs),
            sum(q.pending_gpus for q in qs),
        )

    # ---- power management ----------------------------------------------------------------
    def _on_power_step(self, step: int) -> None:
        if self._live == 0 and self._next_row >= len(self._submit):
            return
        now = self.engine.now
        queued = [
            sum(g.scheduler.pools[p].pending_jobs for g in self.groups)
            for p in range(self.state.num_pools)
        ]
        self.power.decide(step, now, queued)
        for pool in range(self.state.num_pools):
            self._sample(pool, now)
        manager = self.power.manager
        assert manager is not None
        nxt = self._submit[0] + (step + 1) * manager.interval_s
        self.engine.schedule(nxt, P_POWER, self._on_power_step, step + 1)

    def _touch_all(self, pool: int) -> None:
        for g in range(len(self.groups)):
            self._dirty[g].add(pool)

    def _on_node_ready(self, node: int) -> None:
        now = self.engine.now
        pool = self.state.node_pool[node]
        self._touch_all(pool)
        self._sample(pool, now)
        self._request_cycles(now)

    # ---- faults --------------------------------------------------------------------------
    def _setup_faults(self) -> None:
        faults = self.config.faults
        if not faults.enabled:
            return
        self._node_jobs = [set() for _ in self.cluster.nodes]
        self._book = True
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
        victims = sorted(self._node_jobs[node], key=lambda j: j.seq)
        changed: set[int] = set()
        for job in victims:
            saved_at, saved = job.checkpoint(now, interval)
            lost_s = now - saved_at
            weight = job.gpu_weight()
            changed.update(n for n, _ in job.placement or ())
            self._stop(job, now)
            saved = min(saved, job.work)
            if job.kind:
                model = self.models[job.kind]
                assert model is not None
                model.restored(job, saved)
            job.done = saved
            job.lost_gpu_s += max(0.0, lost_s) * weight
            self.groups[job.group].scheduler.on_stopped(job, now)
            self._dirty[job.group].add(job.pool)
        self.power.set_failed(node, True)
        self._down_since[node] = now
        self.failures += 1
        pool = self.state.node_pool[node]
        self._touch_all(pool)
        self._sample(pool, now)
        if changed and self.models[PS] is not None:
            self._rerate(self.models[PS].affected(changed), now)  # type: ignore[union-attr]
        self._request_cycles(now)
        if self._mtbf is not None:
            self.engine.schedule(self._mtbf.repair_time(now), P_NODE, self._on_repair, node)

    def _on_repair(self, node: int) -> None:
        now = self.engine.now
        if not self.power.failed[node]:
            return
        self.power.set_failed(node, False)
        self._outages.append((node, self._down_since.pop(node), now))
        pool = self.state.node_pool[node]
        self._touch_all(pool)
        self._sample(pool, now)
        self._request_cycles(now)
        if self._mtbf is not None:
            self.engine.schedule(self._mtbf.next_failure(now), P_NODE, self._on_fail, node)


def simulate(
    trace: Trace,
    cluster: ClusterSpec,
    config: SimConfig | None = None,
    progress: ProgressFn | None = None,
    record_segments: bool = False,
) -> RunResult:
    """Run one simulation and return its records (see :class:`Simulator`). A run with a power
    manager and ``compare_baseline`` also runs the same setup with every node always on and
    adds the comparison to its summary (:func:`baseline_comparison`)."""
    config = config or SimConfig()
    result = Simulator(
        trace, cluster, config, progress=progress, record_segments=record_segments
    ).run()
    power = config.power
    if power.manager is not None and power.compare_baseline:
        always_on = replace(power, manager=None, manager_options={})
        baseline = Simulator(trace, cluster, replace(config, power=always_on)).run()
        result.summary.update(baseline_comparison(result.summary, baseline.summary))
    return result
