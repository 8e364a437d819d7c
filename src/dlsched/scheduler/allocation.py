"""Allocation policies: the shared step that turns the allocations a policy wants into a Plan.

Ordering policies rank jobs and leave placement to a placer (:mod:`dlsched.scheduler.cycle`).
Allocation policies (Pollux, ONES, Gavel, Themis, Optimus for elastic jobs; SMD and Optimus for
parameter-server jobs) instead return, at each of their rounds, the whole allocation of every
job they schedule: GPUs per node and the job's configuration on them. An
:class:`AllocationAdapter` translates between a policy family's own view (positions in a
cluster view, batch splits, PS options) and the simulator's jobs and placements; one
:class:`AllocationScheduler` keeps the jobs of the pools and turns each round's wanted
allocations into starts, preemptions and resizes (:func:`diff`).

Each round a policy sees only what it may use: the nodes that are up (not failed, powered on),
without the GPUs held by jobs other schedulers of the run own, and without ``reserved`` GPUs
set aside for the waiting jobs of schedulers that rank above it (see
:mod:`dlsched.sim.groups`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dlsched.cluster.state import WHOLE, ClusterState, Demand, OverCommitError, Placement, Split
from dlsched.scheduler.cycle import PoolQueues, Scheduler
from dlsched.scheduler.plan import EMPTY_PLAN, JobConfig, Plan, Resize, Start
from dlsched.scheduler.view import JobView


@dataclass(frozen=True, slots=True)
class Want:
    """What an allocation policy wants one job to hold: a placement, its config, and the CPUs
    and memory per entry when not in proportion to GPUs."""

    placement: Placement
    config: JobConfig | None = None
    split: Split | None = None


def diff(
    running: Sequence[JobView],
    wanted: dict[JobView, Want],
    current_config: Callable[[JobView], JobConfig | None],
) -> Plan:
    """The plan that takes the pool from what its jobs hold now to ``wanted``: running jobs
    not wanted are preempted, running jobs wanted elsewhere or with another config (as
    ``current_config`` reads it) are resized, waiting jobs wanted are started."""
    preempts = tuple(j for j in running if j not in wanted)
    resizes: list[Resize] = []
    starts: list[Start] = []
    for job, want in wanted.items():
        if not job.running:
            starts.append(Start(job, want.placement, want.config, want.split))
        elif want.placement != job.placement or want.config != current_config(job):
            resizes.append(Resize(job, want.placement, want.config, want.split))
    if not (preempts or resizes or starts):
        return EMPTY_PLAN
    return Plan(tuple(starts), preempts, None, tuple(resizes))


class AllocationAdapter(ABC):
    """One allocation policy family's translation (module docstring). ``interval`` is the
    policy's round in seconds (None: it decides after every event)."""

    name: str

    @property
    @abstractmethod
    def interval(self) -> float | None: ...

    @abstractmethod
    def never_fits(self, pool: int, job: JobView) -> str | None:
        """Why the policy can never run ``job`` in ``pool`` (None if it can): checked when the
        job arrives, so it is set aside with the reason instead of waiting forever."""

    @abstractmethod
    def decide(
        self, pool: int, now: float, jobs: Sequence[JobView], available: Sequence[int]
    ) -> dict[JobView, Want]:
        """The wanted allocation of every job of ``jobs`` (the pool's active jobs of this
        policy, in arrival order) that should hold GPUs from ``now``. ``available[i]`` is how
        many GPUs of the i-th node of the pool (:attr:`ClusterState.pool_nodes`) the policy may
        hold, its own jobs' GPUs included; where its running jobs hold more than that (GPUs
        reserved for other schedulers' waiting jobs), the adapter presents some of them as not
        running (:func:`displaced`) so the policy places them again."""

    @abstractmethod
    def current_config(self, job: JobView) -> JobConfig | None:
        """The configuration ``job`` runs with now (what :func:`diff` compares against)."""

    def finished(self, job: JobView, now: float) -> None:  # noqa: B027 (optional hook)
        """``job`` finished at ``now`` (delivered before the policy's next decision)."""

    def take_declined(self, pool: int) -> dict[JobView, str]:
        """The waiting jobs of ``pool`` the last :meth:`decide` refused for good, with the
        reason (each reported once; a declined job is no longer the policy's)."""
        return {}


class AllocationScheduler:
    """Runs one allocation policy over the pools of one cluster state; the same driver-facing
    interface as :class:`dlsched.scheduler.cycle.Scheduler`."""

    preemptive = True

    def __init__(self, adapter: AllocationAdapter, state: ClusterState) -> None:
        self.adapter = adapter
        self.state = state
        self.pools = [PoolQueues() for _ in range(state.num_pools)]
        self.active: list[dict[JobView, None]] = [{} for _ in range(state.num_pools)]
        self.reserved = [0.0] * state.num_pools
        self.name = adapter.name

    @property
    def interval(self) -> float | None:
        return self.adapter.interval

    def never_fits(self, pool: int, demand: Demand) -> str | None:
        return self.state.can_ever_fit(pool, demand)

    def never_fits_job(self, pool: int, job: JobView) -> str | None:
        return self.adapter.never_fits(pool, job)

    # ---- notifications from the driver ---------------------------------------------------
    def on_submitted(self, job: JobView, now: float) -> None:
        q = self.pools[job.pool]
        q.pending_jobs += 1
        q.pending_gpus += job.gpus
        self.active[job.pool][job] = None

    def on_started(self, job: JobView) -> None:
        q = self.pools[job.pool]
        q.pending_jobs -= 1
        q.pending_gpus -= job.gpus
        q.running_jobs += 1

    def on_stopped(self, job: JobView, now: float) -> None:
        q = self.pools[job.pool]
        q.running_jobs -= 1
        q.pending_jobs += 1
        q.pending_gpus += job.gpus

    def on_requeued(self, job: JobView, now: float) -> None:
        """Nothing to do: the next round decides every active job again."""

    def on_finished(self, job: JobView, now: float) -> None:
        q = self.pools[job.pool]
        q.running_jobs -= 1
        del self.active[job.pool][job]
        self.adapter.finished(job, now)

    # ---- the round -----------------------------------------------------------------------
    def available(self, pool: int, jobs: Sequence[JobView]) -> list[int]:
        """GPUs per node of ``pool`` the policy may hold: wholly free GPUs of up nodes plus
        those its own running ``jobs`` hold, less the pool's reservation, taken from free GPUs
        first (nodes with the most, highest index first), then from the policy's own (whose
        jobs there must then move: see :meth:`AllocationAdapter.decide`)."""
        state = self.state
        members = state.pool_nodes[pool]
        own: dict[int, int] = {}
        for job in jobs:
            if job.placement is not None:
                for node, gpus in job.placement:
                    own[node] = own.get(node, 0) + len(gpus)
        free = [state.free_whole[n] if state.node_up[n] else 0 for n in members]
        mine = [own.get(n, 0) if state.node_up[n] else 0 for n in members]
        reserve = int(self.reserved[pool] + 0.999)
        for part in (free, mine):
            for i in sorted(range(len(part)), key=lambda i: (-part[i], -i)):
                if reserve <= 0:
                    break
                take = min(part[i], reserve)
                part[i] -= take
                reserve -= take
        return [f + m for f, m in zip(free, mine, strict=True)]

    def cycle(self, pool: int, now: float) -> Plan:
        jobs = list(self.active[pool])
        if not jobs:
            return EMPTY_PLAN
        available = self.available(pool, jobs)
        if not any(available) and not self.pools[pool].running_jobs:
            return EMPTY_PLAN  # nothing to run on and nothing to stop: no decision to make
        wanted = self.adapter.decide(pool, now, jobs, available)
        running = [j for j in jobs if j.running]
        plan = diff(running, wanted, self.adapter.current_config)
        declined = self.adapter.take_declined(pool)
        if not declined:
            return plan
        q = self.pools[pool]
        for job in declined:
            if job.running or job in wanted:
                raise ValueError(
                    f"policy {self.name!r} declined job {job.job_id!r} but runs it; only a "
                    "waiting job can be declined"
                )
            del self.active[pool][job]
            q.pending_jobs -= 1
            q.pending_gpus -= job.gpus
        return plan._replace(declines=tuple(declined.items()))


def displaced(
    running: Sequence[JobView], nodes: Sequence[int], available: Sequence[int]
) -> set[JobView]:
    """The running jobs to present as not running so that what the others hold fits
    ``available`` (per node of ``nodes``): on each node over its share, the most recently
    started jobs (highest ``seq`` among equals) go first."""
    room = dict(zip(nodes, available, strict=True))
    held: dict[int, list[JobView]] = {}
    used: dict[int, int] = {}
    for job in running:
        for node, gpus in job.placement or ():
            held.setdefault(node, []).append(job)
            used[node] = used.get(node, 0) + len(gpus)
    out: set[JobView] = set()
    for node in sorted(used):
        if used[node] <= room.get(node, 0):
            continue
        for job in sorted(held[node], key=_latest_first):
            if used[node] <= room.get(node, 0):
                break
            if job in out:
                continue
            out.add(job)
            for n, gpus in job.placement or ():
                used[n] -= len(gpus)
    return out


def _latest_first(job: JobView) -> tuple[float, int]:
    return (-getattr(job, "seg_begin", 0.0), -job.seq)


def gpu_ids_for(
    state: ClusterState,
    running: Sequence[JobView],
    wanted_counts: dict[JobView, dict[int, int]],
) -> dict[JobView, Placement]:
    """Concrete GPUs for wanted GPU counts per node (node index → count; a count may be 0 for
    a node holding only CPU tasks). On a node where a job already holds GPUs it keeps them (as
    many as it wants there, lowest first); what it needs beyond them, and all a job new to a
    node needs, are GPUs that are wholly free (lowest index first), then GPUs a ``running``
    job of this policy gives up."""
    holding: dict[JobView, dict[int, tuple[int, ...]]] = {
        job: dict(job.placement) for job in running if job.placement is not None
    }
    kept: dict[int, set[int]] = {}
    out_nodes: dict[JobView, dict[int, tuple[int, ...]]] = {}
    for job, want in wanted_counts.items():
        have = holding.get(job, {})
        chosen: dict[int, tuple[int, ...]] = {}
        for node, k in want.items():
            mine = have.get(node, ())[:k]
            chosen[node] = mine
            kept.setdefault(node, set()).update(mine)
        out_nodes[job] = chosen
    released: dict[int, set[int]] = {}
    for have in holding.values():
        for node, ids in have.items():
            released.setdefault(node, set()).update(ids)
    for job, want in wanted_counts.items():
        chosen = out_nodes[job]
        for node, k in sorted(want.items()):
            need = k - len(chosen[node])
            if need == 0:
                continue
            taken = kept[node]
            # Wholly free GPUs first: live, a GPU another job gives up is free only once that
            # job has checkpointed and stopped.
            fm = state.free_milli[node]
            free = [g for g, milli in enumerate(fm) if g not in taken and milli == WHOLE]
            free += [g for g in sorted(released.get(node, ())) if g not in taken and fm[g] != WHOLE]
            if len(free) < need:
                raise OverCommitError(
                    f"node {state.node_names[node]}: {k} GPUs wanted, {len(free) + k - need} usable"
                )
            ids = tuple(free[:need])
            taken.update(ids)
            chosen[node] = tuple(sorted((*chosen[node], *ids)))
    return {job: tuple(sorted(nodes.items())) for job, nodes in out_nodes.items()}


AnyScheduler = Scheduler | AllocationScheduler
"""Either scheduler a driver runs: an ordering policy's or an allocation policy's."""
