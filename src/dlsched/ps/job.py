"""A parameter-server training job and what each of its tasks needs from a machine."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dlsched.ps.iteration import BYTES_PER_PARAM, IterationModel
from dlsched.ps.machines import GIB, Machine
from dlsched.ps.zoo import NetworkProfile

WORKER_CPUS = 4.0
SERVER_CPUS = 4.0
WORKER_HOST_BASE_GIB = 2.0  # data loading, framework
SERVER_HOST_BASE_GIB = 1.0
OPTIMIZER_BYTES_PER_PARAM = 16  # on a PS: parameters, gradient sum, two Adam moments (fp32)
WORKER_GPU_BYTES_PER_PARAM = 8  # on a worker's GPU: parameters and gradients (fp32)
ACTIVATION_BYTES = 4


@dataclass(frozen=True, slots=True)
class TaskDemand:
    """What one task takes from its machine (GPUs, CPUs, host memory in GiB) and the GPU
    memory (GiB) its GPU must have."""

    gpus: int
    cpus: float
    memory_gib: float
    gpu_memory_gib: float = 0.0

    def fits(self, machine: Machine) -> bool:
        """Whether one such task fits on an empty ``machine``."""
        return (
            self.gpus <= machine.gpus
            and self.cpus <= machine.cpus
            and self.memory_gib <= machine.memory_gib
            and (self.gpus == 0 or self.gpu_memory_gib <= machine.gpu_memory_gib)
        )


@dataclass(frozen=True)
class PsJob:
    """A PS job: ``samples`` training examples of its network at per-worker ``batch`` (so an
    iteration with w workers processes ``w · batch`` of them), submitted at
    ``arrival`` (s) with ``weight`` in the objective. It asked for ``requested_workers`` and
    ``requested_servers`` (what FIFO and Tiresias give it); elastic policies choose up to
    ``max_workers`` workers and ``max_servers`` PS (never more PS than workers). ``model``
    (its iteration time) and ``worker`` (one worker's demand) are derived."""

    job_id: str
    network: NetworkProfile
    batch: int
    samples: float
    arrival: float = 0.0
    weight: float = 1.0
    requested_workers: int = 1
    requested_servers: int = 1
    max_workers: int = 8
    max_servers: int = 4
    model: IterationModel = field(init=False, repr=False, compare=False)
    worker: TaskDemand = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.samples <= 0 or self.weight <= 0:
            raise ValueError(f"job {self.job_id}: samples and weight must be > 0")
        if not 1 <= self.requested_workers <= self.max_workers:
            raise ValueError(
                f"job {self.job_id}: requested workers {self.requested_workers} not in "
                f"1..{self.max_workers}"
            )
        if not 1 <= self.requested_servers <= self.max_servers:
            raise ValueError(
                f"job {self.job_id}: requested PS {self.requested_servers} not in "
                f"1..{self.max_servers}"
            )
        object.__setattr__(self, "model", IterationModel(self.network, self.batch))
        object.__setattr__(self, "worker", self._worker())

    def _worker(self) -> TaskDemand:
        """One worker: a GPU holding parameters, gradients and the batch's activations."""
        params = self.network.params
        gpu_bytes = (
            WORKER_GPU_BYTES_PER_PARAM * params
            + ACTIVATION_BYTES * self.network.activations * self.batch
        )
        host = WORKER_HOST_BASE_GIB + BYTES_PER_PARAM * params / GIB
        return TaskDemand(1, WORKER_CPUS, host, gpu_bytes / GIB)

    def server(self, servers: int) -> TaskDemand:
        """One of ``servers`` PS: its shard of the parameters and optimizer state."""
        shard = OPTIMIZER_BYTES_PER_PARAM * self.network.params / servers / GIB
        return TaskDemand(0, SERVER_CPUS, SERVER_HOST_BASE_GIB + shard)

    def shapes(self) -> tuple[tuple[int, int], ...]:
        """Every (workers, PS) an elastic policy may give it, PS never above workers."""
        return tuple(
            (w, p)
            for w in range(1, self.max_workers + 1)
            for p in range(1, min(w, self.max_servers) + 1)
        )


def infeasibility(job: PsJob, machines: Sequence[Machine]) -> str | None:
    """Why ``job`` can never run on ``machines`` (None if it can): a worker that fits on no
    machine, or PS shards that fit nowhere even with the most PS it may have."""
    worker = job.worker
    if not any(worker.fits(m) for m in machines):
        biggest = max(m.gpu_memory_gib for m in machines)
        host = max(m.memory_gib for m in machines)
        return (
            f"a worker needs {worker.gpu_memory_gib:.1f} GiB of GPU memory and "
            f"{worker.memory_gib:.1f} GiB of host memory; the largest machine has "
            f"{biggest:.1f} GiB per GPU and {host:.1f} GiB"
        )
    server = job.server(job.max_servers)
    if not any(server.fits(m) for m in machines):
        return (
            f"a PS shard (with {job.max_servers} PS) needs {server.memory_gib:.1f} GiB of host "
            f"memory, more than any machine has"
        )
    return None
