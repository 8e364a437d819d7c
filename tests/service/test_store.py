"""The durable store: transactions, idempotent transitions, the append-only event log.

Every store test runs against both databases: a SQLite file and a real PostgreSQL server started
on loopback for the session (skipped only when the PostgreSQL server binaries are absent).
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner, Result

from dlsched.cli.main import app
from dlsched.service.store.database import SCHEMA_VERSION, Store, StoreError
from dlsched.service.store.records import (
    CANCELLED,
    COMPLETED,
    PENDING,
    PREEMPTING,
    RUNNING,
    NewJob,
    job_id_of,
    seq_of,
)
from dlsched.service.store.url import (
    PostgresTarget,
    SqliteTarget,
    StoreUrlError,
    parse_store_url,
)
from tests.service.helpers import run_beside
from tests.service.postgres import PostgresServer

JOB = NewJob("train", "alice", 2, ("python", "-c", "print(1)"), batch_size=32)


@dataclass
class Db:
    """One store database of a test: ``db`` is what :class:`Store` is given;
    ``integrity_error`` is the driver's constraint-violation error."""

    kind: str
    db: str
    integrity_error: type[Exception]

    def raw(self, sql: str, args: tuple[Any, ...] = ()) -> None:
        """Run one committed statement beside the store (to tamper with it)."""
        run_beside(self.db, [(sql, args)])


@pytest.fixture
def backend(db_url: str) -> Db:
    if db_url.startswith("postgresql://"):
        import psycopg

        return Db("postgresql", db_url, psycopg.IntegrityError)
    return Db("sqlite", db_url, sqlite3.IntegrityError)


@pytest.fixture
def store(backend: Db) -> Iterator[Store]:
    s = Store(backend.db)
    yield s
    s.close()


def test_submit_is_stored_with_its_event_and_survives_reopening(backend: Db) -> None:
    store = Store(backend.db)
    row = store.submit(JOB, 10.0)
    assert (row.state, row.gpus, row.command, row.batch_size, row.user) == (
        PENDING,
        2,
        ("python", "-c", "print(1)"),
        32,
        "alice",
    )
    instance = store.instance
    store.close()
    again = Store(backend.db)
    assert again.get(row.seq) == row
    assert again.instance == instance
    assert again.schema_version == SCHEMA_VERSION
    assert again.events(row.seq) == [
        (10.0, "submitted", {"gpus": 2, "user": "alice", "tenant": "admin"})
    ]
    again.close()


def test_sqlite_store_is_in_wal_mode(tmp_path: Path) -> None:
    Store(f"sqlite:///{tmp_path}/s.db").close()
    mode = sqlite3.connect(tmp_path / "s.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_a_run_to_completion_and_its_event_log(store: Store) -> None:
    seq = store.submit(JOB, 0.0).seq
    started = store.mark_started(seq, {"node-000": [0, 1]}, 5.0)
    assert started is not None
    assert (started.state, started.attempt, started.request_id) == (RUNNING, 1, f"j{seq}.1")
    store.mark_launched(seq, 1, 4242, 5.01)
    assert store.get(seq).pid == 4242  # type: ignore[union-attr]
    assert store.mark_exited(seq, 1, COMPLETED, 65.0, 0)
    done = store.get(seq)
    assert done is not None
    assert (done.state, done.end_time, done.progress, done.attained_gpu_s) == (
        COMPLETED,
        65.0,
        1.0,
        120.0,
    )
    kinds = [k for _, k, _ in store.events(seq)]
    assert kinds == ["submitted", "started", "launched", "completed"]
    assert store.finished_durations() == [("train", "alice", 60.0)]


def test_reads_filter_by_state_and_user(store: Store) -> None:
    a = store.submit(JOB, 0.0).seq
    b = store.submit(NewJob("eval", "bob", 1, ("x",)), 1.0).seq
    store.mark_started(b, {"n": [0]}, 2.0)
    assert [r.seq for r in store.jobs(user="alice")] == [a]
    assert [r.seq for r in store.jobs(user="bob", state=RUNNING)] == [b]
    assert store.jobs(user="bob", state=PENDING) == []
    assert [r.seq for r in store.active()] == [a, b]
    assert [r.seq for r in store.holding()] == [b]
    assert store.counts()[PENDING] == 1 and store.counts()[RUNNING] == 1


def test_transitions_apply_once(store: Store) -> None:
    seq = store.submit(JOB, 0.0).seq
    assert store.mark_started(seq, {"n": [0, 1]}, 1.0) is not None
    assert store.mark_started(seq, {"n": [2, 3]}, 1.0) is None
    assert store.mark_exited(seq, 1, COMPLETED, 2.0, 0)
    assert not store.mark_exited(seq, 1, COMPLETED, 3.0, 0)
    assert not store.mark_exited(seq, 1, PENDING, 3.0, 75)
    assert [k for _, k, _ in store.events(seq)].count("completed") == 1
    assert store.get(seq).end_time == 2.0  # type: ignore[union-attr]


def test_preemption_requeues_with_attained_service_and_a_new_attempt(store: Store) -> None:
    seq = store.submit(JOB, 0.0).seq
    store.mark_started(seq, {"n": [0, 1]}, 10.0)
    store.update_progress([(seq, 0.25, 12.5)])
    assert store.mark_preempting(seq, 1, 20.0)
    assert not store.mark_preempting(seq, 1, 20.0)
    assert store.get(seq).state == PREEMPTING  # type: ignore[union-attr]
    assert not store.mark_exited(seq, 2, PENDING, 30.0, 75), "a stale attempt changes nothing"
    assert store.mark_exited(seq, 1, PENDING, 30.0, 75)
    row = store.get(seq)
    assert row is not None
    assert (row.state, row.restarts, row.attained_gpu_s, row.gpu_ids, row.progress) == (
        PENDING,
        1,
        40.0,
        None,
        0.25,
    )
    again = store.mark_started(seq, {"n": [2, 3]}, 40.0)
    assert again is not None and again.attempt == 2 and again.start_time == 10.0


def test_cancel_pending_and_running(store: Store) -> None:
    a = store.submit(JOB, 0.0).seq
    b = store.submit(JOB, 0.0).seq
    store.mark_started(b, {"n": [0, 1]}, 1.0)
    assert store.request_cancel(a, 2.0).state == CANCELLED  # type: ignore[union-attr]
    row = store.request_cancel(b, 2.0)
    assert row is not None and row.state == PREEMPTING and row.cancel_requested
    assert store.mark_exited(b, 1, CANCELLED, 3.0, None, "cancelled")
    assert store.request_cancel(b, 4.0).state == CANCELLED  # type: ignore[union-attr]
    assert store.request_cancel(999, 4.0) is None
    assert store.counts()[CANCELLED] == 2


def test_changes_of_another_store_on_the_same_database_are_seen(backend: Db) -> None:
    mine, other = Store(backend.db), Store(backend.db)
    first = mine.submit(JOB, 0.0).seq
    position, rows = mine.snapshot()
    assert [r.seq for r in rows] == [first]
    second = other.submit(JOB, 1.0).seq
    other.mark_started(first, {"n": [0, 1]}, 2.0)
    last, changed = mine.changed_since(position)
    assert [(r.seq, r.state) for r in changed] == [(first, RUNNING), (second, PENDING)]
    assert last == mine.last_event() and mine.changed_since(last) == (last, [])
    mine.close()
    other.close()


def test_concurrent_stores_start_and_finish_each_job_once(backend: Db) -> None:
    """Several services on one database race for the same jobs: every transition is won by
    exactly one of them."""
    setup = Store(backend.db)
    seqs = [setup.submit(JOB, 0.0).seq for _ in range(6)]
    racers = 4
    barrier = threading.Barrier(racers, timeout=60)
    started: list[list[int]] = [[] for _ in range(racers)]
    finished: list[list[int]] = [[] for _ in range(racers)]
    errors: list[BaseException] = []

    def race(i: int) -> None:
        try:
            # Opened together too: several services starting at once on one database.
            store = Store(backend.db)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()
            return
        try:
            barrier.wait()
            for seq in seqs:
                if store.mark_started(seq, {f"node-{i}": [0, 1]}, 1.0) is not None:
                    started[i].append(seq)
            for seq in seqs:
                if store.mark_exited(seq, 1, COMPLETED, 2.0, 0):
                    finished[i].append(seq)
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=race, args=(i,)) for i in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert sorted(s for won in started for s in won) == seqs
    assert sorted(s for won in finished for s in won) == seqs
    for seq in seqs:
        kinds = [k for _, k, _ in setup.events(seq)]
        assert kinds == ["submitted", "started", "completed"]
        row = setup.get(seq)
        assert row is not None and (row.state, row.attempt) == (COMPLETED, 1)
    setup.close()


def test_event_log_is_append_only(backend: Db) -> None:
    store = Store(backend.db)
    store.submit(JOB, 0.0)
    store.close()
    with pytest.raises(backend.integrity_error, match="append-only"):
        backend.raw("UPDATE events SET kind='x'", ())
    with pytest.raises(backend.integrity_error, match="append-only"):
        backend.raw("DELETE FROM events", ())
    if backend.kind == "postgresql":
        with pytest.raises(backend.integrity_error, match="append-only"):
            backend.raw("TRUNCATE events", ())


def test_a_newer_schema_is_refused(backend: Db) -> None:
    Store(backend.db).close()
    backend.raw("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError, match="newer"):
        Store(backend.db)


def test_failed_transaction_leaves_nothing(store: Store, backend: Db) -> None:
    with pytest.raises(ValueError, match="outcome"):
        store.mark_exited(1, 1, "DONE", 0.0, 0)
    with pytest.raises(backend.integrity_error):
        store.submit(NewJob("x", "u", 1, ("a",), batch_size=None), None)  # type: ignore[arg-type]
    assert store.jobs() == []
    assert store.last_event() == 0
    assert store.submit(JOB, 1.0).state == PENDING, "the store is usable after a rollback"


def test_postgres_password_is_masked_in_the_label(pg_server: PostgresServer) -> None:
    url = pg_server.new_database()
    store = Store(url)
    assert pg_server.password in url
    assert pg_server.password not in store.label
    assert store.label == url.replace(pg_server.password, "***")
    store.close()


def test_unreachable_postgres_is_a_clear_error() -> None:
    with socket.socket() as bound:
        # Bound but not listening: a connection to it is refused.
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        with pytest.raises(StoreError, match=r"postgresql://u:\*\*\*@127\.0\.0\.1.*cannot connect"):
            Store(f"postgresql://u:secret@127.0.0.1:{port}/db")


def _serve_fake(db: str, tmp_path: Path) -> Result:
    """``dlsched serve --db DB`` on the fake back end, its token and jobs under ``tmp_path``;
    a password in ``DB`` is passed in the environment (never in argv)."""
    parts = urlsplit(db)
    env = {}
    if parts.scheme.startswith("postgres") and parts.password is not None:
        env["DLSCHED_DB_PASSWORD"] = parts.password
        db = db.replace(f":{parts.password}@", "@", 1)
    return CliRunner().invoke(
        app,
        [
            "serve",
            "--port",
            "0",
            "--db",
            db,
            "--backend",
            "fake",
            "--token-file",
            str(tmp_path / "t.token"),
            "--work-dir",
            str(tmp_path / "jobs"),
        ],
        env=env,
    )


def test_serve_reports_an_unreachable_postgres_as_a_user_error(tmp_path: Path) -> None:
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        result = _serve_fake(f"postgresql://u:secret@127.0.0.1:{port}/db", tmp_path)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert f"error: postgresql://u@127.0.0.1:{port}/db: cannot connect" in result.output
    assert "secret" not in result.output and "Traceback" not in result.output


def test_serve_reports_a_newer_schema_as_a_user_error(backend: Db, tmp_path: Path) -> None:
    Store(backend.db).close()
    backend.raw("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    result = _serve_fake(backend.db, tmp_path)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert f"schema version {SCHEMA_VERSION + 1} is newer" in result.output
    assert "upgrade dlsched" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("state.db", SqliteTarget(Path("state.db"))),
        ("/var/lib/x/state.db", SqliteTarget(Path("/var/lib/x/state.db"))),
        ("sqlite:///rel/s.db", SqliteTarget(Path("rel/s.db"))),
        ("sqlite:////abs/s.db", SqliteTarget(Path("/abs/s.db"))),
        (Path("p.db"), SqliteTarget(Path("p.db"))),
        (
            "postgresql://ann:pw@db.example:5433/jobs",
            PostgresTarget(
                "postgresql://ann:pw@db.example:5433/jobs",
                "jobs",
                "postgresql://ann:***@db.example:5433/jobs",
                has_url_password=True,
            ),
        ),
        (
            "postgres://ann@db.example/jobs?sslmode=require",
            PostgresTarget(
                "postgres://ann@db.example/jobs?sslmode=require",
                "jobs",
                "postgres://ann@db.example/jobs?sslmode=require",
            ),
        ),
    ],
)
def test_db_values_name_their_store(value: str | Path, expected: object) -> None:
    assert parse_store_url(value) == expected


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "empty"),
        ("mysql://u:p@h/db", "unknown scheme 'mysql'"),
        ("postgresql+psycopg://u:p@h/db", "unknown scheme 'postgresql\\+psycopg'"),
        ("postgresql://u:p@h:5432", "database name is missing"),
        ("postgresql://u:p@h:5432/", "database name is missing"),
        ("postgresql://u:p@h:port/db", "port is not a number"),
        ("postgresql://u:p@h:99999/db", "port is not a number"),
        ("sqlite://host/s.db", "three slashes"),
        ("sqlite:///", "path is missing"),
    ],
)
def test_bad_db_values_are_refused_naming_the_value(value: str, why: str) -> None:
    with pytest.raises(StoreUrlError, match=why) as err:
        parse_store_url(value)
    assert f"--db {value!r}" in str(err.value)
    assert "postgresql://USER:PASSWORD@HOST:PORT/DBNAME" in str(err.value)


def test_serve_refuses_a_bad_db_url_before_starting(tmp_path: Path) -> None:
    token = tmp_path / "t.token"
    result = CliRunner().invoke(
        app,
        [
            "serve",
            "--port",
            "0",
            "--db",
            "mysql://u:p@h/db",
            "--backend",
            "fake",
            "--token-file",
            str(token),
        ],
    )
    assert result.exit_code == 2
    assert "--db 'mysql://u:p@h/db'" in result.output and "unknown scheme" in result.output
    assert not token.exists()


@pytest.mark.slow
def test_a_live_service_runs_jobs_on_postgres(pg_server: PostgresServer, tmp_path: Path) -> None:
    """``dlsched serve --db postgresql://...`` end to end (fake back end): jobs submitted over
    the API run to completion and their history is in the PostgreSQL store."""
    from dlsched.service.api.client import ServiceClient

    url = pg_server.new_database()
    log = tmp_path / "serve.log"
    token = tmp_path / "token"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dlsched.cli.main",
                "serve",
                "--port",
                "0",
                "--db",
                pg_server.bare_url(url),
                "--backend",
                "fake",
                "--port",
                "0",
                "--token-file",
                str(token),
                "--work-dir",
                str(tmp_path / "jobs"),
                "--round",
                "0.2",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={
                **os.environ,
                "PYTHONUNBUFFERED": "1",
                "DLSCHED_DB_PASSWORD": pg_server.password,
            },
        )
    try:
        base = ""
        for _ in range(600):
            found = [x for x in log.read_text().splitlines() if x.startswith("dlsched service at")]
            if found:
                base = found[0].split()[-1].rstrip("/")
                break
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        assert base, log.read_text()
        with ServiceClient(base, token.read_text().strip()) as client:
            ids = [
                client.submit(
                    {"name": f"n{i}", "user": "ann", "gpus": 4, "command": ["sleep", "0.3"]}
                )["id"]
                for i in range(3)
            ]
            for _ in range(600):
                if all(client.job(i)["state"] == COMPLETED for i in ids):
                    break
                time.sleep(0.1)
            assert [client.job(i)["state"] for i in ids] == [COMPLETED] * 3
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    text = log.read_text()
    assert pg_server.password not in text
    assert pg_server.bare_url(url) in text
    store = Store(url)
    rows = store.jobs(user="ann")
    assert [r.state for r in rows] == [COMPLETED] * 3
    for r in rows:
        assert [k for _, k, _ in store.events(r.seq)] == ["submitted", "started", "completed"]
    store.close()


def test_job_ids() -> None:
    assert job_id_of(17) == "j17"
    assert seq_of("j17") == 17
    assert seq_of("17") is None and seq_of("j") is None and seq_of("jx") is None
