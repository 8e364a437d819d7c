"""A throwaway PostgreSQL server on loopback for the store tests.

The cluster lives in a fresh directory under the system temp dir (``initdb`` refuses to run as
root, so as root it belongs to and runs as the ``postgres`` user, else ``nobody``), listens on
127.0.0.1 at a free port with its unix socket in that directory, and requires a password over
TCP (scram-sha-256), so the tests pass a full ``postgresql://user:password@host:port/db`` URL.
Durability is turned off (fsync, synchronous_commit): the data is thrown away.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

USER = "dlsched"


def server_bin_dir() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl`` (Debian keeps them off PATH under
    /usr/lib/postgresql/<version>/bin; the newest version wins), or None if absent."""
    found = sorted(
        (Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")),
        key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1]
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")


class PostgresServer:
    """One PostgreSQL cluster; :meth:`new_database` gives each test its own database."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.password = secrets.token_hex(8)
        self.port = 0
        self._count = 0
        self._user = _run_as()
        self.root = Path(tempfile.mkdtemp(prefix="dlsched-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"

    def _cmd(self, *args: str) -> list[str]:
        if self._user is None:
            return list(args)
        return ["runuser", "-u", self._user.pw_name, "--", *args]

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            self._cmd(*args), capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(
                f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}{log}"
            )

    def start(self) -> None:
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if self._user is not None:
            for path in (self.root, pwfile):
                os.chown(path, self._user.pw_uid, self._user.pw_gid)
        self._run(
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            USER,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        )
        # The port is free when picked, not when bound: try again if another process took it.
        for attempt in range(3):
            self.port = _free_port()
            options = self._options()
            try:
                self._run(
                    str(self.bin_dir / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.log),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    "60",
                    "start",
                )
                return
            except RuntimeError:
                if attempt == 2:
                    raise

    def _options(self) -> str:
        return (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )

    def kill9_and_restart(self, down_s: float = 0.0) -> None:
        """SIGKILL the postmaster, wait ``down_s`` seconds, and start the server again on the
        same port (crash recovery replays its WAL); retried while the killed server's
        processes still hold its shared memory."""
        import signal
        import time

        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        time.sleep(down_s)
        for attempt in range(20):
            try:
                self._run(
                    str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
                    "-o", self._options(), "-w", "-t", "60", "start",
                )  # fmt: skip
                return
            except RuntimeError:
                if attempt == 19:
                    raise
                time.sleep(0.5)

    def url(self, dbname: str) -> str:
        return f"postgresql://{USER}:{self.password}@127.0.0.1:{self.port}/{dbname}"

    def bare_url(self, url: str) -> str:
        """``url`` (one of :meth:`url`) without its password, as a service's ``--db``."""
        return url.replace(f":{self.password}@", "@")

    def new_database(self) -> str:
        """A new empty database; its URL."""
        import psycopg

        self._count += 1
        name = f"t{self._count}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as db:
            db.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
