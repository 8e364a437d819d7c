"""A real Slurm cluster on loopback, started from scratch for tests and benches.

:class:`SlurmCluster` writes a munge key, ``slurm.conf`` and ``gres.conf`` into a directory,
starts ``munged``, ``slurmctld`` and one ``slurmd -N <node>`` per node (each on its own port,
``NodeAddr=127.0.0.1``, ``SlurmdParameters=config_overrides`` so nodes may declare more CPUs and
GPUs than the host has), and waits until every node is idle. The fake GPUs are symlinks to
``/dev/null`` (Slurm accepts only character devices as GRES files). Every daemon runs in the
foreground as a child of this process and is stopped by its PID; job processes left behind are
found by the ``SLURM_CONF`` of this cluster in their environment and killed. Nothing is
installed: :func:`missing_tools` names what is absent and :class:`SlurmUnavailable` says which
command installs it.

Client commands (``sbatch``, ``squeue``, ...) find this cluster through :attr:`SlurmCluster.env`
(``SLURM_CONF``)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from dlsched.backends.procfs import marked_processes
from dlsched.testing.slurm_accounting import (
    ACCOUNTING_INSTALL_HINT,
    AccountingStore,
    missing_accounting_tools,
    sacctmgr_setup,
)

INSTALL_HINT = "apt-get install -y slurm-wlm munge"
REQUIRED_TOOLS = (
    "munged",
    "slurmctld",
    "slurmd",
    "sbatch",
    "squeue",
    "sinfo",
    "scancel",
    "scontrol",
)
PARTITION = "gpu"


class SlurmUnavailable(RuntimeError):
    """Slurm or munge is not installed, or the cluster did not come up."""


def missing_tools() -> list[str]:
    """The Slurm and munge commands not found on ``PATH`` (plus ``/usr/sbin``)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    return [tool for tool in REQUIRED_TOOLS if shutil.which(tool, path=path) is None]


@dataclass(frozen=True, slots=True)
class FakeNode:
    """One fake node: ``gpus`` GPUs of type ``gpu_type`` and ``cpus`` CPUs."""

    name: str
    gpu_type: str
    gpus: int
    cpus: int = 16


DEFAULT_NODES = (
    FakeNode("sn1", "a100", 4),
    FakeNode("sn2", "a100", 4),
    FakeNode("sn3", "v100", 2),
)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tool(name: str) -> str:
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    found = shutil.which(name, path=path)
    if found is None:
        raise SlurmUnavailable(f"{name} not found; install Slurm with: {INSTALL_HINT}")
    return found


def _current_user() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


class SlurmCluster:
    """A Slurm controller and fake GPU nodes under ``directory`` (a new temp directory when
    None), as a context manager: ``with SlurmCluster() as cluster: ...`` starts it and stops
    every daemon and job on exit. ``kill_wait_s`` is Slurm's ``KillWait`` (SIGTERM to SIGKILL
    on cancel); ``min_job_age_s`` its ``MinJobAge`` (how long ``squeue`` still lists a finished
    job); ``slurmd_timeout_s`` its ``SlurmdTimeout`` (how long an unresponsive node stays up
    before Slurm sets it DOWN); ``extra_conf`` lines are appended to ``slurm.conf`` (e.g. the
    ``Priority*`` parameters or more partitions). With ``accounts`` (account name -> fair-share
    shares) the cluster also runs an accounting store (a throwaway MariaDB and ``slurmdbd``, see
    :mod:`dlsched.testing.slurm_accounting`) and registers the current user in every account."""

    def __init__(
        self,
        nodes: Sequence[FakeNode] = DEFAULT_NODES,
        directory: Path | None = None,
        kill_wait_s: int = 2,
        min_job_age_s: int = 600,
        start_timeout_s: float = 30.0,
        slurmd_timeout_s: int = 300,
        extra_conf: Sequence[str] = (),
        accounts: Mapping[str, int] | None = None,
    ) -> None:
        if len({n.name for n in nodes}) != len(nodes):
            raise ValueError("fake node names must be unique")
        self.nodes = tuple(nodes)
        self._own_dir = directory is None
        self.directory = Path(directory or tempfile.mkdtemp(prefix="dlsched-slurm-"))
        self.kill_wait_s = kill_wait_s
        self.min_job_age_s = min_job_age_s
        self.start_timeout_s = start_timeout_s
        self.slurmd_timeout_s = slurmd_timeout_s
        self.extra_conf = tuple(extra_conf)
        self.conf = self.directory / "slurm.conf"
        self.munge_socket = self.directory / "munge" / "munge.socket"
        self._procs: list[subprocess.Popen[bytes]] = []
        self.accounts = dict(accounts) if accounts is not None else None
        self.accounting = (
            AccountingStore(self.directory, _free_port(), _free_port())
            if accounts is not None
            else None
        )

    @property
    def env(self) -> dict[str, str]:
        """The environment for Slurm client commands aimed at this cluster."""
        env = dict(os.environ)
        env["SLURM_CONF"] = str(self.conf)
        return env

    # ---- configuration -------------------------------------------------------------------
    def _write_files(self) -> None:
        d = self.directory
        for sub in ("munge", "state", "spool", "log", "dev"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(d / "munge", 0o700)
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        ctld_port = _free_port()
        lines = [
            "ClusterName=dlsched",
            f"SlurmctldHost={socket.gethostname()}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool' / '%n'}",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'slurmd.%n.pid'}",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'log' / 'slurmd.%n.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "GresTypes=gpu",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_interval=1",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            f"KillWait={self.kill_wait_s}",
            f"MinJobAge={self.min_job_age_s}",
            "JobAcctGatherType=jobacct_gather/none",
            *(
                self.accounting.slurm_conf_lines(self.munge_socket)
                if self.accounting
                else ["AccountingStorageType=accounting_storage/none"]
            ),
            "JobCompType=jobcomp/none",
            "InactiveLimit=0",
            f"SlurmdTimeout={self.slurmd_timeout_s}",
            "MessageTimeout=10",
        ]
        gres = []
        for node in self.nodes:
            devdir = d / "dev" / node.name
            devdir.mkdir(parents=True, exist_ok=True)
            for i in range(node.gpus):
                link = devdir / f"nvidia{i}"
                if not link.is_symlink():
                    link.symlink_to("/dev/null")
            lines.append(
                f"NodeName={node.name} NodeAddr=127.0.0.1 Port={_free_port()} "
                f"CPUs={node.cpus} RealMemory=4096 Gres=gpu:{node.gpu_type}:{node.gpus} "
                "State=UNKNOWN"
            )
            if node.gpus:
                last = node.gpus - 1
                gres.append(
                    f"NodeName={node.name} Name=gpu Type={node.gpu_type} "
                    f"File={devdir}/nvidia[0-{last}]"
                )
        lines.append(f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        lines.extend(self.extra_conf)
        self.conf.write_text("\n".join(lines) + "\n")
        (d / "gres.conf").write_text("\n".join(gres) + "\n")
        os.chmod(self.conf, 0o644)

    # ---- processes -----------------------------------------------------------------------
    def _spawn(self, args: list[str], log_name: str) -> subprocess.Popen[bytes]:
        with open(self.directory / "log" / log_name, "ab") as log:
            proc = subprocess.Popen(
                args,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._procs.append(proc)
        return proc

    def start(self) -> SlurmCluster:
        """Write the configuration, start every daemon and wait until all nodes are idle."""
        missing = missing_tools()
        if missing:
            raise SlurmUnavailable(
                f"missing {', '.join(missing)}; install Slurm with: {INSTALL_HINT}"
            )
        if self.accounting is not None and missing_accounting_tools():
            raise SlurmUnavailable(
                f"missing {', '.join(missing_accounting_tools())}; install with: "
                f"{ACCOUNTING_INSTALL_HINT}"
            )
        self._write_files()
        munge = self.directory / "munge"
        try:
            self._spawn(
                [
                    _tool("munged"),
                    "--foreground",
                    "--force",
                    f"--socket={self.munge_socket}",
                    f"--key-file={munge / 'munge.key'}",
                    f"--pid-file={munge / 'munged.pid'}",
                    f"--seed-file={munge / 'munged.seed'}",
                    f"--log-file={self.directory / 'log' / 'munged.log'}",
                ],
                "munged.out",
            )
            self._wait(lambda: self.munge_socket.exists(), "munged to open its socket")
            if self.accounting is not None:
                self._start_accounting(self.accounting)
            self._spawn([_tool("slurmctld"), "-D", "-c", "-f", str(self.conf)], "slurmctld.out")
            self._wait(self._controller_up, "slurmctld to answer")
            for node in self.nodes:
                self._spawn(
                    [_tool("slurmd"), "-D", "-N", node.name, "-f", str(self.conf)],
                    f"slurmd.{node.name}.out",
                )
            self._wait(self._nodes_idle, "every node to be idle")
        except BaseException:
            self.stop()
            raise
        return self

    def _start_accounting(self, store: AccountingStore) -> None:
        store.prepare(self.munge_socket)
        self._spawn(store.mariadbd_args(), "mariadbd.out")
        self._wait(store.database_up, "MariaDB to answer")
        store.create_database_user()
        self._spawn(store.slurmdbd_args(), "slurmdbd.out")
        self._wait(self._dbd_up, "slurmdbd to answer")
        for command in sacctmgr_setup(self.accounts or {}, _current_user()):
            self.run(*command)

    def _dbd_up(self) -> bool:
        return self.run("sacctmgr", "-n", "show", "cluster", check=False).returncode == 0

    def _check_alive(self) -> None:
        for proc in self._procs:
            if proc.poll() is not None:
                program = Path(str(proc.args[0] if isinstance(proc.args, list) else proc.args))
                raise SlurmUnavailable(
                    f"{program.name} exited with code {proc.returncode}; see the logs in "
                    f"{self.directory / 'log'}"
                )

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while not ready():
            self._check_alive()
            if time.monotonic() > deadline:
                raise SlurmUnavailable(
                    f"timed out after {self.start_timeout_s:.0f} s waiting for {what}; see the "
                    f"logs in {self.directory / 'log'}"
                )
            time.sleep(0.1)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command against this cluster."""
        return subprocess.run(
            list(args), env=self.env, capture_output=True, text=True, check=check, timeout=30
        )

    def _controller_up(self) -> bool:
        return self.run("scontrol", "ping", check=False).returncode == 0

    def _nodes_idle(self) -> bool:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
        if out.returncode != 0:
            return False
        states = dict(line.split() for line in out.stdout.splitlines() if line.strip())
        return all(states.get(n.name) == "idle" for n in self.nodes)

    def set_node_state(self, node: str, state: str, reason: str = "dlsched test") -> None:
        """``scontrol update`` a node's state (``drain``, ``down``, ``resume``, ...)."""
        args = ["scontrol", "update", f"NodeName={node}", f"State={state}"]
        if state.lower() in ("drain", "down", "fail"):
            args.append(f"Reason={reason}")
        self.run(*args)

    def kill_node(self, name: str) -> list[int]:
        """Crash node ``name``: SIGKILL its ``slurmd``, the step daemons of the jobs Slurm runs
        there and those jobs' processes, as a power loss would (Slurm learns of it only when
        the node stops answering its pings). Returns the ids of the jobs that were there."""
        listed = self.run("squeue", "-h", "-w", name, "-o", "%i", check=False).stdout.split()
        jobs = [int(j) for j in listed if j.isdigit()]
        for proc in self._procs:
            args = proc.args if isinstance(proc.args, list) else []
            if "-N" in args and args[args.index("-N") + 1] == name and proc.poll() is None:
                proc.kill()
                proc.wait()
        steps = tuple(f"slurmstepd: [{j}.".encode() for j in jobs)
        groups = marked_processes("SLURM_CONF", str(self.conf), "SLURM_JOB_ID")
        doomed = [st.pid for j in jobs for st in groups.get(str(j), [])]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if steps and (entry / "cmdline").read_bytes().startswith(steps):
                        doomed.append(int(entry.name))
        for pid in doomed:
            if pid != os.getpid():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        return jobs

    def cancel_all(self, timeout_s: float = 20.0) -> None:
        """Cancel every job of this cluster (SIGTERM, SIGKILL after ``KillWait``) and wait
        until the queue is empty."""
        self.run("scancel", f"--partition={PARTITION}", check=False)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            out = self.run("squeue", "-h", "-o", "%i", check=False)
            if out.returncode != 0 or not out.stdout.strip():
                return
            time.sleep(0.2)

    def stop(self) -> None:
        """Cancel every job, stop every daemon by PID (SIGTERM, then SIGKILL), and kill any
        process still carrying this cluster's ``SLURM_CONF`` (job steps)."""
        if any(p.poll() is None for p in self._procs) and self._controller_up():
            self.cancel_all()
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self._procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        conf = str(self.conf)
        for stats in marked_processes("SLURM_CONF", conf, "SLURM_CONF").values():
            for st in stats:
                if st.pid == os.getpid():
                    continue
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(st.pid, signal.SIGKILL)
        if self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def last_decay_pass(self) -> int | None:
        """When the last decay pass of ``priority/multifactor`` started (Unix seconds), read
        from ``priority_last_decay_ran`` in the state directory, which slurmctld rewrites at
        the end of every pass (two big-endian 64-bit times: that pass and the last usage
        reset). None before the first pass, without that plugin, or while the file is being
        replaced (slurmctld unlinks it before linking the new one)."""
        try:
            data = (self.directory / "state" / "priority_last_decay_ran").read_bytes()
        except FileNotFoundError:
            return None
        return int.from_bytes(data[:8], "big") if len(data) >= 8 else None

    def node_map(self) -> Mapping[str, FakeNode]:
        return {n.name: n for n in self.nodes}
