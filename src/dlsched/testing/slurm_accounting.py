"""A throwaway Slurm accounting store for :class:`~dlsched.testing.slurm_cluster.SlurmCluster`:
a MariaDB server and ``slurmdbd``, both on loopback ports under the cluster's directory.

Slurm 22.05 computes the age and fair-share factors only with ``slurmdbd`` accounting. This
module writes the MariaDB data directory (``mariadb-install-db``) and ``slurmdbd.conf`` and
gives the command lines of the two daemons; the cluster starts them as its own children, before
``slurmctld``, and stops them with the rest. Nothing is installed: :func:`missing_accounting_tools`
names what is absent."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ACCOUNTING_INSTALL_HINT = "apt-get install -y slurmdbd mariadb-server"
ACCOUNTING_TOOLS = (
    "mariadb-install-db",
    "mariadbd",
    "mariadb",
    "slurmdbd",
    "sacctmgr",
    "sshare",
    "sprio",
)
DB_USER = "slurm"
DB_PASSWORD = "dlsched-test"
CLUSTER_NAME = "dlsched"


def _search_path() -> str:
    return os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"


def missing_accounting_tools() -> list[str]:
    """The MariaDB and slurmdbd commands not found on ``PATH`` (plus ``/usr/sbin``)."""
    return [tool for tool in ACCOUNTING_TOOLS if shutil.which(tool, path=_search_path()) is None]


def accounting_tool(name: str) -> str:
    """The full path of accounting command ``name``; ``FileNotFoundError`` naming the package
    to install when it is absent."""
    found = shutil.which(name, path=_search_path())
    if found is None:
        raise FileNotFoundError(f"{name} not found; install it with: {ACCOUNTING_INSTALL_HINT}")
    return found


@dataclass(frozen=True, slots=True)
class AccountingStore:
    """MariaDB on ``mysql_port`` and slurmdbd on ``dbd_port`` (both 127.0.0.1), with their
    files under ``directory`` (the cluster's directory, which also holds ``slurm.conf``:
    slurmdbd reads ``slurmdbd.conf`` next to it)."""

    directory: Path
    mysql_port: int
    dbd_port: int

    @property
    def datadir(self) -> Path:
        return self.directory / "mysql"

    @property
    def socket(self) -> Path:
        return self.directory / "mysql.sock"

    def slurm_conf_lines(self, munge_socket: Path) -> list[str]:
        """The ``slurm.conf`` lines pointing ``slurmctld`` and the client commands at this
        store (Slurm reads the munge socket for slurmdbd from ``AccountingStoragePass``)."""
        return [
            f"AccountingStoragePass={munge_socket}",
            "AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=127.0.0.1",
            f"AccountingStoragePort={self.dbd_port}",
        ]

    def prepare(self, munge_socket: Path) -> None:
        """Create the empty MariaDB data directory and write ``slurmdbd.conf`` (mode 600, as
        slurmdbd demands)."""
        subprocess.run(
            [
                accounting_tool("mariadb-install-db"),
                "--no-defaults",
                f"--datadir={self.datadir}",
                "--auth-root-authentication-method=normal",
                "--user=root",
                "--skip-test-db",
            ],
            capture_output=True,
            check=True,
            timeout=120,
        )
        log = self.directory / "log"
        conf = self.directory / "slurmdbd.conf"
        conf.write_text(
            "\n".join(
                [
                    "AuthType=auth/munge",
                    f"AuthInfo=socket={munge_socket}",
                    "DbdHost=localhost",
                    "DbdAddr=127.0.0.1",
                    f"DbdPort={self.dbd_port}",
                    "SlurmUser=root",
                    f"PidFile={self.directory / 'slurmdbd.pid'}",
                    f"LogFile={log / 'slurmdbd.log'}",
                    "StorageType=accounting_storage/mysql",
                    "StorageHost=127.0.0.1",
                    f"StoragePort={self.mysql_port}",
                    f"StorageUser={DB_USER}",
                    f"StoragePass={DB_PASSWORD}",
                    "StorageLoc=slurm_acct_db",
                ]
            )
            + "\n"
        )
        os.chmod(conf, 0o600)

    def mariadbd_args(self) -> list[str]:
        """The foreground MariaDB server, reachable on the socket and on loopback."""
        return [
            accounting_tool("mariadbd"),
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            f"--port={self.mysql_port}",
            "--bind-address=127.0.0.1",
            "--user=root",
            f"--pid-file={self.directory / 'mariadbd.pid'}",
            f"--log-error={self.directory / 'log' / 'mariadbd.log'}",
            "--innodb-buffer-pool-size=16M",
            "--skip-name-resolve",
        ]

    def _sql(self, statement: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                accounting_tool("mariadb"),
                "--no-defaults",
                f"--socket={self.socket}",
                "-uroot",
                "-e",
                statement,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )

    def database_up(self) -> bool:
        """Whether MariaDB answers on its socket."""
        return self.socket.exists() and self._sql("SELECT 1").returncode == 0

    def create_database_user(self) -> None:
        """The account slurmdbd logs in with, over loopback TCP."""
        out = self._sql(
            f"CREATE USER '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{DB_PASSWORD}'; "
            f"GRANT ALL ON *.* TO '{DB_USER}'@'127.0.0.1'"
        )
        if out.returncode != 0:
            raise RuntimeError(f"creating the slurmdbd database user failed: {out.stderr.strip()}")

    def slurmdbd_args(self) -> list[str]:
        """The foreground slurmdbd (it finds ``slurmdbd.conf`` through ``SLURM_CONF``)."""
        return [accounting_tool("slurmdbd"), "-D"]


def sacctmgr_setup(accounts: Mapping[str, int], user: str) -> list[list[str]]:
    """The ``sacctmgr -i`` command lines registering the cluster, one account per entry of
    ``accounts`` (name -> fair-share shares) and ``user`` in every account."""
    commands = [["sacctmgr", "-i", "add", "cluster", CLUSTER_NAME]]
    for name, shares in accounts.items():
        commands.append(
            [
                "sacctmgr",
                "-i",
                "add",
                "account",
                name,
                f"Cluster={CLUSTER_NAME}",
                f"Fairshare={shares}",
            ]
        )
        commands.append(["sacctmgr", "-i", "add", "user", user, f"Account={name}"])
    return commands
