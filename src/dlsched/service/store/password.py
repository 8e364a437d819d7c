"""Where the service's PostgreSQL password comes from: never its command line.

A process's argv is readable by every user of the machine (``ps``, ``/proc/<pid>/cmdline``), so
a ``--db`` URL holding a password is refused. The password is read, in this order, from
``--db-password-file`` (a file only its owner may read: mode 0600 or 0400), from
``$DLSCHED_DB_PASSWORD``, or left to libpq (``$PGPASSWORD``, ``~/.pgpass``).
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from dlsched.service.store.url import PostgresTarget, StoreTarget

PASSWORD_VAR = "DLSCHED_DB_PASSWORD"
_ADVICE = (
    "use --db-password-file FILE (mode 0600) or the DLSCHED_DB_PASSWORD / PGPASSWORD environment"
)


class PasswordError(ValueError):
    """A password given where it is visible, or a password file that cannot be used (one line
    naming the option)."""


def check_no_url_password(target: StoreTarget) -> None:
    """PasswordError if ``target`` is a PostgreSQL URL holding a password (it would be in the
    service's argv)."""
    if isinstance(target, PostgresTarget) and target.has_url_password:
        raise PasswordError(
            f"--db {target.display}: a password in the URL is visible to every user in the "
            f"process list; {_ADVICE}"
        )


def read_password_file(path: Path) -> str:
    """The first line of ``path``; PasswordError unless it is a regular file that neither its
    group nor others may read or write, and holds a non-empty first line."""
    option = "--db-password-file"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise PasswordError(f"{option} {path}: cannot open: {exc.strerror}") from None
    with os.fdopen(fd, encoding="utf-8") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise PasswordError(f"{option} {path}: not a regular file")
        if st.st_mode & 0o077:
            raise PasswordError(
                f"{option} {path}: mode {stat.S_IMODE(st.st_mode):04o} lets others read it; "
                f"chmod 600 {path}"
            )
        line = handle.readline().rstrip("\r\n")
    if not line:
        raise PasswordError(f"{option} {path}: the first line (the password) is empty")
    return line


def with_password(
    target: StoreTarget, password_file: Path | None, environ: Mapping[str, str] = os.environ
) -> StoreTarget:
    """``target`` with its password from ``password_file`` or ``$DLSCHED_DB_PASSWORD`` (module
    docstring; a URL's own password, allowed in a configuration built in-process, is
    overridden); PasswordError if a file is given for a SQLite store. The command line refuses
    URL passwords first (:func:`check_no_url_password`)."""
    if not isinstance(target, PostgresTarget):
        if password_file is not None:
            raise PasswordError("--db-password-file: applies only to a postgresql:// --db")
        return target
    if password_file is not None:
        return dataclasses.replace(target, password=read_password_file(password_file))
    if environ.get(PASSWORD_VAR):
        return dataclasses.replace(target, password=environ[PASSWORD_VAR])
    return target
