"""Placements of a PS job's tasks on machines, and the candidate placements a scheduler
chooses among.

An :class:`Option` says how many workers and PS of one job sit on each machine. Its resource
use is per machine: GPUs, CPUs and host memory (:data:`RESOURCES`). A worker also needs a GPU
with enough memory, so it is never put on a machine whose GPUs are too small.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dlsched.ps.job import PsJob, TaskDemand
from dlsched.ps.machines import Machine

RESOURCES = ("gpus", "cpus", "memory_gib")
FloatArray = npt.NDArray[np.float64]
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Option:
    """``workers[m]`` workers and ``servers[m]`` PS of one job on machine ``m``."""

    workers: tuple[int, ...]
    servers: tuple[int, ...]

    @property
    def w(self) -> int:
        return sum(self.workers)

    @property
    def p(self) -> int:
        return sum(self.servers)

    def tasks(self) -> tuple[int, ...]:
        """Tasks (workers and PS) per machine."""
        return tuple(a + b for a, b in zip(self.workers, self.servers, strict=True))


def capacity(machines: Sequence[Machine]) -> FloatArray:
    """Per machine and resource (rows: machines, columns: :data:`RESOURCES`)."""
    return np.array([[m.gpus, m.cpus, m.memory_gib] for m in machines], dtype=float)


def usage(job: PsJob, option: Option) -> FloatArray:
    """What ``option`` takes from each machine (same layout as :func:`capacity`)."""
    worker, server = job.worker, job.server(option.p)
    w = np.asarray(option.workers, dtype=float)[:, None]
    s = np.asarray(option.servers, dtype=float)[:, None]
    return w * _vector(worker) + s * _vector(server)


def place(
    job: PsJob,
    workers: int,
    servers: int,
    machines: Sequence[Machine],
    free: FloatArray,
    order: Sequence[int],
    spread: bool = False,
) -> Option | None:
    """Place ``workers`` workers and ``servers`` PS on ``free`` capacity, visiting machines in
    ``order``: packed (fill a machine, then the next) or ``spread`` (one task per machine per
    pass). None if they do not fit. ``free`` is not modified."""
    left = free.copy()
    w_count = _assign(job.worker, workers, machines, left, order, spread)
    if w_count is None:
        return None
    s_count = _assign(job.server(servers), servers, machines, left, order, spread)
    if s_count is None:
        return None
    return Option(tuple(w_count), tuple(s_count))


def candidate_options(
    job: PsJob,
    machines: Sequence[Machine],
    free: FloatArray | None = None,
    starts: Iterable[int] | None = None,
    shapes: Iterable[tuple[int, int]] | None = None,
) -> tuple[Option, ...]:
    """Distinct placements of every (workers, PS) shape of ``job`` that fit ``free`` (default:
    the empty machines): packed and spread, starting at each machine of ``starts`` (default:
    every machine) and going round in machine order. Deterministic."""
    cap = capacity(machines) if free is None else free
    n = len(machines)
    first = range(n) if starts is None else starts
    seen: dict[Option, None] = {}
    for w, p in job.shapes() if shapes is None else shapes:
        for s in first:
            order = [(s + k) % n for k in range(n)]
            for spread in (False, True):
                option = place(job, w, p, machines, cap, order, spread)
                if option is not None:
                    seen.setdefault(option)
    return tuple(seen)


def _vector(demand: TaskDemand) -> FloatArray:
    return np.array([demand.gpus, demand.cpus, demand.memory_gib], dtype=float)


def _rooms(demand: TaskDemand, machines: Sequence[Machine], free: FloatArray) -> list[int]:
    """How many more such tasks fit on each machine."""
    need = _vector(demand)
    dims = need > 0
    if not dims.any():
        raise ValueError("a task must need some resource")
    counts = np.floor((free[:, dims] + _EPS) / need[dims]).min(axis=1)
    if demand.gpus:
        small = np.array([demand.gpu_memory_gib > m.gpu_memory_gib for m in machines])
        counts = np.where(small, 0, counts)
    return [max(0, int(c)) for c in counts]


def _assign(
    demand: TaskDemand,
    count: int,
    machines: Sequence[Machine],
    free: FloatArray,
    order: Sequence[int],
    spread: bool,
) -> list[int] | None:
    # Tasks of one kind need the same on every machine, so a machine's room only drops by the
    # tasks put on it: computed once.
    rooms = _rooms(demand, machines, free)
    if sum(rooms[m] for m in order) < count:
        return None
    placed = [0] * len(machines)
    left = count
    while left > 0:
        for m in order:
            if left == 0:
                break
            take = min(rooms[m], left, 1 if spread else left)
            placed[m] += take
            rooms[m] -= take
            left -= take
    free -= np.asarray(placed, dtype=float)[:, None] * _vector(demand)[None, :]
    return placed
