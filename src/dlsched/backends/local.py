"""Job processes on this machine, with a declared (possibly fake) GPU inventory.

Each request runs as its own session and process group, under a small ``sh`` wrapper that
survives SIGTERM (its trap is reset to the default in the job on ``exec``, so the job sees the
signal normally), waits for the job, and writes the job's exit code to
``<root>/exits/<request_id>`` (temp file, then rename). The exit code therefore survives a
restart of the driver, which can no longer ``wait`` for processes it did not start. Signals go
to the whole group, so they reach the job's children too.

A job of request ``r`` for job ``j`` gets (see the service/workload contract):
``CUDA_VISIBLE_DEVICES`` (its GPU indices on its first node), ``DLSCHED_JOB_ID``,
``DLSCHED_WORKDIR`` = ``<root>/jobs/<j>`` (also its cwd), ``DLSCHED_CHECKPOINT_DIR`` (kept
across attempts, so a restarted job resumes), ``DLSCHED_STATUS_FILE``, ``DLSCHED_NUM_GPUS``,
``DLSCHED_BATCH_SIZE`` (when given), ``DLSCHED_NODE``, and ``DLSCHED_GPU_IDS`` (every node's
GPUs, ``node:0,1;node2:0``, for jobs spanning nodes). stdout and stderr are appended to
``log.txt`` in the working directory. Every process also carries ``DLSCHED_REQUEST_ID`` and
``DLSCHED_INSTANCE`` (the driver's identity), which :meth:`LocalBackend.recover` uses to find
the processes of an earlier run of the same driver in ``/proc``. Nothing else of the
service's environment reaches the job but the allow-list of :mod:`dlsched.backends.job_env`
(``HOME`` is the working directory).

Sandboxed (``sandbox`` given: a service running as root with ``--sandbox users``), the job
runs as its tenant's user of the pool (:mod:`dlsched.backends.sandbox`), with
``no_new_privs`` and no capabilities, in its working directory (mode 0700, owned by that user
while the job runs, handed back to the service's user when it exits; ``<root>`` and
``<root>/jobs`` are then 0711, searchable but not listable). The wrapper stays the service's
user, so it can write the exit file the job cannot reach. Where the kernel allows
(:mod:`dlsched.backends.confinement`) the job also gets its own PID, mount, IPC and UTS
namespaces (a fresh ``/proc``, private ``/tmp`` and ``/dev/shm``) and its own cgroup with the
back end's memory and CPU limits; the first line the back end writes to the job's log says
which of those apply and why any does not.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from dlsched.backends.base import (
    SANDBOX_BUSY,
    AttemptCheck,
    AttemptFate,
    BackendError,
    KnownRequest,
    LaunchRequest,
    Observation,
    PriorAttempt,
    ProcState,
)
from dlsched.backends.confinement import (
    NAMESPACE_FLAGS,
    Confinement,
    JobLimits,
    make_job_cgroup,
    probe,
    remove_job_cgroup,
)
from dlsched.backends.job_env import job_environment
from dlsched.backends.jobfiles import (
    CHECKPOINT_NAME,
    INSTANCE_VAR,
    LOG_NAME,
    REQUEST_VAR,
    STATUS_NAME,
    FileBackedBackend,
    open_log,
    private_dir,
)
from dlsched.backends.procfs import is_alive, marked_processes, read_stat
from dlsched.backends.sandbox import (
    SandboxError,
    SandboxPool,
    SandboxUser,
    give_tree,
    kill_user_processes,
)

# $1: exit-code file; $2: how many cgroup.procs files follow, which the wrapper joins before
# starting anything (so every process of the job is in the cgroup); the rest: the job's
# command. The TERM/INT trap only keeps the wrapper alive to record the code; the job itself
# gets the default dispositions back on exec. umask 077 only after the job: the exit file is
# private (0600), the job's own files are not the wrapper's to decide.
_WRAPPER = (
    "trap : TERM INT; f=$1; n=$2; shift 2; rc=0; "
    'while [ "$n" -gt 0 ]; do if [ "$rc" = 0 ]; then echo $$ > "$1" || rc=125; fi; '
    "shift; n=$((n-1)); done; "
    'if [ "$rc" = 0 ]; then "$@"; rc=$?; fi; umask 077; '
    'printf "%s\\n" "$rc" > "$f.tmp" && mv "$f.tmp" "$f"; exit "$rc"'
)
# Run by unshare as the new namespaces' first process, still the service's user: private
# /tmp and /dev/shm (files a job leaves there die with it) unless $1 is 0 (the jobs' root is
# below one of them, which a fresh mount would hide), then the rest ("$@").
_NS_SETUP = (
    'if [ "$1" = 1 ]; then '
    "mount -t tmpfs -o mode=1777,nosuid,nodev dlsched-tmp /tmp || exit 126; "
    "if [ -d /dev/shm ]; then mount -t tmpfs -o mode=1777,nosuid,nodev dlsched-shm /dev/shm "
    '|| exit 126; fi; fi; shift; exec "$@"'
)
SHARED_TMP = (Path("/tmp"), Path("/dev/shm"))
# PID 1 of the job's namespace, as the job's user: the kernel gives a namespace's PID 1 no
# default signal actions, so it traps TERM/INT and runs the job as its child, which gets the
# group's signals with default dispositions; its exit status is the job's.
_NS_INIT = 'trap : TERM INT; "$@"'


def drop_privileges(user: SandboxUser) -> list[str]:
    """The ``setpriv`` prefix that runs a command as ``user``: its uid and gid only (no
    supplementary groups), no capabilities (inheritable or bounding), and ``no_new_privs`` (a
    set-uid program cannot give them back)."""
    return [
        "setpriv",
        f"--reuid={user.uid}",
        f"--regid={user.gid}",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def searchable_problem(path: Path) -> str | None:
    """Why another user cannot reach ``path`` (a parent of it not searchable by others), or
    None."""
    for parent in [path, *path.parents]:
        try:
            mode = parent.stat().st_mode
        except OSError as exc:
            return f"{parent}: {exc.strerror}"
        if not mode & 0o001:
            return f"{parent} (mode {mode & 0o777:o}) is not searchable by other users"
    return None


@dataclass(slots=True)
class LocalProc:
    """One request's process group. ``popen`` is None for a process adopted after a driver
    restart (not our child); ``exit_code``/``exited`` are set once it is gone."""

    request: LaunchRequest
    pid: int | None
    start_time: float | None
    popen: subprocess.Popen[bytes] | None = None
    kill_at: float | None = None
    exited: bool = False
    exit_code: int | None = None


class LocalBackend(FileBackedBackend):
    """Runs requests as local process groups under ``root`` (see the module docstring).
    ``instance`` distinguishes this driver's processes from any other's on the machine."""

    name = "local"

    def __init__(
        self,
        root: Path,
        instance: str,
        clock: Callable[[], float] = time.time,
        *,
        sandbox: SandboxPool | None = None,
        limits: JobLimits | None = None,
        extra_env: tuple[str, ...] = (),
        confinement: Confinement | None = None,
    ) -> None:
        """``sandbox``: run jobs as the pool's users (the caller is root; the pool is locked
        here, SandboxError when another service holds it or ``root`` cannot be reached by
        other users); ``limits``: each sandboxed job's cgroup limits; ``extra_env``: names
        of the service's variables jobs get besides the allow-list; ``confinement``: what
        the kernel allows (None: probed here when sandboxed)."""
        self.root = Path(root)
        self.instance = instance
        self.clock = clock
        self.procs: dict[str, LocalProc] = {}
        self._errors: list[BackendError] = []
        self.sandbox = sandbox
        self.limits = limits or JobLimits()
        self.extra_env = extra_env
        self._make_dirs()
        self.confinement = confinement
        if sandbox is not None:
            self._open_sandbox(sandbox)

    def _open_sandbox(self, sandbox: SandboxPool) -> None:
        for directory in (self.root, self.root / "jobs"):
            directory.chmod(0o711)
        problem = searchable_problem(self.root / "jobs")
        if problem is not None:
            raise SandboxError(
                f"--sandbox users: {problem}, so sandboxed jobs cannot reach their "
                "directories; choose another --work-dir"
            )
        sandbox.lock()
        if self.confinement is None:
            self.confinement = probe(self.instance)

    # ---- paths ---------------------------------------------------------------------------
    # ---- the interface -------------------------------------------------------------------
    def launch(self, request: LaunchRequest) -> None:
        rid = request.request_id
        if rid in self.procs:
            return
        found, code = self._read_exit(rid)
        if found:
            self.procs[rid] = LocalProc(request, None, None, exited=True, exit_code=code)
            return
        workdir = self.workdir(request.job_id)
        user: SandboxUser | None = None
        if self.sandbox is not None:
            user = self.sandbox.acquire(rid, request.tenant or "")
            if user is None:
                message = "every sandbox user is held by another tenant's job"
                self._errors.append(BackendError(rid, SANDBOX_BUSY, message, self.clock()))
                self.procs[rid] = LocalProc(request, None, None, exited=True)
                return
        try:
            private_dir(workdir / CHECKPOINT_NAME)
            with open(open_log(workdir / LOG_NAME), "ab") as log:
                prefix: list[str] = []
                joins: tuple[Path, ...] = ()
                if user is not None:
                    prefix, joins = self._confine(rid, user, workdir, log)
                popen = subprocess.Popen(
                    [
                        "sh",
                        "-c",
                        _WRAPPER,
                        "dlsched-job",
                        str(self.exit_file(rid)),
                        str(len(joins)),
                        *map(str, joins),
                        *prefix,
                        *request.command,
                    ],
                    cwd=workdir,
                    env=self._environment(request, workdir),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except (OSError, ValueError) as exc:
            # ValueError: an argument or variable a process cannot take (a NUL byte, invalid
            # Unicode); the API refuses those, a store written by an older version may not.
            self._errors.append(BackendError(rid, "launch_failed", str(exc), self.clock()))
            self.procs[rid] = LocalProc(request, None, None, exited=True)
            self._reclaim(rid, request)
            return
        st = read_stat(popen.pid)
        self.procs[rid] = LocalProc(request, popen.pid, st.start_time if st else None, popen=popen)

    def _confine(
        self, rid: str, user: SandboxUser, workdir: Path, log: IO[bytes]
    ) -> tuple[list[str], tuple[Path, ...]]:
        """Hand ``workdir`` to ``user``, make the request's cgroup, say in ``log`` what
        confines the job; the command prefix that confines it and the cgroup files the
        wrapper joins."""
        conf = self.confinement or Confinement(False, "not probed")
        joins: tuple[Path, ...] = ()
        cgroup_note = ""
        if conf.cgroups is not None:
            try:
                joins = make_job_cgroup(conf.cgroups, rid, self.limits)
            except OSError as exc:
                cgroup_note = f" (its cgroup could not be made: {exc.strerror}; not limited)"
        limits = (
            f"memory {self.limits.memory_bytes or 'unlimited'} bytes, "
            f"cpus {self.limits.cpus or 'unlimited'}"
        )
        root = self.root.resolve()
        private_tmp = conf.namespaces and not any(root.is_relative_to(t) for t in SHARED_TMP)
        tmp_note = ""
        if conf.namespaces and not private_tmp:
            tmp_note = " (/tmp and /dev/shm shared: the jobs' root is below one of them)"
        log.write(
            f"[dlsched] request {rid}: user {user.name}; {conf.describe()}{tmp_note}"
            f"{cgroup_note}; {limits}\n".encode()
        )
        log.flush()
        give_tree(workdir, user.uid, user.gid)
        workdir.chmod(0o700)
        prefix = drop_privileges(user)
        if conf.namespaces:
            prefix = [
                "unshare",
                *NAMESPACE_FLAGS,
                "sh",
                "-c",
                _NS_SETUP,
                "dlsched-ns",
                "1" if private_tmp else "0",
                *prefix,
                "sh",
                "-c",
                _NS_INIT,
                "dlsched-init",
            ]
        return prefix, joins

    def _reclaim(self, rid: str, request: LaunchRequest) -> None:
        """After request ``rid`` exited (or failed to start): its cgroup removed, its working
        directory handed back to the service's user, and its sandbox user given back (its
        processes killed) when it was its tenant's last request."""
        if self.sandbox is None:
            return
        conf = self.confinement
        if conf is not None and conf.cgroups is not None:
            remove_job_cgroup(conf.cgroups, rid)
        user = self.sandbox.release(rid)
        if user is not None:
            kill_user_processes(user.uid)
        with contextlib.suppress(OSError):
            give_tree(self.workdir(request.job_id), os.getuid(), os.getgid())

    def _environment(self, request: LaunchRequest, workdir: Path) -> dict[str, str]:
        """The job's environment (see the module docstring)."""
        nodes = list(request.gpu_ids.items())
        first_node, first_gpus = nodes[0] if nodes else ("", ())
        env = job_environment(
            os.environ,
            str(workdir),
            {
                "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in first_gpus),
                "DLSCHED_JOB_ID": request.job_id,
                "DLSCHED_WORKDIR": str(workdir),
                "DLSCHED_CHECKPOINT_DIR": str(workdir / CHECKPOINT_NAME),
                "DLSCHED_STATUS_FILE": str(workdir / STATUS_NAME),
                "DLSCHED_NUM_GPUS": str(request.num_gpus),
                "DLSCHED_NODE": first_node,
                "DLSCHED_GPU_IDS": ";".join(
                    f"{n}:{','.join(str(g) for g in gs)}" for n, gs in nodes
                ),
                INSTANCE_VAR: self.instance,
                REQUEST_VAR: request.request_id,
            },
            self.extra_env,
        )
        if request.batch_size is not None:
            env["DLSCHED_BATCH_SIZE"] = str(request.batch_size)
        env.update(request.env)
        return env

    def terminate(self, request_id: str, grace_s: float) -> None:
        proc = self.procs.get(request_id)
        if proc is None or proc.exited or proc.kill_at is not None or proc.pid is None:
            return
        proc.kill_at = self.clock() + grace_s
        self._signal(proc, signal.SIGTERM)

    def _signal(self, proc: LocalProc, sig: signal.Signals) -> None:
        assert proc.pid is not None
        if proc.popen is None and not is_alive(proc.pid, proc.start_time):
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)

    def observe(self) -> dict[str, Observation]:
        now = self.clock()
        out: dict[str, Observation] = {}
        for rid, proc in self.procs.items():
            if not proc.exited:
                self._refresh(rid, proc, now)
            if proc.exited:
                out[rid] = Observation(
                    rid, ProcState.EXITED, proc.exit_code, proc.pid, proc.start_time
                )
            else:
                out[rid] = Observation(
                    rid,
                    ProcState.RUNNING,
                    None,
                    proc.pid,
                    proc.start_time,
                    self._status(proc.request.job_id),
                )
        return out

    def _refresh(self, rid: str, proc: LocalProc, now: float) -> None:
        assert proc.pid is not None
        if proc.popen is not None:
            alive = proc.popen.poll() is None
        else:
            alive = is_alive(proc.pid, proc.start_time)
        if alive:
            if proc.kill_at is not None and now >= proc.kill_at:
                self._signal(proc, signal.SIGKILL)
            return
        found, code = self._read_exit(rid)
        proc.exited = True
        proc.exit_code = code if found else None
        if proc.popen is not None:
            # The wrapper is gone; kill stragglers the job may have left in its group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        self._reclaim(rid, proc.request)

    def forget(self, request_id: str) -> None:
        proc = self.procs.get(request_id)
        if proc is not None and proc.exited:
            del self.procs[request_id]

    def errors(self) -> list[BackendError]:
        out, self._errors = self._errors, []
        return out

    def recover(self, known: Mapping[str, KnownRequest]) -> None:
        """Adopt the live process groups of ``known`` requests (found by their environment
        marks, checked against the recorded pid and start time when given), record the exit
        code of those that ended while the driver was down, and SIGKILL every other process
        group this driver's instance started (orphans)."""
        groups = marked_processes(INSTANCE_VAR, self.instance, REQUEST_VAR)
        for rid, stats in groups.items():
            leader = next((s for s in stats if s.pid == s.pgid), None)
            pgid = leader.pgid if leader else stats[0].pgid
            entry = known.get(rid)
            if entry is None or rid in self.procs:
                if rid not in self.procs:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pgid, signal.SIGKILL)
                continue
            if not self._adopt_user(rid, entry.request):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                continue
            start = leader.start_time if leader else None
            self.procs[rid] = LocalProc(entry.request, pgid, start)
        for rid, entry in known.items():
            if rid in self.procs:
                continue
            found, code = self._read_exit(rid)
            if found:
                self.procs[rid] = LocalProc(entry.request, None, None, exited=True, exit_code=code)
        self._sweep_sandbox()

    def _adopt_user(self, rid: str, request: LaunchRequest) -> bool:
        """Give an adopted request back its sandbox user (the owner of its working
        directory); False when that user is another tenant's now (the request is killed)."""
        if self.sandbox is None:
            return True
        try:
            owner = self.workdir(request.job_id).stat().st_uid
        except OSError:
            return False
        user = self.sandbox.by_uid(owner)
        return user is not None and self.sandbox.adopt(rid, request.tenant or "", user)

    def _sweep_sandbox(self) -> None:
        """After recovery: kill the processes of every sandbox user no adopted request holds
        (orphans of an earlier run: the pool lock says no other service uses it) and hand
        the working directories they own back to the service's user."""
        if self.sandbox is None:
            return
        held = self.sandbox.held()
        free = {u.uid for u in self.sandbox.users} - held
        for uid in free:
            kill_user_processes(uid)
        for workdir in (self.root / "jobs").iterdir():
            with contextlib.suppress(OSError):
                if workdir.lstat().st_uid in free:
                    give_tree(workdir, os.getuid(), os.getgid())

    def probe(self, attempt: PriorAttempt) -> AttemptCheck:
        """Alive while its recorded process (pid and start time, so a recycled pid is not
        taken for it) or any process marked with its owner's instance and its request id
        lives; else exited with the code its wrapper wrote under the owner's home (read after
        looking for the process: the wrapper writes it before it exits); else gone once its
        launch deadline has passed."""
        if attempt.pid is not None and is_alive(attempt.pid, attempt.pid_start):
            return AttemptCheck(AttemptFate.ALIVE)
        marked = marked_processes(INSTANCE_VAR, attempt.owner, REQUEST_VAR)
        if attempt.request.request_id in marked:
            return AttemptCheck(AttemptFate.ALIVE)
        return self._fate_of_stopped(attempt, self.clock())

    def close(self) -> None:
        """Reap exited children and release the sandbox pool's lock; running jobs are left
        running for a restarted driver."""
        for proc in self.procs.values():
            if proc.popen is not None:
                proc.popen.poll()
        if self.sandbox is not None:
            self.sandbox.unlock()
            conf = self.confinement
            if conf is not None and conf.cgroups is not None:
                for parent in {conf.cgroups.memory, conf.cgroups.cpu}:
                    with contextlib.suppress(OSError):
                        parent.rmdir()

    def kill_all(self) -> None:
        """SIGKILL every live process group of this back end (used by tests and shutdown)."""
        for rid, proc in self.procs.items():
            if not proc.exited and proc.pid is not None:
                self._signal(proc, signal.SIGKILL)
                if proc.popen is not None:
                    proc.popen.wait()
                    self._refresh(rid, proc, self.clock())
