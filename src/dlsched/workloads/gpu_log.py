"""``gpu_log.txt``: when a job process held which GPUs, in the job's own words.

Each run of a job appends ``<unix_time> start node=<node> gpus=<CUDA_VISIBLE_DEVICES>`` when it
starts and ``<unix_time> stop`` when it exits, so tests can check from the jobs' side that no
GPU was ever held by two running jobs. Lines are appended with a single ``write`` on a file
opened for appending, so a line is never interleaved with another.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

_START = re.compile(r"^(?P<t>\d+(?:\.\d+)?) start node=(?P<node>\S*) gpus=(?P<gpus>\S*)$")
_STOP = re.compile(r"^(?P<t>\d+(?:\.\d+)?) stop$")


class GpuLogError(ValueError):
    """A line of a GPU log does not follow the format; the message names file and line."""


@dataclass(frozen=True)
class GpuInterval:
    """One run of a job: GPUs ``gpus`` on ``node`` from ``start`` to ``stop`` (Unix seconds;
    ``stop`` is None when the process never logged its exit, e.g. it was killed with -9)."""

    node: str
    gpus: tuple[str, ...]
    start: float
    stop: float | None


def log_start(path: Path, node: str, visible_devices: str, now: float | None = None) -> None:
    """Append the start line of a run."""
    _append(path, f"{_stamp(now)} start node={node} gpus={visible_devices}\n")


def log_stop(path: Path, now: float | None = None) -> None:
    """Append the stop line of a run."""
    _append(path, f"{_stamp(now)} stop\n")


def read_gpu_log(path: Path) -> list[GpuInterval]:
    """The runs recorded in ``path``, in order. A start without a stop before the next start
    (or the end of the file) gives an interval with ``stop=None``. Raises
    :class:`GpuLogError` for a malformed line or a stop with no run open."""
    intervals: list[GpuInterval] = []
    open_run: GpuInterval | None = None
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        if m := _START.match(line):
            if open_run is not None:
                intervals.append(open_run)
            gpus = tuple(g for g in m["gpus"].split(",") if g)
            open_run = GpuInterval(m["node"], gpus, float(m["t"]), None)
        elif m := _STOP.match(line):
            if open_run is None:
                raise GpuLogError(f"{path}:{lineno}: 'stop' with no run started")
            intervals.append(
                GpuInterval(open_run.node, open_run.gpus, open_run.start, float(m["t"]))
            )
            open_run = None
        else:
            raise GpuLogError(
                f"{path}:{lineno}: expected '<time> start node=<node> gpus=<ids>' or "
                f"'<time> stop', got {line!r}"
            )
    if open_run is not None:
        intervals.append(open_run)
    return intervals


def _stamp(now: float | None) -> str:
    return f"{time.time() if now is None else now:.6f}"


def _append(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
