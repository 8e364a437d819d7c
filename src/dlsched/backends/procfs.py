"""What Linux's /proc says about processes: start times, liveness, and marked environments.

A process is identified by its pid *and* its start time, so a recycled pid is never mistaken
for a job that exited. Start times are Unix seconds with the kernel's clock-tick resolution.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
START_TOLERANCE_S = 0.05
"""Two start times closer than this are the same process (clock ticks are 10 ms)."""


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The fields of ``/proc/<pid>/stat`` this package needs."""

    pid: int
    state: str
    pgid: int
    start_time: float


def _boot_time() -> float:
    for line in (PROC / "stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise RuntimeError("/proc/stat has no btime line")


def read_stat(pid: int) -> ProcStat | None:
    """The process's stat record, or None if it does not exist (any more)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    rest = text[text.rindex(")") + 2 :].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return ProcStat(pid, rest[0], int(rest[2]), _boot_time() + int(rest[19]) / ticks)


def is_alive(pid: int, start_time: float | None) -> bool:
    """Whether ``pid`` is a live (not zombie) process started at ``start_time`` (any start
    time when None)."""
    st = read_stat(pid)
    if st is None or st.state in ("Z", "X"):
        return False
    return start_time is None or abs(st.start_time - start_time) < START_TOLERANCE_S


def marked_processes(marker: str, value: str, key: str) -> dict[str, list[ProcStat]]:
    """Live processes whose environment holds ``marker=value``, grouped by the value of their
    environment variable ``key`` (processes without ``key`` are skipped)."""
    want = f"{marker}={value}".encode()
    prefix = f"{key}=".encode()
    out: dict[str, list[ProcStat]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if want not in env:
            continue
        found = next((v[len(prefix) :] for v in env if v.startswith(prefix)), None)
        st = read_stat(int(entry.name))
        if found is None or st is None or st.state in ("Z", "X"):
            continue
        out.setdefault(found.decode(), []).append(st)
    return out
