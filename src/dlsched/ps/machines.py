"""Machines of a parameter-server cluster: GPUs, CPUs, memory and network bandwidth.

A :class:`Machine` extends dlsched's :class:`~dlsched.cluster.spec.NodeSpec` (GPUs, CPUs,
memory) with what the PS performance model needs: GPU memory, a GPU's sustained FLOP rate and
the NIC's bandwidth. :func:`machines_from_cluster` turns any dlsched cluster into PS machines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dlsched.cluster.spec import ClusterSpec

GIB = 1024**3


@dataclass(frozen=True, slots=True)
class Machine:
    """One machine. Memory figures in GiB, bandwidth in Gbit/s, GPU rate in TFLOP/s."""

    name: str
    gpus: int
    cpus: float
    memory_gib: float
    bandwidth_gbps: float
    gpu_memory_gib: float = 16.0
    gpu_tflops: float = 8.0

    def __post_init__(self) -> None:
        for field_name in ("cpus", "memory_gib", "bandwidth_gbps", "gpu_memory_gib", "gpu_tflops"):
            value = getattr(self, field_name)
            if not value > 0:
                raise ValueError(f"machine {self.name!r}: {field_name} must be > 0, got {value}")
        if self.gpus < 0:
            raise ValueError(f"machine {self.name!r}: gpus must be >= 0, got {self.gpus}")

    @property
    def bytes_per_second(self) -> float:
        return self.bandwidth_gbps * 1e9 / 8.0


def uniform_machines(
    count: int,
    gpus: int = 4,
    cpus: float = 32.0,
    memory_gib: float = 128.0,
    bandwidth_gbps: float = 25.0,
    gpu_memory_gib: float = 16.0,
    gpu_tflops: float = 8.0,
) -> tuple[Machine, ...]:
    """``count`` identical machines named m0, m1, ..."""
    if count < 1:
        raise ValueError(f"need at least one machine, got {count}")
    return tuple(
        Machine(f"m{i}", gpus, cpus, memory_gib, bandwidth_gbps, gpu_memory_gib, gpu_tflops)
        for i in range(count)
    )


def machines_from_cluster(
    spec: ClusterSpec,
    bandwidth_gbps: float = 25.0,
    gpu_memory_gib: float = 16.0,
    gpu_tflops: float = 8.0,
    default_cpus: float = 32.0,
    default_memory_gib: float = 128.0,
) -> tuple[Machine, ...]:
    """PS machines for the nodes of a dlsched cluster; untracked CPUs or memory take the
    defaults (a PS task always needs some)."""
    out: list[Machine] = []
    for node in spec.nodes:
        cpus = node.cpus if node.cpus is not None else default_cpus
        mem = node.memory_mib / 1024 if node.memory_mib is not None else default_memory_gib
        out.append(
            Machine(node.name, node.gpus, cpus, mem, bandwidth_gbps, gpu_memory_gib, gpu_tflops)
        )
    return tuple(out)


def check_machines(machines: Sequence[Machine]) -> None:
    """ValueError unless there is at least one machine and names are unique."""
    if not machines:
        raise ValueError("need at least one machine")
    names = [m.name for m in machines]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate machine names in {names}")
