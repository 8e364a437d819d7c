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


def usages(job: PsJob, options: Sequence[Option]) -> FloatArray:
    """:func:`usage` of each of ``options``, flattened: row o is ``usage(job, options[o])
    .ravel()``."""
    workers = np.array([o.workers for o in options], dtype=float)
    servers = np.array([o.servers for o in options], dtype=float)
    server = np.array([_vector(job.server(p)) for p in servers.sum(axis=1).astype(int)])
    out = workers[:, :, None] * _vector(job.worker)[None, None, :]
    out += servers[:, :, None] * server[:, None, :]
    return np.asarray(out.reshape(len(options), -1), dtype=float)


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
    gpu_memory = _gpu_memory(machines)
    rooms = _rooms(job.worker, gpu_memory, free)
    return _place(job, workers, servers, gpu_memory, free, rooms, order, spread)


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
    gpu_memory = _gpu_memory(machines)
    # Every shape's workers see the same free capacity: their room per machine is computed once.
    worker_rooms = _rooms(job.worker, gpu_memory, cap)
    seen: dict[Option, None] = {}
    for w, p in job.shapes() if shapes is None else shapes:
        for s in first:
            order = [(s + k) % n for k in range(n)]
            for spread in (False, True):
                option = _place(job, w, p, gpu_memory, cap, worker_rooms, order, spread)
                if option is not None:
                    seen.setdefault(option)
    return tuple(seen)


def _vector(demand: TaskDemand) -> FloatArray:
    return np.array([demand.gpus, demand.cpus, demand.memory_gib], dtype=float)


def _gpu_memory(machines: Sequence[Machine]) -> FloatArray:
    return np.array([m.gpu_memory_gib for m in machines], dtype=float)


def _rooms(demand: TaskDemand, gpu_memory: FloatArray, free: FloatArray) -> list[int]:
    """How many more such tasks fit on each machine (``gpu_memory``: each machine's per-GPU
    memory, which a worker's GPU needs at least its demand of)."""
    need = _vector(demand)
    dims = need > 0
    if not dims.any():
        raise ValueError("a task must need some resource")
    counts = np.floor((free[:, dims] + _EPS) / need[dims]).min(axis=1)
    if demand.gpus:
        counts = np.where(demand.gpu_memory_gib > gpu_memory, 0.0, counts)
    rooms: list[int] = np.maximum(counts, 0.0).astype(np.int64).tolist()
    return rooms


def _place(
    job: PsJob,
    workers: int,
    servers: int,
    gpu_memory: FloatArray,
    free: FloatArray,
    worker_rooms: list[int],
    order: Sequence[int],
    spread: bool,
) -> Option | None:
    """:func:`place` with the workers' room per machine on ``free`` already known."""
    w_count = _fill(worker_rooms, workers, order, spread)
    if w_count is None:
        return None
    server = job.server(servers)
    left = free - np.asarray(w_count, dtype=float)[:, None] * _vector(job.worker)[None, :]
    s_count = _fill(_rooms(server, gpu_memory, left), servers, order, spread)
    if s_count is None:
        return None
    return Option(tuple(w_count), tuple(s_count))


def _fill(rooms: list[int], count: int, order: Sequence[int], spread: bool) -> list[int] | None:
    """Tasks per machine when ``count`` tasks go, in ``order`` (distinct machines), where
    ``rooms`` allow; None if they do not fit."""
    visited = sum(rooms) if len(order) == len(rooms) else sum(rooms[m] for m in order)
    if visited < count:
        return None
    placed = [0] * len(rooms)
    room = list(rooms)
    left = count
    while left > 0:
        for m in order:
            if left == 0:
                break
            take = min(room[m], left, 1 if spread else left)
            placed[m] += take
            room[m] -= take
            left -= take
    return placed
