"""Fencing and identity: epochs fence a service whose lease was taken over or whose id another
process started under; one service per work directory; an earlier attempt is judged by its
process (pid and start time), its exit file, or its launch deadline."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dlsched.backends.base import AttemptFate, LaunchRequest, PriorAttempt
from dlsched.backends.local import LocalBackend
from dlsched.backends.procfs import read_stat
from dlsched.service.server import Service, ServiceConfig
from dlsched.service.store.database import Fenced, Store
from dlsched.service.store.records import ORPHAN_CHECK, PENDING, RUNNING, NewJob
from dlsched.service.store.service_id import WorkDirBusy


def _job(store: Store) -> int:
    return store.submit(NewJob("j", "u", 1, ("sleep", "1")), 0.0).seq


def test_a_second_start_under_one_id_fences_the_first(db_url: str) -> None:
    first, second = Store(db_url), Store(db_url)
    seq = _job(first)
    first.fence_as("svc", first.begin_service("svc", 0.0, 60.0, None))
    assert first.mark_started(seq, {"n": [0]}, 1.0, "svc") is not None
    second.fence_as("svc", second.begin_service("svc", 2.0, 60.0, None))
    with pytest.raises(Fenced, match="lost its epoch 1"):
        first.mark_exited(seq, 1, "COMPLETED", 3.0, 0)
    with pytest.raises(Fenced):
        first.renew_lease("svc", 3.0, 60.0)
    row = second.get(seq)
    assert row is not None and row.state == RUNNING  # nothing of the fenced write committed
    assert second.mark_exited(seq, 1, "COMPLETED", 4.0, 0)
    first.close()
    second.close()


def test_a_takeover_fences_the_lapsed_service_in_the_same_transaction(db_url: str) -> None:
    a, b = Store(db_url), Store(db_url)
    seq = _job(a)
    a.fence_as("a", a.begin_service("a", 0.0, 10.0, "/nowhere"))
    b.fence_as("b", b.begin_service("b", 0.0, 10.0, None))
    a.mark_started(seq, {"n": [0]}, 1.0, "a", launch_by=6.0)
    b.renew_lease("b", 20.0, 10.0)
    assert b.claim_lapsed("b", 20.0) == [seq]
    row = b.get(seq)
    assert row is not None and row.state == ORPHAN_CHECK
    assert (row.owner, row.orphan_of, row.attempt, row.launch_by) == ("b", "a", 1, 6.0)
    for write in (
        lambda: a.renew_lease("a", 21.0, 10.0),
        lambda: a.mark_exited(seq, 1, "COMPLETED", 21.0, 0),
        lambda: a.fail_pending(seq, 21.0, "x"),
        lambda: a.claim_lapsed("a", 100.0),
    ):
        with pytest.raises(Fenced):
            write()
    assert a.service_info("a") == (2, "/nowhere")
    assert b.settle_orphan(seq, 1, PENDING, 22.0, None, "gone")
    assert not b.settle_orphan(seq, 1, PENDING, 22.0, None, "gone")  # idempotent
    row = b.get(seq)
    assert row is not None and row.state == PENDING and row.restarts == 1
    a.close()
    b.close()


def test_two_services_in_one_work_directory_refuse(tmp_path: Path) -> None:
    config = ServiceConfig(backend="fake", db=tmp_path / "s.db")
    first = Service(config)
    try:
        with pytest.raises(WorkDirBusy, match=rf"another service \(pid {os.getpid()}\)"):
            Service(config)
    finally:
        first.stop()
    again = Service(config)  # the lock went with the first service
    assert again.service_id == first.service_id
    again.stop()


def test_two_serve_processes_in_one_directory_the_second_exits_2(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "dlsched.cli.main", "serve", "--backend", "fake",
            "--db", str(tmp_path / "s.db"), "--port", "0"]  # fmt: skip
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert first.stdout is not None
        for line in first.stdout:
            if line.startswith("dlsched service at"):
                break
        second = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "another service" in lines[0] and "--work-dir" in lines[0]
    finally:
        first.terminate()
        first.wait(30)


def _prior(home: Path, pid: int | None, start: float | None, launch_by: float) -> PriorAttempt:
    request = LaunchRequest("j1.1", "j1", ("true",), {"n": (0,)})
    return PriorAttempt(request, "old-owner", str(home), pid, start, launch_by)


def test_the_local_probe_tells_a_live_attempt_from_a_recycled_pid(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path / "mine", "me")
    other = subprocess.Popen(["sleep", "30"])
    try:
        st = read_stat(other.pid)
        assert st is not None
        now = time.time()
        alive = backend.probe(_prior(tmp_path / "old", other.pid, st.start_time, now + 60))
        assert alive.fate is AttemptFate.ALIVE
        # The same pid with another start time is another process: not the attempt.
        reused = _prior(tmp_path / "old", other.pid, st.start_time - 100.0, now + 60)
        assert backend.probe(reused).fate is AttemptFate.UNKNOWN  # may still launch
        late = _prior(tmp_path / "old", other.pid, st.start_time - 100.0, now - 60)
        assert backend.probe(late).fate is AttemptFate.GONE
    finally:
        other.kill()
        other.wait()
    exits = tmp_path / "old" / "exits"
    exits.mkdir(parents=True)
    (exits / "j1.1").write_text("0\n")
    done = backend.probe(_prior(tmp_path / "old", None, None, time.time() - 60))
    assert (done.fate, done.exit_code) == (AttemptFate.EXITED, 0)


def test_a_password_in_the_db_url_is_refused_in_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dlsched.cli.main import app

    result = CliRunner().invoke(
        app, ["serve", "--db", "postgresql://u:hunter2@127.0.0.1:1/db", "--port", "0"]
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "hunter2" not in lines[0]
    assert "--db" in lines[0] and "--db-password-file" in lines[0]
    assert "DLSCHED_DB_PASSWORD" in lines[0] and "PGPASSWORD" in lines[0]


def test_a_password_file_must_be_private_and_then_reaches_postgres(
    tmp_path: Path, pg_server: object
) -> None:
    from dlsched.service.store.password import PasswordError, with_password
    from dlsched.service.store.url import parse_store_url
    from tests.service.postgres import PostgresServer

    assert isinstance(pg_server, PostgresServer)
    url = pg_server.bare_url(pg_server.new_database())
    secret = tmp_path / "pw"
    secret.write_text(pg_server.password + "\n")
    secret.chmod(0o644)
    with pytest.raises(PasswordError, match=r"mode 0644 lets others read it; chmod 600"):
        with_password(parse_store_url(url), secret, environ={})
    secret.chmod(0o600)
    target = with_password(parse_store_url(url), secret, environ={})
    store = Store(target)
    assert store.schema_version >= 4
    assert pg_server.password not in store.label
    store.close()
    with pytest.raises(PasswordError, match="applies only to a postgresql"):
        with_password(parse_store_url(str(tmp_path / "s.db")), secret, environ={})


def test_a_version_3_store_is_upgraded_with_epochs_and_orphan_checks(db_url: str) -> None:
    from dlsched.service.store.database import SCHEMA_VERSION
    from tests.service.helpers import run_beside

    store = Store(db_url)
    seq = _job(store)
    store.close()
    run_beside(
        db_url,
        [
            ("ALTER TABLE jobs DROP COLUMN orphan_of", ()),
            ("ALTER TABLE jobs DROP COLUMN launch_by", ()),
            ("ALTER TABLE services DROP COLUMN epoch", ()),
            ("ALTER TABLE services DROP COLUMN home", ()),
            ("UPDATE meta SET value='3' WHERE key='schema_version'", ()),
        ],
    )
    store = Store(db_url)
    try:
        assert store.schema_version == SCHEMA_VERSION == 4
        row = store.get(seq)
        assert row is not None and (row.orphan_of, row.launch_by) == (None, None)
        assert store.begin_service("svc", 0.0, 60.0, None) == 1
    finally:
        store.close()
