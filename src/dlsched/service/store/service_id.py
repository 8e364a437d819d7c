"""A service's identity among the services sharing one store (see
:mod:`dlsched.service.store.database`).

The id names the attempts the service owns and, through its back end, its processes (Slurm job
names, Ray namespaces, process marks), so it must stay the same across restarts for a restarted
service to adopt its jobs: it is given (``--service-id``) or kept in a file in the service's work
directory. A new service takes the store's instance id if no service ever used it (so a single
service keeps the id it always had), else a fresh random one.

One process at a time runs under a work directory: :func:`lock_work_dir` holds an exclusive lock
on ``<work_dir>/service.lock`` for the life of the service (the kernel drops it when the process
dies, kill -9 included), so a second service started in the same directory is refused instead
of taking the same id. Two processes under one id in different directories (``--service-id``
given twice) are told apart by the store: each start begins a new epoch of the id, which fences
the earlier process (:meth:`~dlsched.service.store.database.Store.begin_service`).
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
from pathlib import Path

from dlsched.backends.jobfiles import private_dir, write_private
from dlsched.service.store.database import Store

SERVICE_ID_FILE = "service-id"
LOCK_FILE = "service.lock"


class WorkDirBusy(ValueError):
    """Another running service holds the work directory (one line naming it)."""


class WorkDirLock:
    """The exclusive lock of one work directory, held until :meth:`release` (or the process's
    end)."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def lock_work_dir(work_dir: Path) -> WorkDirLock:
    """Lock ``work_dir`` (made with mode 0700 if missing) for this process; WorkDirBusy naming
    the directory and the holder's pid if another process holds it."""
    private_dir(work_dir)
    path = work_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise WorkDirBusy(
            f"--work-dir {work_dir}: another service (pid {holder}) runs in this directory; "
            "give each service its own --work-dir (or --db)"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return WorkDirLock(fd)


_VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def check_service_id(value: str, source: str = "service_id (--service-id)") -> str:
    """``value`` if it is a usable id (1-64 letters, digits, ``_`` or ``-``: it becomes part of
    back-end names); ValueError naming ``source`` otherwise."""
    if not _VALID.match(value):
        raise ValueError(
            f"{source}: {value!r} is not a service id; expected 1 to 64 letters, digits, '_' or '-'"
        )
    return value


def resolve_service_id(
    given: str | None, work_dir: Path, store: Store, now: float, lease_s: float
) -> str:
    """The id of the service whose work directory is ``work_dir``: ``given`` if set (it is then
    also written to the file, replacing another), else the one in ``work_dir/service-id``,
    else a new one (module docstring), written there and recorded in ``store`` with a lease of
    ``lease_s`` seconds. The directory is made with mode 0700, the file written with 0600."""
    path = work_dir / SERVICE_ID_FILE
    if given is not None:
        service = check_service_id(given)
    elif path.exists():
        return check_service_id(path.read_text(encoding="utf-8").strip(), str(path))
    elif store.register_service(store.instance, now, lease_s):
        service = store.instance
    else:
        service = secrets.token_hex(8)
    private_dir(work_dir)
    write_private(path, service + "\n")
    return service
