"""Fixtures shared by the service tests: a throwaway PostgreSQL server for the session, and a
store database of either kind for tests that run on both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.service.postgres import PostgresServer, server_bin_dir


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    bin_dir = server_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, pg_ctl) not found under "
            "/usr/lib/postgresql/*/bin or on PATH; apt-get install -y postgresql"
        )
    server = PostgresServer(bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store database: a SQLite file, or a new database on the session's server."""
    if request.param == "sqlite":
        return str(tmp_path / "state.db")
    server: PostgresServer = request.getfixturevalue("pg_server")
    return server.new_database()
