"""Hostile and broken requests against the API, and a store that breaks under the service: each
gets a clear 4xx/5xx naming what is wrong, never a 500 or a wrong answer, and no acknowledged
job is lost."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dlsched.backends.base import LaunchRequest
from dlsched.backends.local import LocalBackend
from dlsched.service.api.app import ServiceContext, create_app
from dlsched.service.api.guard import host_name
from dlsched.service.store.database import Store
from dlsched.service.store.records import seq_of
from tests.service.helpers import Harness, make_harness

GOOD = {"name": "a", "user": "alice", "gpus": 1, "command": ["sleep", "5"]}
Setup = tuple[TestClient, Harness, dict[str, str]]


def client_for(h: Harness, hosts: tuple[str, ...] | None = None) -> TestClient:
    ctx = ServiceContext(h.store, h.controller, lambda: None, h.clock, "t0ken", "fifo")
    app = create_app(ctx, None) if hosts is None else create_app(ctx, None, allowed_hosts=hosts)
    return TestClient(app, base_url="http://localhost")


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    h = make_harness(tmp_path)
    with client_for(h) as client:
        yield client, h, {"Authorization": "Bearer t0ken"}
    h.store.close()


def post_raw(client: TestClient, auth: dict[str, str], body: str) -> tuple[int, str]:
    r = client.post("/jobs", content=body, headers={**auth, "content-type": "application/json"})
    return r.status_code, r.text


def test_arguments_no_process_can_take_are_refused(setup: Setup) -> None:
    client, h, auth = setup
    status, text = post_raw(client, auth, '{"name": "a", "gpus": 1, "command": ["a\\u0000b"]}')
    assert status == 422 and "command.0" in text and "NUL" in text, text
    status, text = post_raw(client, auth, '{"name": "a", "gpus": 1, "command": ["x", "\\ud800"]}')
    assert status == 422 and "command.1" in text and "unicode" in text.lower(), text
    body = '{"name": "a", "gpus": 1, "command": ["x"], "elastic": true, "batch_size": 1, '
    status, text = post_raw(client, auth, body + '"application": "c\\u0000"}')
    assert status == 422 and "application" in text, text
    assert h.store.jobs() == []


@pytest.mark.parametrize(
    "job_id", ["j\u0661", "j01", "j0", "j99999999999999999999", "j-1", "j1 ", "J1", "j\uff11"]
)
def test_job_ids_are_strict_ascii(setup: Setup, job_id: str) -> None:
    client, _, auth = setup
    assert client.post("/jobs", json=GOOD, headers=auth).status_code == 201  # j1 exists
    assert seq_of(job_id) is None
    assert client.get(f"/jobs/{job_id}").status_code == 404
    assert client.get(f"/jobs/{job_id}/events").status_code == 404
    assert client.delete(f"/jobs/{job_id}", headers=auth).status_code == 404
    assert client.get("/jobs/j1").status_code == 200


def test_head_answers_like_get_without_a_body(setup: Setup) -> None:
    client, _, auth = setup
    client.post("/jobs", json=GOOD, headers=auth)
    for path in ("/jobs", "/jobs/j1", "/cluster", "/metrics"):
        head, get = client.head(path), client.get(path)
        assert head.status_code == get.status_code == 200, path
        assert head.content == b""
    assert client.head("/jobs/j7").status_code == 404


def test_user_filter_is_validated(setup: Setup) -> None:
    client, _, _ = setup
    assert client.get("/jobs?user=%ED%B3%BF").status_code == 422  # a lone surrogate
    assert client.get("/jobs", params={"user": "x" * 65}).status_code == 422
    assert client.get("/jobs", params={"user": "bob"}).json() == []


def test_only_allowed_hosts_are_answered(tmp_path: Path) -> None:
    h = make_harness(tmp_path)
    with client_for(h) as client:
        for host in ("localhost", "127.0.0.1:8765", "[::1]:80", "LOCALHOST"):
            assert client.get("/jobs", headers={"host": host}).status_code == 200, host
        for host in ("evil.example", "evil.example:8765", "localhost.evil.example", ""):
            r = client.get("/jobs", headers={"host": host})
            assert r.status_code == 421 and "--allow-host" in r.json()["detail"], host
    with client_for(h, ("sched.internal",)) as client:
        assert client.get("/jobs", headers={"host": "sched.internal:80"}).status_code == 200
        assert client.get("/jobs", headers={"host": "localhost"}).status_code == 421
    with client_for(h, ("*",)) as client:
        assert client.get("/jobs", headers={"host": "anything.example"}).status_code == 200
    h.store.close()
    assert host_name(b"[::1]:8765") == "::1" and host_name(b"\xff") == ""


def test_a_deleted_or_replaced_store_stops_taking_work(tmp_path: Path) -> None:
    for how in ("deleted", "replaced"):
        d = tmp_path / how
        d.mkdir()
        h = make_harness(d)
        auth = {"Authorization": "Bearer t0ken"}
        with client_for(h) as client:
            assert client.post("/jobs", json=GOOD, headers=auth).status_code == 201
            db = d / "state.db"
            if how == "deleted":
                db.unlink()
            else:
                other = Store(d / "other.db")
                other.close()
                os.replace(d / "other.db", db)
            r = client.post("/jobs", json=GOOD, headers=auth)
            assert r.status_code == 503, r.text
            assert f"database file was {how}" in r.json()["detail"] or how in r.json()["detail"]
            assert client.delete("/jobs/j1", headers=auth).status_code == 503
            with pytest.raises(Exception, match=how):
                h.controller.step()
        h.store.close()


def test_a_full_disk_is_507_and_loses_nothing_acknowledged(setup: Setup) -> None:
    client, h, auth = setup
    acknowledged = []
    big = {**GOOD, "command": ["x" * 4000] * 8}
    db = h.store._db  # the real SQLite connection: cap its file size as a full disk would
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages + 2}")
    statuses = []
    for _ in range(20):
        r = client.post("/jobs", json=big, headers=auth)
        statuses.append(r.status_code)
        if r.status_code == 201:
            acknowledged.append(r.json()["id"])
        else:
            assert r.status_code == 507, r.text
            assert "disk is full" in r.json()["detail"]
            assert "nothing was changed" in r.json()["detail"]
    assert 507 in statuses
    db.execute("PRAGMA max_page_count = 1073741823")
    assert [r.id for r in h.store.jobs()] == acknowledged
    assert client.post("/jobs", json=GOOD, headers=auth).status_code == 201


def test_store_token_and_job_files_are_private(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    store = Store(tmp_path / "s" / "state.db")
    store.close()
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        path = tmp_path / "s" / name
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    backend = LocalBackend(tmp_path / "jobs", "perm-test")
    backend.launch(LaunchRequest("j1.1", "j1", ("true",), {"n": (0,)}))
    backend.kill_all()
    for path in (tmp_path / "jobs", tmp_path / "jobs" / "jobs", tmp_path / "jobs" / "jobs" / "j1"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    log = tmp_path / "jobs" / "jobs" / "j1" / "log.txt"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "db", ["/proc/dlsched-none/state.db", "{tmp}/file/state.db", "{tmp}/notadb.db"]
)
def test_an_unusable_store_at_start_up_is_one_line_and_exit_2(tmp_path: Path, db: str) -> None:
    (tmp_path / "file").write_text("not a directory")
    (tmp_path / "notadb.db").write_bytes(b"this is not a SQLite database" * 100)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dlsched.cli.main",
            "serve",
            "--port",
            "0",
            "--db",
            db.format(tmp=tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert "Traceback" not in result.stderr
