"""Parameter-server jobs on the one simulator: their policies (SMD, Optimus-style) and their
placement under ordering policies.

A PS policy sees the machines of a pool as :class:`~dlsched.ps.machines.Machine` records whose
GPUs, CPUs and memory are what it may use at that decision (what is free on up nodes plus what
its own jobs hold), and answers an :class:`~dlsched.ps.placement.Option` per job (workers and
PS per machine position). Under an ordering policy (FIFO, Tiresias, ...) a PS job runs at its
requested workers and PS, packed onto the machines with the most free GPUs first
(:func:`dlsched.ps.policy_base.first_fit`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlsched.cluster.state import ClusterState
from dlsched.perf.ps_progress import MIB_PER_GIB, PsTasks, resources
from dlsched.ps.job import PsJob, infeasibility
from dlsched.ps.machines import Machine
from dlsched.ps.placement import FloatArray, Option
from dlsched.ps.policy_base import JobState, PsPolicy, first_fit, fits_somewhere
from dlsched.scheduler.allocation import AllocationAdapter, Want, displaced, gpu_ids_for
from dlsched.scheduler.plan import JobConfig, Start
from dlsched.scheduler.view import JobView
from dlsched.sim.job import SimJob


def why_never_runs(job: PsJob, machines: Sequence[Machine]) -> str | None:
    """Why ``job`` can never run on ``machines`` (empty and healthy), or None."""
    reason = infeasibility(job, machines)
    if reason is not None:
        return reason
    if not fits_somewhere(job, 1, 1, machines):
        return "one worker and one PS do not fit together on the machines"
    return None


def _usable(
    state: ClusterState,
    nodes: Sequence[int],
    own: dict[int, tuple[int, float, float]],
    limit: dict[int, int] | None = None,
) -> FloatArray:
    """What may be held on each of ``nodes`` (rows; columns GPUs, CPUs, memory GiB): what is
    free on an up node plus ``own`` (GPUs, CPUs, MiB held there by the asking policy's jobs),
    at most ``limit`` GPUs per node when given; nothing on a down node."""
    rows = []
    for n in nodes:
        if not state.node_up[n]:
            rows.append((0.0, 0.0, 0.0))
            continue
        g, c, m = own.get(n, (0, 0.0, 0.0))
        gpus = state.free_whole[n] + g
        if limit is not None:
            gpus = min(gpus, limit.get(n, gpus))
        rows.append((float(gpus), state.free_cpus[n] + c, (state.free_mem[n] + m) / MIB_PER_GIB))
    return np.array(rows, dtype=float).reshape(len(nodes), 3)


def _to_tasks(option: Option, nodes: Sequence[int]) -> PsTasks:
    return PsTasks(
        tuple(
            (nodes[i], w, s)
            for i, (w, s) in enumerate(zip(option.workers, option.servers, strict=True))
            if w or s
        )
    )


def _to_option(tasks: PsTasks, nodes: Sequence[int]) -> Option | None:
    """``tasks`` in positions of ``nodes``; None if a task sits on a node not listed."""
    pos = {n: i for i, n in enumerate(nodes)}
    workers, servers = [0] * len(nodes), [0] * len(nodes)
    for node, w, s in tasks.tasks:
        if node not in pos:
            return None
        workers[pos[node]] = w
        servers[pos[node]] = s
    return Option(tuple(workers), tuple(servers))


def _start(state: ClusterState, job: SimJob, tasks: PsTasks, running: Sequence[SimJob]) -> Want:
    counts = {node: w for node, w, _ in tasks.tasks}
    placement = gpu_ids_for(state, running, {job: counts})[job]
    ids = [gpus for _, gpus in placement]
    placement, split = resources(job.ext, tasks, ids)
    return Want(placement, tasks, split)


class PsPlacer:
    """Places a PS job at its requested shape for ordering policies (module docstring)."""

    def __init__(self, machines: Sequence[Machine]) -> None:
        self.machines = tuple(machines)

    def __call__(self, state: ClusterState, pool: int, view: JobView) -> Start | None:
        assert isinstance(view, SimJob)
        ps: PsJob = view.ext
        nodes = state.pool_nodes[pool]
        machines = [self.machines[n] for n in nodes]
        free = _usable(state, nodes, {})
        option = first_fit(ps, ps.requested_workers, ps.requested_servers, machines, free)
        if option is None:
            return None
        want = _start(state, view, _to_tasks(option, nodes), ())
        return Start(view, want.placement, want.config, want.split)


class PsAdapter(AllocationAdapter):
    """One PS policy over ``state``; ``machines[i]`` describes node i."""

    def __init__(self, policy: PsPolicy, state: ClusterState, machines: Sequence[Machine]) -> None:
        self.policy = policy
        self.state = state
        self.machines = tuple(machines)
        self.name = policy.name

    @property
    def interval(self) -> float | None:
        return self.policy.interval

    def never_fits(self, pool: int, job: JobView) -> str | None:
        assert isinstance(job, SimJob)
        members = [self.machines[n] for n in self.state.pool_nodes[pool]]
        return why_never_runs(job.ext, members)

    def current_config(self, job: JobView) -> JobConfig | None:
        assert isinstance(job, SimJob)
        return job.config

    def decide(
        self, pool: int, now: float, jobs: Sequence[JobView], available: Sequence[int]
    ) -> dict[JobView, Want]:
        sims = [j for j in jobs if isinstance(j, SimJob)]
        own: dict[int, tuple[int, float, float]] = {}
        for job in sims:
            if job.placement is not None and job.split is not None:
                for (node, gpus), (cpus, mem) in zip(job.placement, job.split, strict=True):
                    g, c, m = own.get(node, (0, 0.0, 0.0))
                    own[node] = (g + len(gpus), c + cpus, m + mem)
        members = self.state.pool_nodes[pool]
        running = [j for j in sims if j.running]
        moved = displaced(running, members, available)
        limit = dict(zip(members, available, strict=True))
        nodes = members
        machines = [self.machines[n] for n in nodes]
        free = _usable(self.state, nodes, own, limit)
        views = []
        for job in sims:
            option = None
            if job.running and job not in moved and isinstance(job.config, PsTasks):
                option = _to_option(job.config, nodes)
            views.append(
                JobState(job.ext, job.work - job.done_at(now), job.attained_service(now), option)
            )
        answer = self.policy.decide(now, views, machines, free)
        by_id = {job.job_id: job for job in sims}
        wanted: dict[JobView, Want] = {}
        counts: dict[JobView, dict[int, int]] = {}
        tasks_of: dict[SimJob, PsTasks] = {}
        for job_id, option in answer.items():
            if job_id not in by_id:
                raise RuntimeError(
                    f"policy {self.name!r} placed unknown or finished job {job_id!r}"
                )
            job = by_id[job_id]
            tasks = _to_tasks(option, nodes)
            tasks_of[job] = tasks
            counts[job] = {node: w for node, w, _ in tasks.tasks}
        placements = gpu_ids_for(self.state, running, counts)
        for job, tasks in tasks_of.items():
            ids = [gpus for _, gpus in placements[job]]
            placement, split = resources(job.ext, tasks, ids)
            wanted[job] = Want(placement, tasks, split)
        return wanted
