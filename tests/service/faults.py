"""A Jepsen-style harness: two real services (``dlsched serve`` subprocesses, local back end)
on one store, killed with SIGKILL and paused (SIGSTOP, then SIGCONT: a stand-in for a network
partition longer than the lease) at random points while their jobs run.

Every job is a shell script that creates its marker file with O_EXCL (``set -C``); a second
run of the same job finds the marker and leaves a ``.dup`` file beside it. Each run also writes
its service instance, GPUs and start/end times, from which GPU double-booking is checked.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dlsched.service.store.database import Store
from dlsched.service.store.records import COMPLETED, FINAL, NewJob
from tests.service.service_proc import kill_jobs_of

LEASE_S = 2.0
JOB = r"""
m="$1"; set -C
if ! : > "$m/$DLSCHED_JOB_ID" 2>/dev/null; then : > "$m/$DLSCHED_JOB_ID.dup.$$"; fi
set +C
r="$m/run.$DLSCHED_JOB_ID.$$"
echo "$DLSCHED_INSTANCE $DLSCHED_GPU_IDS $(date +%s.%N)" > "$r.start"
sleep "$2"
date +%s.%N > "$r.end"
"""


class ServeProc:
    """One ``dlsched serve`` in work directory ``work`` (its id is kept there)."""

    def __init__(self, db: str, work: Path, env: dict[str, str]) -> None:
        self.db, self.work, self.env = db, work, env
        self.log = work.with_name(work.name + ".log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused_until = 0.0
        self._log_from = 0

    def start(self) -> None:
        self._log_from = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "a") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "dlsched.cli.main",
                    "serve",
                    "--db",
                    self.db,
                    "--work-dir",
                    str(self.work),
                    "--token-file",
                    str(self.work.with_name(self.work.name + ".token")),
                    "--port",
                    "0",
                    "--cluster",
                    "1x4",
                    "--lease",
                    str(LEASE_S),
                    "--round",
                    "0.5",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
            )

    @property
    def ready(self) -> bool:
        """Running and serving (its start-up line is in its log since its last start)."""
        if not self.running:
            return False
        with open(self.log, "rb") as log:
            log.seek(self._log_from)
            return b"dlsched service at " in log.read()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.running:
            assert self.proc is not None
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        self.proc.wait()

    @property
    def service_id(self) -> str | None:
        path = self.work / "service-id"
        return path.read_text().strip() if path.exists() else None


@dataclass
class RoundResult:
    """What one round saw: markers per job, duplicate runs, GPU overlaps, faults injected."""

    jobs: int
    markers: dict[str, int] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)
    overlaps: list[str] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)
    faults: list[str] = field(default_factory=list)
    takeovers: int = 0
    starts: int = 0
    """Service processes started (two, plus one per restart after a kill or a fence)."""

    @property
    def exactly_once(self) -> bool:
        return (
            not self.duplicates
            and all(n == 1 for n in self.markers.values())
            and len(self.markers) == self.jobs
            and all(s == COMPLETED for s in self.states.values())
        )


def _overlaps(marks: Path) -> list[str]:
    """GPU intervals of runs of one service instance that overlap."""
    runs: list[tuple[str, str, int, float, float]] = []
    now = time.time()
    for start in marks.glob("run.*.start"):
        instance, gpus, began = start.read_text().split()
        end_file = start.with_suffix(".end")
        ended = float(end_file.read_text()) if end_file.exists() else now
        for part in gpus.split(";"):
            node, ids = part.split(":")
            for g in ids.split(","):
                runs.append((f"{instance}/{node}", start.name, int(g), float(began), ended))
    found = []
    for i, a in enumerate(runs):
        for b in runs[i + 1 :]:
            if a[0] == b[0] and a[2] == b[2] and a[3] < b[4] and b[3] < a[4]:
                found.append(f"{a[0]} GPU {a[2]}: {a[1]} and {b[1]}")
    return found


def run_round(
    db: str,
    served: str,
    root: Path,
    rng: random.Random,
    env: dict[str, str],
    jobs: int = 10,
    fault_s: float = 15.0,
    timeout_s: float = 120.0,
    kill_db: Callable[[float], None] | None = None,
    db_kill_p: float = 0.03,
) -> RoundResult:
    """One round: two services on ``served`` (the store the test opens as ``db``), ``jobs``
    jobs submitted to the store, faults for ``fault_s`` seconds, then no more faults until
    every job is final (or ``timeout_s``). ``kill_db``, if given, is also a fault: it kills the
    database server with SIGKILL and restarts it after the seconds it is given."""
    root.mkdir(parents=True)
    marks = root / "marks"
    marks.mkdir()
    script = root / "job.sh"
    script.write_text(JOB)
    services = [ServeProc(served, root / f"svc{i}", env) for i in range(2)]
    result = RoundResult(jobs)
    store = Store(db)
    try:
        for s in services:
            s.start()
        result.starts = len(services)
        seqs = []
        for i in range(jobs):
            duration = round(rng.uniform(1.0, 5.0), 2)
            job = NewJob(
                f"f{i}", "u", rng.choice([1, 2]), ("sh", str(script), str(marks), str(duration))
            )
            seqs.append(store.submit(job, time.time()).seq)
        began = time.monotonic()
        while time.monotonic() - began < timeout_s:
            now = time.monotonic()
            for s in services:
                if s.paused_until and now >= s.paused_until:
                    s.signal(signal.SIGCONT)
                    s.paused_until = 0.0
                if not s.running and not s.paused_until:
                    s.start()  # killed, or fenced and stopped: start it again
                    result.starts += 1
            ready = all(s.ready for s in services)
            if kill_db is not None and ready and now - began < fault_s and rng.random() < db_kill_p:
                down = rng.uniform(0.0, 2 * LEASE_S)
                kill_db(down)
                result.faults.append(f"{now - began:.1f}s kill -9 the database for {down:.1f}s")
            elif now - began < fault_s and rng.random() < 0.12:
                s = rng.choice(services)
                if s.ready and not s.paused_until:
                    if rng.random() < 0.5:
                        s.signal(signal.SIGKILL)
                        assert s.proc is not None
                        s.proc.wait()
                        result.faults.append(f"{now - began:.1f}s kill -9 {s.work.name}")
                    else:
                        pause = rng.uniform(0.5, 4 * LEASE_S)
                        s.signal(signal.SIGSTOP)
                        s.paused_until = now + pause
                        result.faults.append(f"{now - began:.1f}s pause {s.work.name} {pause:.1f}s")
            try:
                rows = [store.get(seq) for seq in seqs]
            except Exception:  # the database is restarting: look again at the next turn
                rows = [None]
            if now - began >= fault_s and all(r is not None and r.state in FINAL for r in rows):
                break
            time.sleep(0.2)
        for seq in seqs:
            row = store.get(seq)
            result.states[f"j{seq}"] = row.state if row is not None else "MISSING"
            result.markers[f"j{seq}"] = int((marks / f"j{seq}").exists())
            result.takeovers += sum(k == "orphan_check" for _, k, _ in store.events(seq))
        result.duplicates = sorted(p.name for p in marks.glob("*.dup.*"))
        result.overlaps = _overlaps(marks)
    finally:
        store.close()
        for s in services:
            s.stop()
        for s in services:
            if s.service_id is not None:
                kill_jobs_of(s.service_id)
    return result


def pg_env(password: str) -> dict[str, str]:
    """The services' environment: the PostgreSQL password never on their command line."""
    return {**os.environ, "PYTHONUNBUFFERED": "1", "DLSCHED_DB_PASSWORD": password}
