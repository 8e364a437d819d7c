"""Where the job store lives: the ``--db`` value read as a SQLite file or a PostgreSQL URL.

Accepted forms:
- a plain path (``state.db``, ``/var/lib/dlsched/state.db``): a SQLite file;
- ``sqlite:///relative/path`` or ``sqlite:////absolute/path``: the same, written as a URL;
- ``postgresql://user:password@host:port/dbname`` (also ``postgres://``): a PostgreSQL
  database, passed to libpq as given (query parameters such as ``?sslmode=require`` included).

Anything else that looks like a URL (``scheme://``) is refused with :class:`StoreUrlError`
naming the value and the forms above, rather than being taken for a file name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import SplitResult, urlsplit, urlunsplit

EXPECTED = (
    "expected a SQLite file path, sqlite:///PATH, or postgresql://USER:PASSWORD@HOST:PORT/DBNAME"
)
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


class StoreUrlError(ValueError):
    """A ``--db`` value that names no store this code can open."""


@dataclass(frozen=True)
class SqliteTarget:
    """A SQLite store file."""

    path: Path

    @property
    def display(self) -> str:
        return str(self.path)


@dataclass(frozen=True)
class PostgresTarget:
    """A PostgreSQL database: ``url`` is the libpq connection URI (with its password, if it
    holds one); ``display`` is the same URI with the password masked, for logs and messages;
    ``password`` one given apart from the URL (a file, the environment; None: the URL's or
    libpq's own). ``has_url_password``: the URL itself holds a password."""

    url: str
    dbname: str
    display: str
    password: str | None = field(default=None, repr=False)
    has_url_password: bool = False


StoreTarget = SqliteTarget | PostgresTarget


def _bad(value: str, why: str) -> StoreUrlError:
    return StoreUrlError(f"--db {value!r}: {why}; {EXPECTED}")


def _masked(parts: SplitResult) -> str:
    if parts.password is None:
        return urlunsplit(parts)
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    netloc = f"{user}:***@{host}{port}"
    return urlunsplit(parts._replace(netloc=netloc))


def _postgres(value: str) -> PostgresTarget:
    parts = urlsplit(value)
    try:
        port = parts.port
    except ValueError as exc:
        raise _bad(value, "the port is not a number from 0 to 65535") from exc
    if port == 0:
        raise _bad(value, "port 0 is not a PostgreSQL port")
    if parts.fragment:
        raise _bad(value, "a PostgreSQL URL has no #fragment")
    dbname = parts.path.lstrip("/")
    if not dbname or "/" in dbname:
        raise _bad(value, "the database name is missing (the path after host:port)")
    return PostgresTarget(
        url=value,
        dbname=dbname,
        display=_masked(parts),
        has_url_password=parts.password is not None,
    )


def _sqlite(value: str) -> SqliteTarget:
    rest = value[len("sqlite://") :]
    if not rest.startswith("/"):
        raise _bad(value, "a SQLite URL names no host: write sqlite:///PATH (three slashes)")
    path = rest[1:]
    if not path:
        raise _bad(value, "the SQLite file path is missing")
    return SqliteTarget(Path(path))


def parse_store_url(value: str | Path) -> StoreTarget:
    """The store named by ``value`` (see the module docstring); :class:`StoreUrlError` if it
    names none. A :class:`~pathlib.Path` is always a SQLite file."""
    if isinstance(value, Path):
        return SqliteTarget(value)
    if not value.strip():
        raise _bad(value, "the value is empty")
    m = _URL.match(value)
    if m is None:
        return SqliteTarget(Path(value))
    scheme = m.group(1).lower()
    if scheme in ("postgresql", "postgres"):
        return _postgres(value)
    if scheme == "sqlite":
        return _sqlite(value)
    raise _bad(value, f"unknown scheme {scheme!r}")
