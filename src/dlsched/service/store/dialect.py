"""What differs between the store's two databases: connecting, placeholders, DDL types, the
append-only triggers and how writers are serialized. Everything else (tables, queries,
transactions) is shared by :class:`dlsched.service.store.database.Store`.

Contract of a dialect:
- The store writes SQL with ``?`` placeholders and no ``?`` or ``%`` inside string literals; a
  dialect rewrites it for its driver.
- :meth:`Dialect.begin_write` starts a transaction that no other writer of the same database
  runs alongside (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock),
  so event sequence numbers are committed in increasing order and a read transaction sees a
  prefix of the event log.
- :meth:`Dialect.begin_read` starts a transaction whose reads all see one snapshot.
- Errors from the database surface as the driver's own; a constraint the store relies on (NOT
  NULL, the append-only log) is reported as :attr:`Dialect.integrity_error`.
"""

from __future__ import annotations

import os
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from dlsched.service.store.url import PostgresTarget, SqliteTarget, StoreTarget

if TYPE_CHECKING:
    import psycopg

# One key for every dlsched writer: advisory locks are scoped to a database already.
_WRITER_LOCK = int.from_bytes(b"dlsched\0", "big")
APPEND_ONLY = "the event log is append-only"


class StoreError(RuntimeError):
    """The store cannot be used (unreachable, not in WAL mode, written by a newer schema, its
    file deleted or replaced, or its disk full); the message says which and names the store."""


class StoreFullError(StoreError):
    """A write found the store's disk (or quota) full; the transaction was rolled back."""


class Rows(Protocol):
    """The part of a DB-API cursor the store reads."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Dialect(ABC):
    """One open connection to a store database (see the module docstring)."""

    label: str
    """The database as shown in messages (a URL with its password masked)."""
    id_type: str
    """DDL of an auto-numbered integer primary key."""
    real_type: str
    """DDL of a double-precision float."""
    integrity_error: type[Exception]

    @abstractmethod
    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows: ...

    @abstractmethod
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    @abstractmethod
    def begin_write(self) -> None: ...

    @abstractmethod
    def begin_read(self) -> None: ...

    def commit(self) -> None:
        self.execute("COMMIT")

    def rollback(self) -> None:
        self.execute("ROLLBACK")

    @abstractmethod
    def columns(self, table: str) -> list[str]:
        """The column names of ``table`` (a name the store wrote, never user input)."""

    @abstractmethod
    def create_schema(self, tables: Sequence[str]) -> None:
        """Create ``tables`` (``IF NOT EXISTS`` statements) and the append-only triggers of
        ``events``, inside the caller's write transaction (:meth:`begin_write`), so that no
        other store opening runs alongside."""

    @abstractmethod
    def close(self) -> None: ...

    def storage_error(self, exc: Exception) -> StoreError | None:
        """``exc`` (raised by the driver) as a StoreError when it says the storage itself
        failed (disk full, read-only, I/O error), naming the store; else None."""
        return None


class SqliteDialect(Dialect):
    """One SQLite file in WAL mode, ``synchronous=FULL``: the WAL is synced at every commit,
    so a committed transaction survives power loss (:attr:`synchronous` is the setting; the
    load benchmark lowers it to measure what durability costs)."""

    synchronous = "FULL"

    id_type = "INTEGER PRIMARY KEY AUTOINCREMENT"
    real_type = "REAL"
    integrity_error = sqlite3.IntegrityError

    def __init__(self, target: SqliteTarget) -> None:
        self.label = target.display
        self.path = target.path
        try:
            # Created by us with mode 0600 (SQLite gives its -wal and -shm files the same).
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            self._identity = _identity(self.path)
            self._db = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
        except OSError as exc:
            reason = exc.strerror or exc
            raise StoreError(f"{self.label}: cannot open the store: {reason}") from None
        except sqlite3.Error as exc:
            raise StoreError(f"{self.label}: cannot open the store: {exc}") from None
        self._lost: str | None = None
        try:
            mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(
                    f"{self.label}: cannot switch the store to WAL mode (got {mode!r})"
                )
            self._db.execute(f"PRAGMA synchronous={self.synchronous}")
            self._db.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(f"{self.label}: cannot open the store: {exc}") from None
        except BaseException:
            self._db.close()
            raise

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows:
        return self._db.execute(sql, args)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._db.executemany(sql, rows)

    def check(self) -> None:
        """StoreError if the file this connection opened is no longer at its path (deleted,
        or replaced by another file): writes would go to a file nobody will read again.
        Once seen, every later check fails the same way."""
        if self._lost is None:
            try:
                now = _identity(self.path)
            except FileNotFoundError:
                now = None
            if now is None:
                self._lost = "was deleted"
            elif now != self._identity:
                self._lost = "was replaced by another file"
        if self._lost is not None:
            raise StoreError(
                f"{self.label}: the store's database file {self._lost} while the service ran; "
                "no work is accepted: restore the file and restart the service"
            )

    def begin_write(self) -> None:
        self.check()
        self._db.execute("BEGIN IMMEDIATE")

    def begin_read(self) -> None:
        self.check()
        # A deferred transaction takes its WAL snapshot at its first read and keeps it.
        self._db.execute("BEGIN")

    def columns(self, table: str) -> list[str]:
        return [str(r[1]) for r in self._db.execute(f"PRAGMA table_info({table})").fetchall()]

    def create_schema(self, tables: Sequence[str]) -> None:
        for statement in tables:
            self._db.execute(statement)
        for op in ("UPDATE", "DELETE"):
            self._db.execute(
                f"CREATE TRIGGER IF NOT EXISTS events_no_{op.lower()} BEFORE {op} ON events "
                f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END"
            )

    def storage_error(self, exc: Exception) -> StoreError | None:
        # Plain DatabaseError: "file is not a database" and the like; its subclasses other
        # than OperationalError (integrity, programming) are the caller's own mistakes.
        if not (isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError):
            return None
        text = str(exc)
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "full" in text:
            return StoreFullError(f"{self.label}: the store's disk is full ({text})")
        return StoreError(f"{self.label}: the store cannot be written: {text}")

    def close(self) -> None:
        self._db.close()


class PostgresDialect(Dialect):
    """A PostgreSQL database through psycopg 3 (the ``postgres`` extra), one connection in
    autocommit mode with explicit transactions and ``synchronous_commit=on`` (a commit returns
    once its WAL is flushed on the server, whatever the server's default). The password is the
    target's (from a file or the environment), else libpq's own (``PGPASSWORD``,
    ``~/.pgpass``). A connection the server dropped (a restart, a killed backend) is opened
    again at the next transaction or statement outside one: the statement that met the break
    fails (as a StoreError), the ones after it run on the new connection."""

    id_type = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    real_type = "DOUBLE PRECISION"

    def __init__(self, target: PostgresTarget) -> None:
        self.label = target.display
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError(
                f"--db {self.label}: PostgreSQL needs the 'postgres' extra "
                f"(pip install 'dlsched[postgres]'): {exc}"
            ) from exc
        self.integrity_error = psycopg.IntegrityError
        self._target = target
        self._in_tx = False
        self._db: psycopg.Connection[Any] = self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        import psycopg

        extra: dict[str, Any] = {}
        if self._target.password is not None:
            extra["password"] = self._target.password
        try:
            db = psycopg.connect(self._target.url, autocommit=True, **extra)
            db.execute("SET synchronous_commit TO on")
        except psycopg.OperationalError as exc:
            raise StoreError(f"{self.label}: cannot connect: {exc}") from exc
        return db

    def _usable(self) -> None:
        """Open the connection again if the server dropped it (never inside a transaction:
        that one is lost and its error already raised)."""
        if not self._in_tx and (self._db.broken or self._db.closed):
            self._db = self._connect()

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("%", "%%").replace("?", "%s")

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows:
        self._usable()
        return self._db.execute(self._sql(sql), args)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._db.cursor() as cur:
            cur.executemany(self._sql(sql), rows)

    def begin_write(self) -> None:
        self._usable()
        self._db.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        self._in_tx = True
        try:
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITER_LOCK,))
        except BaseException:
            self.rollback()
            raise

    def begin_read(self) -> None:
        self._usable()
        self._db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        self._in_tx = True

    def commit(self) -> None:
        try:
            self._db.execute("COMMIT")
        finally:
            self._in_tx = False

    def rollback(self) -> None:
        try:
            self._db.execute("ROLLBACK")
        finally:
            self._in_tx = False

    def columns(self, table: str) -> list[str]:
        rows = self._db.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s",
            (table,),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def create_schema(self, tables: Sequence[str]) -> None:
        for statement in tables:
            self._db.execute(self._sql(statement))
        self._db.execute(
            "CREATE OR REPLACE FUNCTION dlsched_events_append_only() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ BEGIN "
            f"RAISE EXCEPTION '{APPEND_ONLY}' USING ERRCODE = 'restrict_violation'; "
            "END $$"
        )
        # Dropped and made again (rather than IF NOT EXISTS, which triggers lack before
        # PostgreSQL 14) under the writer lock, so concurrent openings cannot collide.
        for name, when, each in (
            ("events_no_update_delete", "UPDATE OR DELETE", "ROW"),
            ("events_no_truncate", "TRUNCATE", "STATEMENT"),
        ):
            self._db.execute(f"DROP TRIGGER IF EXISTS {name} ON events")
            self._db.execute(
                f"CREATE TRIGGER {name} BEFORE {when} ON events FOR EACH {each} "
                "EXECUTE FUNCTION dlsched_events_append_only()"
            )

    def storage_error(self, exc: Exception) -> StoreError | None:
        import psycopg

        if isinstance(exc, psycopg.errors.DiskFull):
            return StoreFullError(f"{self.label}: the database server's disk is full ({exc})")
        if isinstance(exc, psycopg.OperationalError):
            return StoreError(f"{self.label}: the database cannot be written: {exc}")
        return None

    def close(self) -> None:
        self._db.close()


def _identity(path: os.PathLike[str] | str) -> tuple[int, int]:
    """The (device, inode) of the file at ``path``."""
    st = os.stat(path)
    return st.st_dev, st.st_ino


def open_dialect(target: StoreTarget) -> Dialect:
    """Connect to the store database ``target`` names."""
    if isinstance(target, PostgresTarget):
        return PostgresDialect(target)
    return SqliteDialect(target)
