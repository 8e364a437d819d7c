"""The durable job store: one SQLite file in WAL mode, or a PostgreSQL database.

Contracts (both databases; :mod:`dlsched.service.store.dialect` holds what differs):
- Every job state change is one transaction that also appends an event to the job's log, and
  each transition is a conditional update on the state (and attempt) it starts from, so a
  transition applied twice (e.g. by a driver that restarted, or by two services sharing one
  PostgreSQL database) changes nothing the second time: a job starts once per attempt and
  completes once.
- Write transactions are serialized per database (SQLite ``BEGIN IMMEDIATE``; PostgreSQL an
  advisory lock held to commit), so event sequence numbers commit in order and
  :meth:`Store.changed_since` never skips an event.
- The event log is append-only: triggers reject UPDATE and DELETE on it (and TRUNCATE on
  PostgreSQL).
- The schema carries a version (``meta.schema_version``); opening a store written by a newer
  version is refused with a clear error rather than guessed at; an older one is upgraded in
  place (version 1 → 2 adds attempt owners: its jobs holding GPUs are given to the store's
  instance id, the id its single service ran under; 2 → 3 adds each job's tenant and queue,
  null for the jobs already stored; 3 → 4 adds lease epochs, service homes, orphan checks and
  launch deadlines, all null or zero for what is already stored).
- Every change a request makes (a submission, a cancellation) records in its event's detail
  the tenant that asked (``tenant``: a tenant's name, or ``admin``; see
  :mod:`dlsched.service.api.tenants`).
- Several services may share one database. Each has an id; the attempt a service starts
  records it (``jobs.owner``), and only that service launches, adopts, stops or settles it.
  A service renews its lease (``services.heartbeat``, with its length ``services.lease_s``)
  while it runs; the jobs of a service whose own lease has lapsed are taken over by any other
  service (:meth:`Store.claim_lapsed`, a conditional update on the owner and attempt) into
  ORPHAN_CHECK: they run again only once the new owner's back end says the old attempt is dead
  (:meth:`Store.settle_orphan`).
- Fencing: each service process starts a new epoch of its id (:meth:`Store.begin_service`), and
  a takeover moves the lapsed service to a new epoch. Once :meth:`Store.fence_as` is called,
  every write the control loop makes (the methods documented as *fenced*) runs ``UPDATE
  services ... WHERE id=mine AND epoch=mine`` in its own transaction first and raises
  :class:`Fenced` (nothing committed) when that matches no row: a service whose lease was taken
  over, or whose id another process started under since, commits nothing more.
- Durability: a committed transaction survives a crash of the service process, of the
  database server and of the machine (power loss): SQLite runs ``synchronous=FULL`` in WAL
  mode (the WAL is synced at every commit), PostgreSQL sessions set ``synchronous_commit=on``
  (the server must run with ``fsync=on``, its default). So a job the API acknowledged (201)
  is on disk before the answer is sent.

A store may be used from several threads: one connection behind a lock.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dlsched.service.store.dialect import Dialect, StoreError, StoreFullError, open_dialect
from dlsched.service.store.records import (
    ACTIVE,
    CANCELLED,
    COMPLETED,
    FAILED,
    FINAL,
    HOLDING,
    ORPHAN_CHECK,
    PENDING,
    PREEMPTING,
    RUNNING,
    STATES,
    GpuIds,
    JobRow,
    NewJob,
    held_gpus,
)
from dlsched.service.store.url import StoreTarget, parse_store_url

__all__ = ["SCHEMA_VERSION", "Fenced", "Store", "StoreError", "StoreFullError"]

SCHEMA_VERSION = 4


class Fenced(StoreError):
    """This service's epoch is no longer current (its lease was taken over, or another process
    started under its id): the write was not committed, and no later one will be."""


_ELASTIC_ATTEMPTS = """CREATE TABLE IF NOT EXISTS elastic_attempts (
    seq BIGINT NOT NULL,
    attempt INTEGER NOT NULL,
    owner TEXT NOT NULL,
    gpus INTEGER NOT NULL,
    batch_size INTEGER NOT NULL,
    PRIMARY KEY (seq, attempt, owner)
)"""

# {id} and {real} are the dialect's DDL types; "user" is quoted: a reserved word in PostgreSQL.
_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS jobs (
    seq {id},
    name TEXT NOT NULL,
    "user" TEXT NOT NULL,
    gpus INTEGER NOT NULL,
    command TEXT NOT NULL,
    batch_size INTEGER,
    expected_duration_s {real},
    state TEXT NOT NULL,
    submit_time {real} NOT NULL,
    start_time {real},
    run_start {real},
    end_time {real},
    restarts INTEGER NOT NULL DEFAULT 0,
    attempt INTEGER NOT NULL DEFAULT 0,
    gpu_ids TEXT,
    pid INTEGER,
    pid_start {real},
    attained_gpu_s {real} NOT NULL DEFAULT 0,
    progress {real},
    samples_per_s {real},
    exit_code INTEGER,
    reason TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    tenant TEXT,
    queue TEXT,
    orphan_of TEXT,
    launch_by {real}
)""",
    "CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state)",
    """CREATE TABLE IF NOT EXISTS events (
    seq {id},
    job BIGINT NOT NULL,
    time {real} NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT
)""",
    "CREATE INDEX IF NOT EXISTS events_job ON events (job)",
    "CREATE TABLE IF NOT EXISTS services (id TEXT PRIMARY KEY, heartbeat {real} NOT NULL, "
    "lease_s {real} NOT NULL, epoch INTEGER NOT NULL DEFAULT 0, home TEXT)",
    # The elastic policies' side tables (dlsched.service.control.elastic_book).
    """CREATE TABLE IF NOT EXISTS elastic_jobs (
    seq BIGINT PRIMARY KEY,
    application TEXT NOT NULL,
    max_gpus INTEGER NOT NULL,
    batch_size INTEGER NOT NULL
)""",
    _ELASTIC_ATTEMPTS,
)

_COLUMNS = (
    'seq, name, "user", gpus, command, batch_size, expected_duration_s, state, submit_time, '
    "start_time, run_start, end_time, restarts, attempt, gpu_ids, pid, pid_start, "
    "attained_gpu_s, progress, samples_per_s, exit_code, reason, cancel_requested, owner, "
    "tenant, queue, orphan_of, launch_by"
)

_REQUEUE = (
    "UPDATE jobs SET state=?, restarts=restarts+1, attained_gpu_s=attained_gpu_s+?, "
    "gpu_ids=NULL, pid=NULL, pid_start=NULL, run_start=NULL, owner=NULL, orphan_of=NULL, "
    "launch_by=NULL, exit_code=? "
)
"""An attempt holding GPUs back to PENDING (args: PENDING, its GPU-seconds, exit code): one
more restart, its run's GPU time added, the run cleared. The caller appends the WHERE."""


def _run_gpu_s(gpus: int, gpu_ids: str | None, run_start: float | None, now: float) -> float:
    """GPU-seconds of the current run at ``now``: the GPUs the attempt holds (its ``gpu_ids``,
    which for an elastic job may differ from the requested ``gpus``) times its run time."""
    held = gpus if gpu_ids is None else held_gpus(json.loads(gpu_ids))
    return held * max(0.0, now - (run_start if run_start is not None else now))


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
        owner=r[23],
        tenant=r[24],
        queue=r[25],
        orphan_of=r[26],
        launch_by=r[27],
    )


class Store:
    """The job store ``db`` names: a SQLite file path, ``sqlite:///PATH`` or
    ``postgresql://USER[:PASSWORD]@HOST:PORT/DBNAME`` (see :mod:`dlsched.service.store.url`;
    a bad value raises :class:`~dlsched.service.store.url.StoreUrlError`, a ``ValueError``).
    The tables are created if missing. See the module docstring for the guarantees."""

    def __init__(self, db: str | Path | StoreTarget) -> None:
        self.target = db if not isinstance(db, str | Path) else parse_store_url(db)
        self._lock = threading.RLock()
        self._fence: tuple[str, int] | None = None
        self._db: Dialect = open_dialect(self.target)
        try:
            with self._tx() as tx:
                tx.create_schema([t.format(id=tx.id_type, real=tx.real_type) for t in _TABLES])
            self._check_version()
        except StoreError:
            self._db.close()
            raise
        except Exception as exc:
            self._db.close()
            translated = self._db.storage_error(exc)
            if translated is None:
                raise
            raise StoreError(f"{self.label}: cannot open the store: {exc}") from None
        except BaseException:
            self._db.close()
            raise

    def _check_version(self) -> None:
        with self._tx() as db:
            found = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if found is None:
                db.execute(
                    "INSERT INTO meta VALUES ('schema_version', ?), ('instance', ?)",
                    (str(SCHEMA_VERSION), secrets.token_hex(8)),
                )
            elif int(found[0]) > SCHEMA_VERSION:
                raise StoreError(
                    f"{self._db.label}: schema version {found[0]} is newer than this dlsched "
                    f"understands ({SCHEMA_VERSION}); upgrade dlsched"
                )
            elif int(found[0]) < SCHEMA_VERSION:
                if int(found[0]) == 1:
                    self._upgrade_from_1(db)
                self._upgrade_from_2(db)
                self._upgrade_from_3(db)
                db.execute(
                    "UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),)
                )

    @staticmethod
    def _upgrade_from_1(db: Dialect) -> None:
        """Version 1 had one service per store, running under the store's instance id (and
        elastic attempt sizes, in SQLite stores only, keyed without their owner)."""
        instance = "(SELECT value FROM meta WHERE key='instance')"
        if "owner" not in db.columns("elastic_attempts"):
            db.execute("ALTER TABLE elastic_attempts RENAME TO elastic_attempts_v1")
            db.execute(_ELASTIC_ATTEMPTS)
            db.execute(
                "INSERT INTO elastic_attempts (seq, attempt, owner, gpus, batch_size) "
                f"SELECT seq, attempt, {instance}, gpus, batch_size FROM elastic_attempts_v1"
            )
            db.execute("DROP TABLE elastic_attempts_v1")
        db.execute("ALTER TABLE jobs ADD COLUMN owner TEXT")
        marks = ",".join("?" * len(HOLDING))
        db.execute(
            f"UPDATE jobs SET owner={instance} WHERE state IN ({marks})",
            HOLDING,
        )

    @staticmethod
    def _upgrade_from_2(db: Dialect) -> None:
        """Version 2 had no tenants: its jobs keep a null tenant and queue (the admin's)."""
        have = db.columns("jobs")
        for column in ("tenant", "queue"):
            if column not in have:
                db.execute(f"ALTER TABLE jobs ADD COLUMN {column} TEXT")

    @staticmethod
    def _upgrade_from_3(db: Dialect) -> None:
        """Version 3 had no epochs, homes, orphan checks or launch deadlines."""
        for table, column, ddl in (
            ("jobs", "orphan_of", "TEXT"),
            ("jobs", "launch_by", db.real_type),
            ("services", "epoch", "INTEGER NOT NULL DEFAULT 0"),
            ("services", "home", "TEXT"),
        ):
            if column not in db.columns(table):
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}")

    @property
    def label(self) -> str:
        """The store as shown to people (a PostgreSQL password masked)."""
        return self._db.label

    def fence_as(self, service: str, epoch: int) -> None:
        """From now on every fenced write checks that ``service`` is still at ``epoch`` (see
        the module docstring)."""
        with self._lock:
            self._fence = (service, epoch)

    @contextmanager
    def _tx(self, fenced: bool = False) -> Iterator[Dialect]:
        """One write transaction, serialized with every other writer of the database,
        committed at the end and rolled back on error. ``fenced``: it first checks this
        store's fence (:meth:`fence_as`) and raises :class:`Fenced` if it no longer holds."""
        with self._lock, self._storage_errors():
            self._db.begin_write()
            try:
                if fenced and self._fence is not None:
                    service, epoch = self._fence
                    cur = self._db.execute(
                        "UPDATE services SET epoch=epoch WHERE id=? AND epoch=?", (service, epoch)
                    )
                    if cur.rowcount != 1:
                        raise Fenced(
                            f"{self.label}: service {service} lost its epoch {epoch} (its lease "
                            "was taken over, or another process started under its id)"
                        )
                yield self._db
            except BaseException:
                with contextlib.suppress(Exception):
                    self._db.rollback()
                raise
            self._db.commit()

    @contextmanager
    def _storage_errors(self) -> Iterator[None]:
        """Storage failures (disk full, read-only, I/O) as a StoreError naming the store."""
        try:
            yield
        except StoreError:
            raise
        except Exception as exc:
            translated = self._db.storage_error(exc)
            if translated is None:
                raise
            raise translated from exc

    @contextmanager
    def _read(self) -> Iterator[Dialect]:
        """One read-only transaction: every read in it sees the same snapshot."""
        with self._lock, self._storage_errors():
            self._db.begin_read()
            try:
                yield self._db
            finally:
                self._db.rollback()

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

    def jobs(
        self, state: str | None = None, user: str | None = None, tenant: str | None = None
    ) -> list[JobRow]:
        """Jobs in submit order, optionally only those in ``state``, of ``user`` and/or of
        ``tenant``."""
        where, args = [], []
        for column, value in (("state", state), ('"user"', user), ("tenant", tenant)):
            if value is not None:
                where.append(f"{column}=?")
                args.append(value)
        sql = f"SELECT {_COLUMNS} FROM jobs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY seq", args).fetchall()
        return [_row(r) for r in rows]

    def active(self) -> list[JobRow]:
        """Every job that is pending, running or preempting, in submit order."""
        return self._in_states(ACTIVE)

    def snapshot(self) -> tuple[int, list[JobRow]]:
        """The active jobs and the event-log position they reflect (one snapshot)."""
        with self._read():
            return self.last_event(), self.active()

    def last_event(self) -> int:
        """The sequence number of the newest event (0 when none)."""
        with self._lock:
            return int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])

    def changed_since(self, event: int) -> tuple[int, list[JobRow]]:
        """The jobs with an event after position ``event`` (every state change appends one,
        so the event log is the change feed), and the newest position. One snapshot."""
        with self._read():
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
        return self._in_states(HOLDING)

    def _in_states(self, states: tuple[str, ...]) -> list[JobRow]:
        marks = ",".join("?" * len(states))
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE state IN ({marks}) ORDER BY seq", states
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
                'SELECT name, "user", end_time - start_time FROM jobs WHERE state=?', (COMPLETED,)
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
    def _event(db: Dialect, seq: int, now: float, kind: str, detail: dict[str, Any]) -> None:
        db.execute(
            "INSERT INTO events (job, time, kind, detail) VALUES (?, ?, ?, ?)",
            (seq, now, kind, json.dumps(detail, sort_keys=True)),
        )

    def submit(self, job: NewJob, now: float, by: str = "admin") -> JobRow:
        """Store a new PENDING job (one transaction, with its ``submitted`` event, which
        records ``by``, the tenant that asked)."""
        with self._tx() as db:
            seq = db.execute(
                'INSERT INTO jobs (name, "user", gpus, command, batch_size, expected_duration_s, '
                "state, submit_time, tenant, queue) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "RETURNING seq",
                (
                    job.name,
                    job.user,
                    job.gpus,
                    json.dumps(list(job.command)),
                    job.batch_size,
                    job.expected_duration_s,
                    PENDING,
                    now,
                    job.tenant,
                    job.queue,
                ),
            ).fetchone()[0]
            detail: dict[str, Any] = {"gpus": job.gpus, "user": job.user, "tenant": by}
            if job.queue is not None:
                detail["queue"] = job.queue
            self._event(db, seq, now, "submitted", detail)
        row = self.get(seq)
        assert row is not None
        return row

    def mark_started(
        self,
        seq: int,
        gpu_ids: GpuIds,
        now: float,
        owner: str | None = None,
        launch_by: float | None = None,
    ) -> JobRow | None:
        """PENDING → RUNNING on ``gpu_ids`` with a new attempt owned by service ``owner``
        (default: the store's instance id) that may be launched until ``launch_by`` (None:
        any time); None if not pending, e.g. another service started it first. Fenced."""
        owner = self.instance if owner is None else owner
        with self._tx(fenced=True) as db:
            won = db.execute(
                "UPDATE jobs SET state=?, attempt=attempt+1, run_start=?, "
                "start_time=COALESCE(start_time, ?), gpu_ids=?, pid=NULL, pid_start=NULL, "
                "exit_code=NULL, owner=?, orphan_of=NULL, launch_by=? "
                "WHERE seq=? AND state=? RETURNING attempt",
                (RUNNING, now, now, json.dumps(gpu_ids), owner, launch_by, seq, PENDING),
            ).fetchone()
            if won is None:
                return None
            attempt = won[0]
            self._event(
                db, seq, now, "started", {"attempt": attempt, "gpu_ids": gpu_ids, "owner": owner}
            )
        return self.get(seq)

    def mark_launched(self, seq: int, attempt: int, pid: int, pid_start: float | None) -> None:
        """Record the process of the current attempt (for adoption after a restart). Fenced."""
        with self._tx(fenced=True) as db:
            cur = db.execute(
                "UPDATE jobs SET pid=?, pid_start=? WHERE seq=? AND attempt=? AND pid IS NULL",
                (pid, pid_start, seq, attempt),
            )
            if cur.rowcount == 1:
                self._event(db, seq, pid_start or 0.0, "launched", {"pid": pid, "attempt": attempt})

    def mark_preempting(self, seq: int, attempt: int, now: float) -> bool:
        """RUNNING → PREEMPTING (the back end is asked to checkpoint and stop the job).
        Fenced."""
        with self._tx(fenced=True) as db:
            cur = db.execute(
                "UPDATE jobs SET state=? WHERE seq=? AND attempt=? AND state=?",
                (PREEMPTING, seq, attempt, RUNNING),
            )
            if cur.rowcount != 1:
                return False
            self._event(db, seq, now, "preempting", {"attempt": attempt})
        return True

    def request_cancel(self, seq: int, now: float, by: str = "admin") -> JobRow | None:
        """Cancel: a pending job becomes CANCELLED at once; a running one is stopped first
        (PREEMPTING with the cancel flag; CANCELLED when its process has exited); the event
        records ``by``, the tenant that asked. Returns the updated row, or None if the job does
        not exist. A finished job is left unchanged."""
        with self._tx() as db:
            found = db.execute("SELECT state FROM jobs WHERE seq=?", (seq,)).fetchone()
            if found is None:
                return None
            state = found[0]
            if state == PENDING:
                cur = db.execute(
                    "UPDATE jobs SET state=?, end_time=?, reason=? WHERE seq=? AND state=?",
                    (CANCELLED, now, "cancelled while pending", seq, PENDING),
                )
                if cur.rowcount == 1:
                    self._event(db, seq, now, "cancelled", {"tenant": by})
            elif state == ORPHAN_CHECK:
                cur = db.execute(
                    "UPDATE jobs SET cancel_requested=1 WHERE seq=? AND state=?",
                    (seq, ORPHAN_CHECK),
                )
                if cur.rowcount == 1:
                    self._event(db, seq, now, "cancel_requested", {"tenant": by})
            elif state in HOLDING:
                cur = db.execute(
                    "UPDATE jobs SET state=?, cancel_requested=1 WHERE seq=? AND state=?",
                    (PREEMPTING, seq, state),
                )
                if cur.rowcount == 1:
                    self._event(db, seq, now, "cancel_requested", {"tenant": by})
        return self.get(seq)

    def fail_pending(self, seq: int, now: float, reason: str) -> bool:
        """PENDING → FAILED with ``reason`` (a job the service cannot schedule at all);
        False if the job is not pending. Fenced."""
        with self._tx(fenced=True) as db:
            cur = db.execute(
                "UPDATE jobs SET state=?, end_time=?, reason=? WHERE seq=? AND state=?",
                (FAILED, now, reason, seq, PENDING),
            )
            if cur.rowcount != 1:
                return False
            self._event(db, seq, now, "failed", {"reason": reason})
        return True

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
        holding GPUs in that attempt, so it is idempotent. Fenced."""
        if outcome not in (*FINAL, PENDING):
            raise ValueError(f"outcome {outcome!r}: expected a final state or PENDING")
        marks = ",".join("?" * len(HOLDING))
        with self._tx(fenced=True) as db:
            found = db.execute(
                f"SELECT gpus, gpu_ids, run_start FROM jobs WHERE seq=? AND attempt=? AND "
                f"state IN ({marks})",
                (seq, attempt, *HOLDING),
            ).fetchone()
            if found is None:
                return False
            gpus, gpu_ids, run_start = found
            held = _run_gpu_s(gpus, gpu_ids, run_start, now)
            # The same condition again: the update itself decides who applies the transition.
            still = f"WHERE seq=? AND attempt=? AND state IN ({marks})"
            if outcome == PENDING:
                cur = db.execute(
                    _REQUEUE + still, (PENDING, held, exit_code, seq, attempt, *HOLDING)
                )
            else:
                cur = db.execute(
                    "UPDATE jobs SET state=?, end_time=?, attained_gpu_s=attained_gpu_s+?, "
                    f"exit_code=?, reason=?, progress=COALESCE(?, progress) {still}",
                    (
                        outcome,
                        now,
                        held,
                        exit_code,
                        reason,
                        1.0 if outcome == COMPLETED else None,
                        seq,
                        attempt,
                        *HOLDING,
                    ),
                )
            if cur.rowcount != 1:
                return False
            self._event(
                db,
                seq,
                now,
                "requeued" if outcome == PENDING else outcome.lower(),
                {"attempt": attempt, "exit_code": exit_code, "reason": reason},
            )
        return True

    def update_progress(self, updates: Iterable[tuple[int, float | None, float | None]]) -> None:
        """Set (progress, samples/s) of running jobs, all in one transaction. Fenced."""
        items = [(p, s, seq) for seq, p, s in updates]
        if not items:
            return
        with self._tx(fenced=True) as db:
            db.executemany("UPDATE jobs SET progress=?, samples_per_s=? WHERE seq=?", items)

    # ---- services and leases -------------------------------------------------------------
    def register_service(self, service: str, now: float, lease_s: float) -> bool:
        """Record service id ``service`` with a lease of ``lease_s`` seconds from ``now``;
        False (and nothing changed) if the id is already recorded, by this service in an
        earlier run or by another."""
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO services (id, heartbeat, lease_s) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                (service, now, lease_s),
            )
            return cur.rowcount == 1

    def begin_service(self, service: str, now: float, lease_s: float, home: str | None) -> int:
        """Start a new epoch of service ``service`` (recorded if it was not) with a lease of
        ``lease_s`` seconds from ``now`` and its back end's ``home`` (where the attempts it
        starts leave their files; None: nowhere another service can read): every other process
        running under this id is fenced from now on. Returns the new epoch (then pass it to
        :meth:`fence_as`)."""
        with self._tx() as db:
            row = db.execute(
                "INSERT INTO services (id, heartbeat, lease_s, epoch, home) VALUES (?, ?, ?, 1, ?) "
                "ON CONFLICT (id) DO UPDATE SET heartbeat=excluded.heartbeat, "
                "lease_s=excluded.lease_s, epoch=services.epoch+1, home=excluded.home "
                "RETURNING epoch",
                (service, now, lease_s, home),
            ).fetchone()
            return int(row[0])

    def renew_lease(self, service: str, now: float, lease_s: float) -> None:
        """Service ``service`` is alive at ``now``: its jobs stay its own until ``now +
        lease_s`` (recorded if it was not). Fenced: a service whose epoch was taken over
        renews nothing."""
        with self._tx(fenced=True) as db:
            db.execute(
                "INSERT INTO services (id, heartbeat, lease_s) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET heartbeat=excluded.heartbeat, "
                "lease_s=excluded.lease_s",
                (service, now, lease_s),
            )

    def lease_end(self, service: str) -> float | None:
        """When service ``service``'s lease runs out, or None if it never had one."""
        with self._lock:
            row = self._db.execute(
                "SELECT heartbeat + lease_s FROM services WHERE id=?", (service,)
            ).fetchone()
        return None if row is None else float(row[0])

    def service_info(self, service: str) -> tuple[int, str | None] | None:
        """(epoch, home) of service ``service`` (see :meth:`begin_service`), or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT epoch, home FROM services WHERE id=?", (service,)
            ).fetchone()
        return None if row is None else (int(row[0]), row[1])

    def claim_lapsed(self, service: str, now: float) -> list[int]:
        """Take over every job held by another service whose lease (its own length) ran out
        before ``now`` (or which never had one): ORPHAN_CHECK, owned by ``service``, with the
        lapsed service in ``orphan_of`` and the attempt (its GPUs, process, launch deadline)
        kept, until :meth:`settle_orphan` says what became of it. Each is a conditional update
        on the job's owner and attempt, so a job is taken over once whoever else tries; in the
        same transaction every lapsed service whose jobs were taken moves to a new epoch, so
        it commits nothing more (:class:`Fenced`). Returns the jobs taken over. Fenced."""
        marks = ",".join("?" * len(HOLDING))
        still = f"WHERE seq=? AND attempt=? AND owner=? AND state IN ({marks})"
        taken: list[int] = []
        with self._tx(fenced=True) as db:
            lapsed = db.execute(
                "SELECT seq, attempt, owner FROM jobs "
                f"WHERE state IN ({marks}) AND owner IS NOT NULL AND owner<>? AND NOT EXISTS "
                "(SELECT 1 FROM services WHERE services.id=jobs.owner AND heartbeat+lease_s>=?) "
                "ORDER BY seq",
                (*HOLDING, service, now),
            ).fetchall()
            fenced: set[str] = set()
            for seq, attempt, owner in lapsed:
                cur = db.execute(
                    f"UPDATE jobs SET state=?, owner=?, orphan_of=? {still}",
                    (ORPHAN_CHECK, service, owner, seq, attempt, owner, *HOLDING),
                )
                if cur.rowcount == 1:
                    taken.append(seq)
                    fenced.add(owner)
                    self._event(
                        db,
                        seq,
                        now,
                        "orphan_check",
                        {
                            "attempt": attempt,
                            "reason": f"service {owner} stopped renewing its lease",
                            "taken_over_by": service,
                        },
                    )
            for owner in sorted(fenced):
                db.execute("UPDATE services SET epoch=epoch+1 WHERE id=?", (owner,))
        return taken

    def settle_orphan(
        self,
        seq: int,
        attempt: int,
        outcome: str,
        now: float,
        exit_code: int | None,
        reason: str | None = None,
    ) -> bool:
        """The back end confirmed that attempt ``attempt`` of job ``seq``, in ORPHAN_CHECK, is
        dead: ``outcome`` is a final state (the attempt's own exit, read back) or PENDING (it
        ran no more: one more restart, its run's GPU time added). Applies only to a job in
        ORPHAN_CHECK owned by this store's fenced service (any owner without a fence) in that
        attempt, so it is idempotent. Fenced."""
        if outcome not in (*FINAL, PENDING):
            raise ValueError(f"outcome {outcome!r}: expected a final state or PENDING")
        still = "WHERE seq=? AND attempt=? AND state=?"
        with self._tx(fenced=True) as db:
            found = db.execute(
                f"SELECT gpus, gpu_ids, run_start, owner FROM jobs {still}",
                (seq, attempt, ORPHAN_CHECK),
            ).fetchone()
            if found is None:
                return False
            gpus, gpu_ids, run_start, owner = found
            if self._fence is not None and owner != self._fence[0]:
                return False
            held = _run_gpu_s(gpus, gpu_ids, run_start, now)
            if outcome == PENDING:
                cur = db.execute(
                    _REQUEUE + still, (PENDING, held, exit_code, seq, attempt, ORPHAN_CHECK)
                )
            else:
                cur = db.execute(
                    "UPDATE jobs SET state=?, end_time=?, attained_gpu_s=attained_gpu_s+?, "
                    f"exit_code=?, reason=?, progress=COALESCE(?, progress) {still}",
                    (
                        outcome,
                        now,
                        held,
                        exit_code,
                        reason,
                        1.0 if outcome == COMPLETED else None,
                        seq,
                        attempt,
                        ORPHAN_CHECK,
                    ),
                )
            if cur.rowcount != 1:
                return False
            self._event(
                db,
                seq,
                now,
                "requeued" if outcome == PENDING else outcome.lower(),
                {"attempt": attempt, "exit_code": exit_code, "reason": reason, "orphan": True},
            )
        return True

    # ---- side tables -----------------------------------------------------------------------
    def write(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        """Run one write statement of a side table (``?`` placeholders, SQL both databases
        accept) as its own transaction; the number of rows it changed. Fenced."""
        with self._tx(fenced=True) as db:
            return db.execute(sql, args).rowcount

    def read_one(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        """The first row of one query of a side table, or None."""
        with self._lock:
            row = self._db.execute(sql, args).fetchone()
        return None if row is None else tuple(row)
