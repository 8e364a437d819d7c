"""What the kernel lets the local back end confine a sandboxed job with, found at start-up.

Namespaces: a job runs in its own PID, mount, IPC and UTS namespaces (``unshare``), with a
fresh ``/proc`` (it sees only its own processes, so not the service's command line or
environment) and private ``/tmp`` and ``/dev/shm``. Cgroups: a job runs in its own cgroup,
below the service's own (its limits can only tighten the service's), with a memory limit and
a CPU quota: cgroup v2 (``memory.max``, ``cpu.max``) when the service's cgroup v2 directory
has both controllers, else cgroup v1's ``memory`` and ``cpu`` hierarchies. Either may be
refused (a container without ``CAP_SYS_ADMIN``, cgroups mounted read-only or without those
controllers): :func:`probe` then says why, the job runs without it, and its log says so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
NAMESPACE_FLAGS = ("--pid", "--fork", "--mount-proc", "--ipc", "--uts")
CPU_PERIOD_US = 100_000


@dataclass(frozen=True, slots=True)
class JobLimits:
    """Resource limits of one job (None: unlimited)."""

    memory_bytes: int | None = None
    cpus: float | None = None

    def __bool__(self) -> bool:
        return self.memory_bytes is not None or self.cpus is not None


@dataclass(frozen=True, slots=True)
class CgroupParents:
    """Where job cgroups are made: ``version`` 2 (one directory) or 1 (``memory`` and
    ``cpu`` directories); each is a directory the service may make cgroups in."""

    version: int
    memory: Path
    cpu: Path

    def job_dirs(self, name: str) -> tuple[Path, ...]:
        dirs = {self.memory / name, self.cpu / name}
        return tuple(sorted(dirs))


@dataclass(frozen=True, slots=True)
class Confinement:
    """What :func:`probe` found: whether namespaces work (else ``namespaces_off`` says why)
    and where job cgroups go (None: ``cgroups_off`` says why)."""

    namespaces: bool
    namespaces_off: str | None = None
    cgroups: CgroupParents | None = None
    cgroups_off: str | None = None
    notes: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        """One line for a job's log: what confines it and what does not."""
        ns = (
            "pid,mount,ipc,uts namespaces"
            if self.namespaces
            else (f"no namespaces ({self.namespaces_off})")
        )
        cg = (
            f"cgroup v{self.cgroups.version}"
            if self.cgroups
            else (f"no cgroup, memory/CPU limits not enforced ({self.cgroups_off})")
        )
        return f"{ns}; {cg}"


def _own_cgroups() -> dict[str, str]:
    """The service's cgroup path per v1 controller, and under ``""`` its v2 path."""
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                out[name] = path
    return out


def _mounts() -> dict[str, Path]:
    """Mount points by what they hold: ``cgroup2``, or a v1 controller name."""
    out: dict[str, Path] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fstype, _, options = [*right.split(), "", "", ""][:3]
            point = Path(left.split()[4])
            if fstype == "cgroup2":
                out.setdefault("cgroup2", point)
            elif fstype == "cgroup":
                for opt in options.split(","):
                    if opt in ("memory", "cpu"):
                        out.setdefault(opt, point)
    return out


def _writable_parent(directory: Path, instance: str) -> Path:
    """``directory/dlsched-<instance>``, made (OSError when refused)."""
    parent = directory / f"dlsched-{instance}"
    parent.mkdir(exist_ok=True)
    return parent


def probe_cgroups(instance: str) -> tuple[CgroupParents | None, str | None]:
    """Where this service can make job cgroups with memory and CPU limits, or why not."""
    mounts, own = _mounts(), _own_cgroups()
    v2 = mounts.get("cgroup2")
    if v2 is not None and "" in own:
        base = v2 / own[""].lstrip("/")
        try:
            controllers = (base / "cgroup.subtree_control").read_text().split()
        except OSError:
            controllers = []
        if {"memory", "cpu"} <= set(controllers):
            try:
                parent = _writable_parent(base, instance)
                (parent / "cgroup.subtree_control").write_text("+memory +cpu")
                return CgroupParents(2, parent, parent), None
            except OSError as exc:
                return None, f"cgroup v2 {base}: {exc.strerror}"
    if "memory" in mounts and "cpu" in mounts and "memory" in own and "cpu" in own:
        try:
            memory = _writable_parent(mounts["memory"] / own["memory"].lstrip("/"), instance)
            cpu = _writable_parent(mounts["cpu"] / own["cpu"].lstrip("/"), instance)
        except OSError as exc:
            return None, f"cgroup v1 memory/cpu: {exc.strerror}"
        return CgroupParents(1, memory, cpu), None
    if v2 is not None:
        return None, f"cgroup v2 at {v2} without the memory and cpu controllers delegated"
    return None, "no cgroup v2 nor cgroup v1 memory and cpu hierarchies mounted"


def probe_namespaces() -> str | None:
    """None when ``unshare`` can give a job its own namespaces here, else why not."""
    if shutil.which("unshare") is None:
        return "no unshare program"
    try:
        done = subprocess.run(
            ["unshare", *NAMESPACE_FLAGS, "true"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare: {exc}"
    if done.returncode != 0:
        return f"unshare refused: {done.stderr.strip() or done.returncode}"
    return None


def probe(instance: str) -> Confinement:
    """What confines this service's sandboxed jobs (see the module docstring)."""
    ns_off = probe_namespaces()
    cgroups, cg_off = probe_cgroups(instance)
    return Confinement(ns_off is None, ns_off, cgroups, cg_off)


def make_job_cgroup(parents: CgroupParents, name: str, limits: JobLimits) -> tuple[Path, ...]:
    """Make cgroup ``name`` below ``parents`` with ``limits``; the ``cgroup.procs`` files a
    process writes its pid to to join it (OSError when refused)."""
    dirs = parents.job_dirs(name)
    for d in dirs:
        d.mkdir(exist_ok=True)
    if parents.version == 2:
        if limits.memory_bytes is not None:
            (parents.memory / name / "memory.max").write_text(str(limits.memory_bytes))
            (parents.memory / name / "memory.swap.max").write_text("0")
        if limits.cpus is not None:
            quota = max(1000, round(limits.cpus * CPU_PERIOD_US))
            (parents.cpu / name / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
    else:
        if limits.memory_bytes is not None:
            (parents.memory / name / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
            swap = parents.memory / name / "memory.memsw.limit_in_bytes"
            if swap.exists():
                with contextlib.suppress(OSError):
                    swap.write_text(str(limits.memory_bytes))
        if limits.cpus is not None:
            quota = max(1000, round(limits.cpus * CPU_PERIOD_US))
            (parents.cpu / name / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (parents.cpu / name / "cpu.cfs_quota_us").write_text(str(quota))
    return tuple(d / "cgroup.procs" for d in dirs)


def remove_job_cgroup(parents: CgroupParents, name: str) -> bool:
    """Remove cgroup ``name`` (True when gone; False while processes remain in it)."""
    gone = True
    for d in parents.job_dirs(name):
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass
        except OSError:
            gone = False
    return gone
