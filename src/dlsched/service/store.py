"""The durable job store: one SQLite file in WAL mode.

Contracts:
- Every job state change is one transaction that also appends an event to the job's log, and
  each transition checks the state (and attempt) it starts from, so a transition applied twice
  (e.g. by a driver that restarted) changes nothing the second time: a job completes once.
- The event log is append-only: triggers reject UPDATE and DELETE on it.
- The schema carries a version (``meta.schema_version``); opening a store written by a newer
  version is refused with a clear error rather than guessed at.
- ``synchronous=NORMAL`` in WAL mode: a committed transaction survives a crash of the service
  process (kill -9); the last transactions may be lost on a power failure (documented trade).

A store may be used from several threads: one connection behind a lock.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dlsched.service.records import (
    ACTIVE,
    CANCELLED,
    COMPLETED,
    FINAL,
    HOLDING,
    PENDING,
    PREEMPTING,
    RUNNING,
    STATES,
    GpuIds,
    JobRow,
    NewJob,
)

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    user TEXT NOT NULL,
    gpus INTEGER NOT NULL,
    command TEXT NOT NULL,
    batch_size INTEGER,
    expected_duration_s REAL,
    state TEXT NOT NULL,
    submit_time REAL NOT NULL,
    start_time REAL,
    run_start REAL,
    end_time REAL,
    restarts INTEGER NOT NULL DEFAULT 0,
    attempt INTEGER NOT NULL DEFAULT 0,
    gpu_ids TEXT,
    pid INTEGER,
    pid_start REAL,
    attained_gpu_s REAL NOT NULL DEFAULT 0,
    progress REAL,
    samples_per_s REAL,
    exit_code INTEGER,
    reason TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job INTEGER NOT NULL,
    time REAL NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS events_job ON events (job);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
"""

_COLUMNS = (
    "seq, name, user, gpus, command, batch_size, expected_duration_s, state, submit_time, "
    "start_time, run_start, end_time, restarts, attempt, gpu_ids, pid, pid_start, "
    "attained_gpu_s, progress, samples_per_s, exit_code, reason, cancel_requested"
)


class StoreError(RuntimeError):
    """The store file cannot be used (e.g. written by a newer schema version)."""


def _row(r: tuple[Any, ...]) -> JobRow:
    return JobRow(
        seq=r[0],
        name=r[1],
        user=r[2],
        gpus=r[3],
        command=tuple(json.loads(r[4])),
        batch_size=r[5],
        expected_duration_s=r[6],
        state=r[7],
        submit_time=r[8],
        start_time=r[9],
        run_start=r[10],
        end_time=r[11],
        restarts=r[12],
        attempt=r[13],
        gpu_ids=None if r[14] is None else json.loads(r[14]),
        pid=r[15],
        pid_start=r[16],
        attained_gpu_s=r[17],
        progress=r[18],
        samples_per_s=r[19],
        exit_code=r[20],
        reason=r[21],
        cancel_requested=bool(r[22]),
    )


class Store:
    """The job store at ``path`` (created if missing). See the module docstring."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            str(self.path), isolation_level=None, check_same_thread=False, timeout=30.0
        )
        mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"{self.path}: cannot switch the store to WAL mode (got {mode!r})")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        with self._lock:
            self._db.executescript(_SCHEMA)
        with self._tx() as db:
            found = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if found is None:
                db.execute(
                    "INSERT INTO meta VALUES ('schema_version', ?), ('instance', ?)",
                    (str(SCHEMA_VERSION), secrets.token_hex(8)),
                )
            elif int(found[0]) > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: schema version {found[0]} is newer than this dlsched "
                    f"understands ({SCHEMA_VERSION}); upgrade dlsched"
                )

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT, rolled back on error)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- metadata ------------------------------------------------------------------------
    @property
    def instance(self) -> str:
        """A random id fixed when the store was created: names this service's processes."""
        with self._lock:
            return str(
                self._db.execute("SELECT value FROM meta WHERE key='instance'").fetchone()[0]
            )

    @property
    def schema_version(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            return int(row[0])

    # ---- reads ---------------------------------------------------------------------------
    def get(self, seq: int) -> JobRow | None:
        with self._lock:
            r = self._db.execute(f"SELECT {_COLUMNS} FROM jobs WHERE seq=?", (seq,)).fetchone()
        return None if r is None else _row(r)

    def jobs(self, state: str | None = None, user: str | None = None) -> list[JobRow]:
        """Jobs in submit order, optionally only those in ``state`` and/or of ``user``."""
        where, args = [], []
        if state is not None:
            where.append("state=?")
            args.append(state)
        if user is not None:
            where.append("user=?")
            args.append(user)
        sql = f"SELECT {_COLUMNS} FROM jobs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY seq", args).fetchall()
        return [_row(r) for r in rows]

    def active(self) -> list[JobRow]:
        """Every job that is pending, running or preempting, in submit order."""
        marks = ",".join("?" * len(ACTIVE))
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE state IN ({marks}) ORDER BY seq", ACTIVE
            ).fetchall()
        return [_row(r) for r in rows]

    def snapshot(self) -> tuple[int, list[JobRow]]:
        """The active jobs and the event-log position they reflect (read atomically)."""
        with self._lock:
            return self.last_event(), self.active()

    def last_event(self) -> int:
        """The sequence number of the newest event (0 when none)."""
        with self._lock:
            return int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])

    def changed_since(self, event: int) -> tuple[int, list[JobRow]]:
        """The jobs with an event after position ``event`` (every state change appends one,
        so the event log is the change feed), and the newest position. Read atomically."""
        with self._lock:
            last = self.last_event()
            if last <= event:
                return last, []
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE seq IN "
                "(SELECT DISTINCT job FROM events WHERE seq > ? AND seq <= ?) ORDER BY seq",
                (event, last),
            ).fetchall()
        return last, [_row(r) for r in rows]

    def holding(self) -> list[JobRow]:
        """Every job that holds GPUs (running or preempting), in submit order."""
        marks = ",".join("?" * len(HOLDING))
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE state IN ({marks}) ORDER BY seq", HOLDING
            ).fetchall()
        return [_row(r) for r in rows]

    def counts(self) -> dict[str, int]:
        """Jobs per state (every state present, zero when none)."""
        with self._lock:
            rows = self._db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()
        out = dict.fromkeys(STATES, 0)
        out.update({s: n for s, n in rows})
        return out

    def finished_durations(self) -> list[tuple[str, str, float]]:
        """(name, user, end − first start) of every completed job."""
        with self._lock:
            rows = self._db.execute(
                "SELECT name, user, end_time - start_time FROM jobs WHERE state=?", (COMPLETED,)
            ).fetchall()
        return [(n, u, float(d)) for n, u, d in rows]

    def events(self, seq: int) -> list[tuple[float, str, dict[str, Any]]]:
        """The job's event log in order: (time, kind, detail)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT time, kind, detail FROM events WHERE job=? ORDER BY seq", (seq,)
            ).fetchall()
        return [(t, k, json.loads(d) if d else {}) for t, k, d in rows]

    # ---- transitions ---------------------------------------------------------------------
    @staticmethod
    def _event(
        db: sqlite3.Connection, seq: int, now: float, kind: str, detail: dict[str, Any]
    ) -> None:
        db.execute(
            "INSERT INTO events (job, time, kind, detail) VALUES (?, ?, ?, ?)",
            (seq, now, kind, json.dumps(detail, sort_keys=True)),
        )

    def submit(self, job: NewJob, now: float) -> JobRow:
        """Store a new PENDING job (one transaction, with its ``submitted`` event)."""
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO jobs (name, user, gpus, command, batch_size, expected_duration_s, "
                "state, submit_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job.name,
                    job.user,
                    job.gpus,
                    json.dumps(list(job.command)),
                    job.batch_size,
                    job.expected_duration_s,
                    PENDING,
                    now,
                ),
            )
            seq = cur.lastrowid
            assert seq is not None
            self._event(db, seq, now, "submitted", {"gpus": job.gpus, "user": job.user})
        row = self.get(seq)
        assert row is not None
        return row

    def mark_started(self, seq: int, gpu_ids: GpuIds, now: float) -> JobRow | None:
        """PENDING → RUNNING on ``gpu_ids`` with a new attempt; None if not pending."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE jobs SET state=?, attempt=attempt+1, run_start=?, "
                "start_time=COALESCE(start_time, ?), gpu_ids=?, pid=NULL, pid_start=NULL, "
                "exit_code=NULL WHERE seq=? AND state=?",
                (RUNNING, now, now, json.dumps(gpu_ids), seq, PENDING),
            )
            if cur.rowcount != 1:
                return None
            attempt = db.execute("SELECT attempt FROM jobs WHERE seq=?", (seq,)).fetchone()[0]
            self._event(db, seq, now, "started", {"attempt": attempt, "gpu_ids": gpu_ids})
        return self.get(seq)

    def mark_launched(self, seq: int, attempt: int, pid: int, pid_start: float | None) -> None:
        """Record the process of the current attempt (for adoption after a restart)."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE jobs SET pid=?, pid_start=? WHERE seq=? AND attempt=? AND pid IS NULL",
                (pid, pid_start, seq, attempt),
            )
            if cur.rowcount == 1:
                self._event(db, seq, pid_start or 0.0, "launched", {"pid": pid, "attempt": attempt})

    def mark_preempting(self, seq: int, attempt: int, now: float) -> bool:
        """RUNNING → PREEMPTING (the back end is asked to checkpoint and stop the job)."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE jobs SET state=? WHERE seq=? AND attempt=? AND state=?",
                (PREEMPTING, seq, attempt, RUNNING),
            )
            if cur.rowcount != 1:
                return False
            self._event(db, seq, now, "preempting", {"attempt": attempt})
        return True

    def request_cancel(self, seq: int, now: float) -> JobRow | None:
        """Cancel: a pending job becomes CANCELLED at once; a running one is stopped first
        (PREEMPTING with the cancel flag; CANCELLED when its process has exited). Returns the
        updated row, or None if the job does not exist. A finished job is left unchanged."""
        with self._tx() as db:
            found = db.execute("SELECT state FROM jobs WHERE seq=?", (seq,)).fetchone()
            if found is None:
                return None
            state = found[0]
            if state == PENDING:
                db.execute(
                    "UPDATE jobs SET state=?, end_time=?, reason=? WHERE seq=?",
                    (CANCELLED, now, "cancelled while pending", seq),
                )
                self._event(db, seq, now, "cancelled", {})
            elif state in HOLDING:
                db.execute(
                    "UPDATE jobs SET state=?, cancel_requested=1 WHERE seq=?", (PREEMPTING, seq)
                )
                self._event(db, seq, now, "cancel_requested", {})
        return self.get(seq)

    def mark_exited(
        self,
        seq: int,
        attempt: int,
        outcome: str,
        now: float,
        exit_code: int | None,
        reason: str | None = None,
    ) -> bool:
        """The current attempt's process is gone. ``outcome`` is the new state: a final one
        (COMPLETED/FAILED/CANCELLED) ends the job; PENDING requeues it (preempted: one more
        restart, its GPU time added to its attained service). Applies only to a job still
        holding GPUs in that attempt, so it is idempotent."""
        if outcome not in (*FINAL, PENDING):
            raise ValueError(f"outcome {outcome!r}: expected a final state or PENDING")
        marks = ",".join("?" * len(HOLDING))
        with self._tx() as db:
            found = db.execute(
                f"SELECT gpus, run_start FROM jobs WHERE seq=? AND attempt=? AND state IN "
                f"({marks})",
                (seq, attempt, *HOLDING),
            ).fetchone()
            if found is None:
                return False
            gpus, run_start = found
            held = gpus * max(0.0, now - (run_start if run_start is not None else now))
            if outcome == PENDING:
                db.execute(
                    "UPDATE jobs SET state=?, restarts=restarts+1, attained_gpu_s="
                    "attained_gpu_s+?, gpu_ids=NULL, pid=NULL, pid_start=NULL, run_start=NULL, "
                    "exit_code=? WHERE seq=?",
                    (PENDING, held, exit_code, seq),
                )
            else:
                db.execute(
                    "UPDATE jobs SET state=?, end_time=?, attained_gpu_s=attained_gpu_s+?, "
                    "exit_code=?, reason=?, progress=CASE WHEN ?=? THEN 1.0 ELSE progress END "
                    "WHERE seq=?",
                    (outcome, now, held, exit_code, reason, outcome, COMPLETED, seq),
                )
            self._event(
                db,
                seq,
                now,
                "requeued" if outcome == PENDING else outcome.lower(),
                {"attempt": attempt, "exit_code": exit_code, "reason": reason},
            )
        return True

    def update_progress(self, updates: Iterable[tuple[int, float | None, float | None]]) -> None:
        """Set (progress, samples/s) of running jobs, all in one transaction."""
        items = [(p, s, seq) for seq, p, s in updates]
        if not items:
            return
        with self._tx() as db:
            db.executemany("UPDATE jobs SET progress=?, samples_per_s=? WHERE seq=?", items)
