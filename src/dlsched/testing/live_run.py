"""One live run of the service, for tests and benchmarks: ``dlsched serve`` as a subprocess
(:class:`LiveService`), jobs submitted at their arrival offsets and waited for until every one is
final (:func:`run_workload`, with a hook for fault injection), and the checks that read the jobs'
own files afterwards: exit codes per attempt (:func:`exit_codes`), jobs that did not complete
exactly once (:func:`not_completed_once`), GPUs held by two jobs at once (:func:`double_booked`)
and checkpoints never resumed (:func:`checkpoints_not_resumed`).

The files are the back ends' shared layout (:mod:`dlsched.backends.jobfiles`): under the jobs
root, ``exits/<job>.<attempt>`` holds an attempt's exit code and ``jobs/<job>/`` is the job's
working directory (``log.txt``, ``gpu_log.txt``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from dlsched.backends.base import EXIT_PREEMPTED
from dlsched.service.store.records import FINAL
from dlsched.workloads.gpu_log import read_gpu_log

EXIT_CHECKPOINTED = str(EXIT_PREEMPTED)
RESUMED = re.compile(r"resumed from checkpoint at step (\d+)")
"""The line ``dlsched.workloads.train`` logs when it resumes from a checkpoint."""
_ANNOUNCED = re.compile(r"service at (http://\S+?)/?\s")


@dataclass(frozen=True, slots=True)
class Submission:
    """One job of a workload: when to submit it (seconds after the run began) and the body of
    its ``POST /jobs``."""

    offset: float
    body: dict[str, Any]


class LiveService:
    """``dlsched serve --db <out>/state.db --port 0 ARGS`` as a subprocess (output in
    ``<out>/serve.log``) and a minimal JSON client for it. The constructor returns once the
    service announced its URL; raises RuntimeError with the log if it exits or does not within
    ``start_timeout_s``. Calls send ``token`` (default: the token the service wrote beside its
    store; a service started with ``--tokens`` writes none). Use as a context manager, or call
    :meth:`stop`."""

    def __init__(
        self,
        out: Path,
        args: Sequence[str],
        env: Mapping[str, str] | None = None,
        start_timeout_s: float = 120.0,
        token: str | None = None,
    ) -> None:
        self.log = out / "serve.log"
        self.jobs_root = out / "state.db.jobs"
        cmd = [sys.executable, "-m", "dlsched.cli.main", "serve", "--db", str(out / "state.db")]
        cmd += ["--port", "0", *args]
        with open(self.log, "wb") as sink:
            self.proc = subprocess.Popen(
                cmd,
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + start_timeout_s
        while not (m := _ANNOUNCED.search(self.log.read_text())):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the service did not start:\n{self.log.read_text()}")
            time.sleep(0.1)
        self.url = m.group(1)
        # A service with a token file (serve --tokens) writes no token of its own.
        self.token = token or (out / "state.db.token").read_text().strip()

    def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, token: str | None = None
    ) -> Any:
        """One API call with ``token`` (default: :attr:`token`); the decoded JSON answer (HTTP
        errors raise)."""
        req = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {token or self.token}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)

    def stop(self, timeout_s: float = 60.0) -> None:
        """SIGINT (the service stops its loop and server and leaves jobs alone), SIGKILL if it
        has not exited after ``timeout_s``."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> LiveService:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def run_workload(
    service: LiveService,
    submissions: Sequence[Submission],
    timeout_s: float,
    on_tick: Callable[[float], None] | None = None,
    label: str = "live",
    poll_s: float = 1.0,
) -> list[dict[str, Any]]:
    """Submit ``submissions`` at their offsets, then poll ``GET /jobs`` until all are final;
    their records, in submission order. ``on_tick`` gets the seconds since the run began at
    least every ``poll_s`` while submitting and waiting (fault injection hooks in here).
    Progress lines (``label: k/n final``) go to stdout. Raises RuntimeError after
    ``timeout_s`` of waiting."""
    began = time.monotonic()

    def tick() -> None:
        if on_tick is not None:
            on_tick(time.monotonic() - began)

    ids: list[str] = []
    for sub in submissions:
        while (wait := sub.offset - (time.monotonic() - began)) > 0:
            time.sleep(min(wait, poll_s))
            tick()
        ids.append(service.call("POST", "/jobs", sub.body)["id"])
    deadline = time.monotonic() + timeout_s
    shown = -1
    while True:
        tick()
        records = {r["id"]: r for r in service.call("GET", "/jobs")}
        done = sum(records[i]["state"] in FINAL for i in ids)
        if done != shown:
            print(f"  {label}: {done}/{len(ids)} final", flush=True)
            shown = done
        if done == len(ids):
            return [records[i] for i in ids]
        if time.monotonic() > deadline:
            raise RuntimeError(f"{label}: run not finished after {timeout_s} s")
        time.sleep(poll_s)


def exit_codes(jobs_root: Path) -> dict[str, list[str]]:
    """Each job's attempts' exit codes, in attempt order (``"?"``: an empty exit file)."""
    attempts: dict[str, list[tuple[int, str]]] = {}
    for path in (jobs_root / "exits").iterdir():
        job, _, attempt = path.name.partition(".")
        if path.name.endswith(".tmp") or not attempt.isdigit():
            continue
        code = path.read_text().strip() or "?"
        attempts.setdefault(job, []).append((int(attempt), code))
    return {job: [code for _, code in sorted(found)] for job, found in attempts.items()}


def not_completed_once(
    records: Sequence[Mapping[str, Any]], codes: Mapping[str, list[str]]
) -> list[str]:
    """Jobs of ``records`` whose attempts did not exit 0 exactly once."""
    return sorted(r["id"] for r in records if codes.get(r["id"], []).count("0") != 1)


def double_booked(
    jobs_root: Path, stop_bound: Callable[[str, float], float] | None = None
) -> tuple[list[str], int]:
    """Pairs of job runs that held the same GPU of the same node at overlapping times, from the
    jobs' own ``gpu_log.txt`` (node names and ``CUDA_VISIBLE_DEVICES``), and how many runs have
    no stop line (killed). Such a run holds its GPUs until ``stop_bound(job, start)`` (the
    latest time the back end can have let it run), or for ever without ``stop_bound``."""
    held: list[tuple[str, str, str, float, float]] = []
    unstopped = 0
    for log in sorted((jobs_root / "jobs").rglob("gpu_log.txt")):
        job = log.parent.name
        for run in read_gpu_log(log):
            stop = run.stop
            if stop is None:
                unstopped += 1
                stop = float("inf") if stop_bound is None else stop_bound(job, run.start)
            held += [(run.node, g, job, run.start, stop) for g in run.gpus]
    clashes = []
    for i, (node, gpu, job, start, stop) in enumerate(held):
        for node2, gpu2, job2, start2, stop2 in held[i + 1 :]:
            if (node, gpu) == (node2, gpu2) and start < stop2 and start2 < stop:
                clashes.append(f"{node} GPU {gpu}: {job} and {job2}")
    return clashes, unstopped


def exit_time_bound(jobs_root: Path) -> Callable[[str, float], float]:
    """A ``stop_bound`` for :func:`double_booked` from the exit files: a run that started at
    ``start`` ended at the latest when the first of its job's exit files written after ``start``
    was (the back end records an attempt's exit once its process is gone); with none, never."""
    written: dict[str, list[float]] = {}
    for path in (jobs_root / "exits").iterdir():
        if not path.name.endswith(".tmp"):
            written.setdefault(path.name.partition(".")[0], []).append(path.stat().st_mtime)

    def bound(job: str, start: float) -> float:
        return min((t for t in written.get(job, []) if t >= start), default=float("inf"))

    return bound


def checkpoints_not_resumed(
    jobs_root: Path, codes: Mapping[str, list[str]]
) -> tuple[int, int, list[str]]:
    """(attempts that checkpointed and exited 75, resumptions from a checkpoint, jobs with
    fewer resumptions than checkpoints or with resumed steps going back), from the exit files
    and the jobs' ``log.txt`` (:data:`RESUMED`; a job stopped before its first step checkpoints
    step 0 and resumes from it). An attempt stopped before it could checkpoint (killed while
    still importing, or with its node) restarts from scratch legitimately: only a checkpoint
    must never be lost."""
    checkpointed = resumed = 0
    lost = []
    for job, job_codes in sorted(codes.items()):
        log = jobs_root / "jobs" / job / "log.txt"
        steps = [int(s) for s in RESUMED.findall(log.read_text() if log.exists() else "")]
        stops = job_codes.count(EXIT_CHECKPOINTED)
        checkpointed += stops
        resumed += len(steps)
        if len(steps) < stops or steps != sorted(steps):
            lost.append(f"{job}: exits {job_codes}, resumed at steps {steps}")
    return checkpointed, resumed, lost
