"""Progress of parameter-server (PS) jobs: the layered iteration-time model under shared links.

A PS job (:class:`dlsched.ps.job.PsJob`) trains ``samples`` examples; with ``w`` workers an
iteration processes ``w · batch`` of them, so its rate is ``w · batch / iteration time``
samples per second. The iteration time (:mod:`dlsched.ps.iteration`, our reconstruction of the
SMD model) depends on where its tasks sit: every task (worker or PS, of any PS job) on a node
shares that node's link equally, so a PS job's rate changes whenever another PS job starts,
stops or moves on one of its nodes; :meth:`PsModel.affected` names those jobs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlsched.cluster.state import Placement, Split
from dlsched.perf.model import PS, ProgressModel
from dlsched.ps.job import PsJob
from dlsched.ps.machines import Machine
from dlsched.scheduler.plan import JobConfig

if TYPE_CHECKING:
    from dlsched.sim.job import SimJob

MIB_PER_GIB = 1024.0


@dataclass(frozen=True, slots=True)
class PsTasks(JobConfig):
    """Where a PS job's tasks run: ``(node index, workers, PS)`` per node, nodes increasing."""

    tasks: tuple[tuple[int, int, int], ...]

    @property
    def workers(self) -> int:
        return sum(w for _, w, _ in self.tasks)

    @property
    def servers(self) -> int:
        return sum(s for _, _, s in self.tasks)


def resources(
    job: PsJob, tasks: PsTasks, gpu_ids: Sequence[tuple[int, ...]]
) -> tuple[Placement, Split]:
    """The placement (``gpu_ids[i]``: the GPUs of the workers on the i-th node of ``tasks``)
    and the CPUs and memory (MiB) per node of ``tasks``."""
    worker, server = job.worker, job.server(tasks.servers)
    placement = tuple(
        (node, tuple(ids)) for (node, _, _), ids in zip(tasks.tasks, gpu_ids, strict=True)
    )
    split = tuple(
        (
            w * worker.cpus + s * server.cpus,
            (w * worker.memory_gib + s * server.memory_gib) * MIB_PER_GIB,
        )
        for _, w, s in tasks.tasks
    )
    return placement, split


class PsModel(ProgressModel):
    """Shared-link progress of PS jobs (module docstring). ``machines[i]`` describes node i
    (its bandwidth and GPU rate)."""

    kind = PS

    def __init__(self, machines: Sequence[Machine]) -> None:
        self.machines = tuple(machines)
        self.tasks_on = [0] * len(machines)
        self.jobs_on: list[set[SimJob]] = [set() for _ in machines]
        self._held: dict[SimJob, PsTasks] = {}

    def begin(self, job: SimJob, now: float) -> None:
        tasks = job.config
        assert isinstance(tasks, PsTasks)
        self._release(job)
        self._held[job] = tasks
        for node, w, s in tasks.tasks:
            self.tasks_on[node] += w + s
            self.jobs_on[node].add(job)
        self.rerate(job)

    def rerate(self, job: SimJob) -> None:
        """Set ``job``'s rate from the tasks now on its nodes."""
        tasks = self._held[job]
        ps: PsJob = job.ext
        machines, on = self.machines, self.tasks_on
        worker_bw = min(machines[n].bytes_per_second / on[n] for n, w, _ in tasks.tasks if w)
        server_bw = min(machines[n].bytes_per_second / on[n] for n, _, s in tasks.tasks if s)
        tflops = min(machines[n].gpu_tflops for n, w, _ in tasks.tasks if w)
        seconds = ps.model.time(tasks.workers, tasks.servers, tflops, worker_bw, server_bw)
        job.rate = tasks.workers * ps.batch / seconds
        job.boundary = job.work

    def stopped(self, job: SimJob, now: float) -> None:
        self._release(job)

    def _release(self, job: SimJob) -> None:
        old = self._held.pop(job, None)
        if old is None:
            return
        for node, w, s in old.tasks:
            self.tasks_on[node] -= w + s
            self.jobs_on[node].discard(job)

    def affected(self, nodes: Iterable[int]) -> Iterable[SimJob]:
        out: dict[SimJob, None] = {}
        for node in sorted(nodes):
            for other in sorted(self.jobs_on[node], key=lambda j: j.seq):
                out[other] = None
        return out
