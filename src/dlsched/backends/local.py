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
the processes of an earlier run of the same driver in ``/proc``.
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

from dlsched.backends.base import (
    AttemptCheck,
    AttemptFate,
    BackendError,
    KnownRequest,
    LaunchRequest,
    Observation,
    PriorAttempt,
    ProcState,
    deadline_passed,
)
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

# $1: exit-code file; the rest: the job's command. The TERM/INT trap only keeps the wrapper
# alive to record the code; the job itself gets the default dispositions back on exec.
# umask 077 only after the job: the exit file is private (0600), the job's own files are not
# the wrapper's to decide.
_WRAPPER = (
    'trap : TERM INT; f=$1; shift; "$@"; rc=$?; umask 077; '
    'printf "%s\\n" "$rc" > "$f.tmp" && mv "$f.tmp" "$f"; exit "$rc"'
)


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

    def __init__(self, root: Path, instance: str, clock: Callable[[], float] = time.time) -> None:
        self.root = Path(root)
        self.instance = instance
        self.clock = clock
        self.procs: dict[str, LocalProc] = {}
        self._errors: list[BackendError] = []
        self._make_dirs()

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
        try:
            private_dir(workdir / CHECKPOINT_NAME)
            with open(open_log(workdir / LOG_NAME), "ab") as log:
                popen = subprocess.Popen(
                    [
                        "sh",
                        "-c",
                        _WRAPPER,
                        "dlsched-job",
                        str(self.exit_file(rid)),
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
            return
        st = read_stat(popen.pid)
        self.procs[rid] = LocalProc(request, popen.pid, st.start_time if st else None, popen=popen)

    def _environment(self, request: LaunchRequest, workdir: Path) -> dict[str, str]:
        env = dict(os.environ)
        env.pop(REQUEST_VAR, None)
        nodes = list(request.gpu_ids.items())
        first_node, first_gpus = nodes[0] if nodes else ("", ())
        env.update(
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
            }
        )
        if request.batch_size is not None:
            env["DLSCHED_BATCH_SIZE"] = str(request.batch_size)
        else:
            env.pop("DLSCHED_BATCH_SIZE", None)
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
            start = leader.start_time if leader else None
            self.procs[rid] = LocalProc(entry.request, pgid, start)
        for rid, entry in known.items():
            if rid in self.procs:
                continue
            found, code = self._read_exit(rid)
            if found:
                self.procs[rid] = LocalProc(entry.request, None, None, exited=True, exit_code=code)

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
        found, code = self._read_prior_exit(attempt)
        if found:
            return AttemptCheck(AttemptFate.EXITED, code)
        if deadline_passed(attempt, self.clock()):
            return AttemptCheck(AttemptFate.GONE)
        return AttemptCheck(AttemptFate.UNKNOWN)

    def close(self) -> None:
        """Reap exited children; running jobs are left running for a restarted driver."""
        for proc in self.procs.values():
            if proc.popen is not None:
                proc.popen.poll()

    def kill_all(self) -> None:
        """SIGKILL every live process group of this back end (used by tests and shutdown)."""
        for proc in self.procs.values():
            if not proc.exited and proc.pid is not None:
                self._signal(proc, signal.SIGKILL)
                if proc.popen is not None:
                    proc.popen.wait()
