"""The pool of sandbox users that local jobs run as, and which tenant holds which user.

``make sandbox-users`` creates the pool: system users ``dlsched-sb0`` .. ``dlsched-sb7`` (no
home, no login shell). A service running as root with ``--sandbox users`` (or ``auto``, which
picks it when it can) runs every job as one of them: each tenant with a running job holds one
user for all its running jobs, two tenants never hold the same one, and a user is given back
when its tenant's last job has exited. Given back, its files are handed back to the service's
user and its processes are killed, so the next tenant to get it can neither read the old
tenant's files nor reach its processes.

One service per machine uses the pool: it holds an exclusive lock (:data:`LOCK_PATH`) while it
runs, and another one asking for it is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from dlsched.backends.procfs import PROC

POOL_PREFIX = "dlsched-sb"
"""Names of the pool's users: this prefix and a number."""
LOCK_PATH = Path("/run/lock/dlsched-sandbox.lock")
"""The lock the service using the pool holds."""
SANDBOX_MODES = ("auto", "users", "none")


class SandboxError(ValueError):
    """The sandbox cannot be set up as asked (one line, for the operator)."""


@dataclass(frozen=True, slots=True)
class SandboxUser:
    """One user of the pool."""

    name: str
    uid: int
    gid: int


def pool_users(prefix: str = POOL_PREFIX) -> list[SandboxUser]:
    """The pool's users on this machine, by number (empty: no pool)."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)")
    found = []
    for entry in pwd.getpwall():
        match = pattern.fullmatch(entry.pw_name)
        if match and entry.pw_uid != 0:
            found.append(
                (int(match.group(1)), SandboxUser(entry.pw_name, entry.pw_uid, entry.pw_gid))
            )
    return [user for _, user in sorted(found)]


def resolve_mode(
    mode: str, multi_tenant: bool, prefix: str = POOL_PREFIX
) -> tuple[str, str | None]:
    """The sandbox mode to run with (``users`` or ``none``) for ``--sandbox mode``, and a
    one-line warning for the operator (or None). ``auto`` is ``users`` when running as root
    with a pool, else ``none`` with a warning; SandboxError when ``users`` cannot be had, or
    when ``auto`` would run a ``multi_tenant`` service's jobs as root (only an explicit
    ``none`` allows that). ``prefix`` names the pool's users."""
    if mode not in SANDBOX_MODES:
        raise SandboxError(f"--sandbox {mode!r}: expected one of {', '.join(SANDBOX_MODES)}")
    if mode == "none":
        return "none", None
    root = os.geteuid() == 0
    pool = bool(pool_users(prefix))
    if root and pool:
        return "users", None
    if not root:
        why = "the service is not running as root"
    else:
        why = f"no sandbox users ({prefix}N; run: make sandbox-users)"
    if mode == "users":
        raise SandboxError(f"--sandbox users: {why}")
    if root and multi_tenant:
        raise SandboxError(
            f"refusing to run tenants' jobs as root: {why}; "
            "or pass --sandbox none to run them as root anyway"
        )
    return "none", f"warning: jobs run as this service's user, not sandboxed: {why}"


class SandboxPool:
    """Which tenant holds which user, with each request's tenant (see the module docstring).
    A tenant is a key (``""``: the admin or a service without tenants)."""

    def __init__(self, users: list[SandboxUser]) -> None:
        self.users = list(users)
        self._held: dict[str, SandboxUser] = {}
        self._requests: dict[str, str] = {}
        self._lock: IO[str] | None = None

    def lock(self, path: Path = LOCK_PATH) -> None:
        """Take the machine's pool lock; SandboxError if another process holds it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held while the pool lives)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            handle.close()
            raise SandboxError(
                f"the sandbox users are in use by another service on this machine (pid {holder})"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._lock = handle

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def by_uid(self, uid: int) -> SandboxUser | None:
        return next((u for u in self.users if u.uid == uid), None)

    def acquire(self, request_id: str, tenant: str) -> SandboxUser | None:
        """The user ``tenant``'s request runs as: the one the tenant holds, else a free one
        (None: every user is held by another tenant)."""
        user = self._held.get(tenant)
        if user is None:
            taken = set(self._held.values())
            user = next((u for u in self.users if u not in taken), None)
            if user is None:
                return None
            self._held[tenant] = user
        self._requests[request_id] = tenant
        return user

    def adopt(self, request_id: str, tenant: str, user: SandboxUser) -> bool:
        """Record that ``request_id`` of ``tenant`` runs as ``user`` (after a restart); False
        when another tenant already holds ``user`` (the request is then not adopted)."""
        holder = next((t for t, u in self._held.items() if u == user), None)
        if holder is not None and holder != tenant:
            return False
        if tenant in self._held and self._held[tenant] != user:
            return False
        self._held[tenant] = user
        self._requests[request_id] = tenant
        return True

    def release(self, request_id: str) -> SandboxUser | None:
        """Drop ``request_id``; the user its tenant gives back when that was the tenant's last
        request (the caller reclaims it), else None."""
        tenant = self._requests.pop(request_id, None)
        if tenant is None or tenant in self._requests.values():
            return None
        return self._held.pop(tenant, None)

    def held(self) -> frozenset[int]:
        """The uids held now."""
        return frozenset(u.uid for u in self._held.values())


def give_tree(path: Path, uid: int, gid: int) -> None:
    """Make ``path`` and everything under it owned by ``uid:gid``, never following a
    symbolic link (a job may plant links, and race: :func:`os.fwalk` holds each directory
    open, so a directory swapped for a link is not entered). A missing path is skipped."""
    try:
        os.chown(path, uid, gid, follow_symlinks=False)
    except FileNotFoundError:
        return
    for _, dirs, files, fd in os.fwalk(path, follow_symlinks=False):
        for name in (*dirs, *files):
            with contextlib.suppress(FileNotFoundError):
                os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)


def kill_user_processes(uid: int) -> int:
    """SIGKILL every process whose real or effective uid is ``uid``; how many there were.
    Used when a sandbox user is given back: a job's process that left its process group must
    not outlive its tenant's hold on the user."""
    killed = 0
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        line = next((x for x in status.splitlines() if x.startswith("Uid:")), "")
        uids = [int(v) for v in line.split()[1:3]]
        if uid in uids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
    return killed
