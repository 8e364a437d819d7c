"""The durable store: transactions, idempotent transitions, the append-only event log."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dlsched.service.records import (
    CANCELLED,
    COMPLETED,
    PENDING,
    PREEMPTING,
    RUNNING,
    NewJob,
    job_id_of,
    seq_of,
)
from dlsched.service.store import SCHEMA_VERSION, Store, StoreError

JOB = NewJob("train", "alice", 2, ("python", "-c", "print(1)"), batch_size=32)


def test_submit_is_stored_with_its_event_and_survives_reopening(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    row = store.submit(JOB, 10.0)
    assert (row.state, row.gpus, row.command, row.batch_size) == (
        PENDING,
        2,
        ("python", "-c", "print(1)"),
        32,
    )
    instance = store.instance
    store.close()
    again = Store(tmp_path / "s.db")
    assert again.get(row.seq) == row
    assert again.instance == instance
    assert again.events(row.seq) == [(10.0, "submitted", {"gpus": 2, "user": "alice"})]
    mode = sqlite3.connect(tmp_path / "s.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_a_run_to_completion_and_its_event_log(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
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


def test_transitions_apply_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    seq = store.submit(JOB, 0.0).seq
    assert store.mark_started(seq, {"n": [0, 1]}, 1.0) is not None
    assert store.mark_started(seq, {"n": [2, 3]}, 1.0) is None
    assert store.mark_exited(seq, 1, COMPLETED, 2.0, 0)
    assert not store.mark_exited(seq, 1, COMPLETED, 3.0, 0)
    assert not store.mark_exited(seq, 1, PENDING, 3.0, 75)
    assert [k for _, k, _ in store.events(seq)].count("completed") == 1
    assert store.get(seq).end_time == 2.0  # type: ignore[union-attr]


def test_preemption_requeues_with_attained_service_and_a_new_attempt(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    seq = store.submit(JOB, 0.0).seq
    store.mark_started(seq, {"n": [0, 1]}, 10.0)
    assert store.mark_preempting(seq, 1, 20.0)
    assert store.get(seq).state == PREEMPTING  # type: ignore[union-attr]
    assert not store.mark_exited(seq, 2, PENDING, 30.0, 75), "a stale attempt changes nothing"
    assert store.mark_exited(seq, 1, PENDING, 30.0, 75)
    row = store.get(seq)
    assert row is not None
    assert (row.state, row.restarts, row.attained_gpu_s, row.gpu_ids) == (PENDING, 1, 40.0, None)
    again = store.mark_started(seq, {"n": [2, 3]}, 40.0)
    assert again is not None and again.attempt == 2 and again.start_time == 10.0


def test_cancel_pending_and_running(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
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


def test_event_log_is_append_only(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.submit(JOB, 0.0)
    store.close()
    db = sqlite3.connect(tmp_path / "s.db")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("UPDATE events SET kind='x'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("DELETE FROM events")


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    Store(tmp_path / "s.db").close()
    db = sqlite3.connect(tmp_path / "s.db")
    db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer"):
        Store(tmp_path / "s.db")


def test_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    with pytest.raises(ValueError, match="outcome"):
        store.mark_exited(1, 1, "DONE", 0.0, 0)
    with pytest.raises(sqlite3.IntegrityError):
        store.submit(NewJob("x", "u", 1, ("a",), batch_size=None), None)  # type: ignore[arg-type]
    assert store.jobs() == []


def test_job_ids() -> None:
    assert job_id_of(17) == "j17"
    assert seq_of("j17") == 17
    assert seq_of("17") is None and seq_of("j") is None and seq_of("jx") is None
