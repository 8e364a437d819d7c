"""Elastic allocation policies (Pollux, ONES, Gavel, Themis, Optimus) on the one simulator.

Each pool gets its own policy instance, bound once to a view of the pool's GPU nodes (their
order gives the node positions of :class:`~dlsched.elastic.types.Allocation`). At each round the
adapter records the running jobs' throughput samples, hands the policy the jobs that finished
since its last round, builds every active job's :class:`~dlsched.elastic.types.JobInfo` and a
cluster view of what the policy may use now (down, powered-off and otherwise held GPUs left
out), validates the answer and turns it into wanted placements: a job keeps its GPUs on every
node where its count is unchanged, so only a change of GPUs restarts it; a change of batch
alone is applied without a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import MappingProxyType

from dlsched.cluster.state import ClusterState
from dlsched.elastic.policy import ElasticPolicy
from dlsched.elastic.round import decide_round, round_view
from dlsched.elastic.types import Allocation, ClusterView, FinishedInfo, JobInfo, NodeView
from dlsched.perf.elastic_progress import BatchSetting, ElasticModel, ElasticState
from dlsched.perf.perfbook import PerfBook, variant_for_gpu_type
from dlsched.scheduler.allocation import AllocationAdapter, Want, displaced, gpu_ids_for
from dlsched.scheduler.plan import JobConfig
from dlsched.scheduler.view import JobView
from dlsched.sim.job import SimJob


class ElasticAdapter(AllocationAdapter):
    """One elastic policy (a fresh instance per pool from ``make_policy``) over ``state``."""

    def __init__(
        self,
        make_policy: Callable[[], ElasticPolicy],
        state: ClusterState,
        model: ElasticModel,
        perf: PerfBook,
        seed: int,
    ) -> None:
        self.state = state
        self.model = model
        self.perf = perf
        self.nodes: list[list[int]] = []
        self.policies: list[ElasticPolicy] = []
        self.views: list[ClusterView] = []
        for pool in range(state.num_pools):
            members = [n for n in state.pool_nodes[pool] if state.node_gpus[n] > 0]
            self.nodes.append(members)
            view = ClusterView(
                tuple(
                    NodeView(
                        i,
                        state.node_names[n],
                        state.node_gpus[n],
                        state.node_type[n],
                        variant_for_gpu_type(state.node_type[n]),
                    )
                    for i, n in enumerate(members)
                )
            )
            self.views.append(view)
            policy = make_policy()
            if members:
                policy.bind(view, perf, seed)
            self.policies.append(policy)
        self.name = self.policies[0].name
        self._declined: list[dict[JobView, str]] = [{} for _ in range(state.num_pools)]
        self._given: dict[JobView, Allocation] = {}
        self._finished: list[list[FinishedInfo]] = [[] for _ in range(state.num_pools)]

    @property
    def interval(self) -> float | None:
        return self.policies[0].interval_s

    def never_fits(self, pool: int, job: JobView) -> str | None:
        assert isinstance(job, SimJob)
        view = self.views[pool]
        if not view.nodes:
            return f"pool {self.state.pool_names[pool]!r} has no GPUs"
        return self.policies[pool].never_fits(job.ext.application, job.ext.requested_gpus, view)

    def take_declined(self, pool: int) -> dict[JobView, str]:
        out = self._declined[pool]
        self._declined[pool] = {}
        return out

    def current_config(self, job: JobView) -> JobConfig | None:
        assert isinstance(job, SimJob)
        setting: BatchSetting | None = job.ext.setting
        return setting

    def finished(self, job: JobView, now: float) -> None:
        assert isinstance(job, SimJob)
        self._given.pop(job, None)
        self._finished[job.pool].append(FinishedInfo(self.info(job, now), now))

    def info(self, job: SimJob, now: float, displaced: bool = False) -> JobInfo:
        """What the policy sees of ``job`` at ``now`` (a ``displaced`` job as not holding its
        GPUs)."""
        ext: ElasticState = job.ext
        samples = ext.samples
        if job.running and now > job.seg_start:
            samples += (now - job.seg_start) * ext.sample_rate
        return JobInfo(
            name=job.job_id,
            index=job.row,
            application=ext.application,
            submit_time=job.submit_time,
            requested_gpus=ext.requested_gpus,
            requested_bsz=ext.requested_bsz,
            attained_service=job.attained_service(now),
            progress=job.done_at(now),
            total_progress=ext.eff.total_progress,
            epoch=ext.epoch,
            num_epochs=ext.eff.num_epochs,
            samples=samples,
            allocation=self._given.get(job) if job.running and not displaced else None,
            restarts=job.restarts,
            last_change=ext.last_change,
            epoch_at_change=ext.epoch_at_change,
            max_gpus_seen=ext.max_gpus,
            epoch_size=ext.epoch_size,
            throughputs=MappingProxyType({n: tuple(v) for n, v in ext.throughputs.items()}),
            metrics=tuple(ext.metrics),
            samples_at_epoch=tuple(ext.samples_at_epoch),
            deadline=job.deadline,
        )

    def decide(
        self, pool: int, now: float, jobs: Sequence[JobView], available: Sequence[int]
    ) -> dict[JobView, Want]:
        policy = self.policies[pool]
        members = self.nodes[pool]
        if not members:
            return {}
        sims = [j for j in jobs if isinstance(j, SimJob)]
        for job in sims:
            if job.running:
                self.model.measure(job, now)
        done = self._finished[pool]
        if done:
            policy.finished(done)
            self._finished[pool] = []
        gpus_of = dict(zip(self.state.pool_nodes[pool], available, strict=True))
        view = round_view(self.views[pool], [gpus_of[n] for n in members])
        running = [j for j in sims if j.running]
        moved = displaced(running, self.state.pool_nodes[pool], available)
        infos = [self.info(job, now, job in moved) for job in sims]
        answer = decide_round(policy, now, infos, view)
        by_name = {job.job_id: job for job in sims}
        for name, reason in policy.take_declined().items():
            if name not in by_name:
                raise ValueError(f"policy {policy.name!r} declined {name!r}, not an active job")
            self._declined[pool][by_name[name]] = f"declined by {policy.name}: {reason}"
        counts: dict[JobView, dict[int, int]] = {}
        for name, alloc in answer.items():
            counts[by_name[name]] = {members[pos]: k for pos, k in alloc.gpus}
        placements = gpu_ids_for(self.state, running, counts)
        wanted: dict[JobView, Want] = {}
        self._given = {j: a for j, a in self._given.items() if j.pool != pool}
        for name, alloc in answer.items():
            job = by_name[name]
            setting = BatchSetting(alloc.local_bsz, alloc.accum_steps, alloc.adaptive)
            wanted[job] = Want(placements[job], setting)
            self._given[job] = alloc
        return wanted
