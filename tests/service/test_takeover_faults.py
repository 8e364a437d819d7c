"""Exactly once under faults: two real services on one store (SQLite, PostgreSQL), killed -9
and paused past their lease at random points; every job runs exactly once and no GPU of a
service is held by two runs at a time (see :mod:`tests.service.faults`)."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.service.faults import pg_env, run_round
from tests.service.postgres import PostgresServer, server_bin_dir

ROUNDS_SHORT = 1
ROUNDS_LONG = 20


def _db(kind: str, where: Path, request: pytest.FixtureRequest) -> tuple[str, str, dict[str, str]]:
    """A fresh store of ``kind`` for one round: the test's address of it, the services'
    (no password: they read it from their environment, also returned)."""
    if kind == "sqlite":
        where.mkdir()
        path = str(where / "state.db")
        return path, path, pg_env("")
    server: PostgresServer = request.getfixturevalue("pg_server")
    url = server.new_database()
    return url, server.bare_url(url), pg_env(server.password)


def _rounds(kind: str, rounds: int, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    rng = random.Random(f"{kind}-{rounds}-{os.environ.get('DLSCHED_FAULT_SEED', '')}")
    for i in range(rounds):
        db, served, env = _db(kind, tmp_path / f"db{i}", request)
        result = run_round(db, served, tmp_path / f"round{i}", rng, env)
        print(f"{kind} round {i}: {result.takeovers} takeovers, faults {result.faults}")
        detail = f"round {i}: {result}"
        assert not result.duplicates, detail
        assert not result.overlaps, detail
        assert result.exactly_once, detail


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_every_job_runs_exactly_once_under_kills_and_pauses(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    _rounds(kind, ROUNDS_SHORT, tmp_path, request)


@pytest.fixture(scope="module")
def own_pg_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this module alone: its tests kill it."""
    bin_dir = server_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found")
    server = PostgresServer(bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_every_job_runs_exactly_once_when_postgres_is_killed(
    own_pg_server: PostgresServer, tmp_path: Path
) -> None:
    """Services killed and paused, and the PostgreSQL server itself killed -9 and restarted:
    leases lapse during its outage, one service takes the other's jobs over when it is back,
    and no job whose process still runs is run again."""
    rng = random.Random(f"pg-kill-{os.environ.get('DLSCHED_FAULT_SEED', '')}")
    url = own_pg_server.new_database()
    result = run_round(
        url,
        own_pg_server.bare_url(url),
        tmp_path / "round",
        rng,
        pg_env(own_pg_server.password),
        kill_db=lambda down: own_pg_server.kill9_and_restart(down),
        db_kill_p=0.08,
    )
    print(
        f"postgresql kill: {result.takeovers} takeovers, {result.starts} service starts, "
        f"faults {result.faults}"
    )
    assert not result.duplicates, result
    assert not result.overlaps, result
    assert result.exactly_once, result


@pytest.mark.long
@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_twenty_rounds_of_kills_and_pauses_run_every_job_exactly_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    _rounds(kind, ROUNDS_LONG, tmp_path, request)
