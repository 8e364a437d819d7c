"""A real multi-node Ray cluster on this machine, for tests and benchmarks: a head and
workers started with ``ray start`` inside fresh network and PID namespaces (``unshare -n -p``),
so Ray binds to loopback only (it never reaches for an outside address) and every process it
started dies with the namespace when the script ends. Needs root (or user namespaces).

Two ways to use it: :func:`run_with_ray_cluster` runs one command against a throw-away cluster;
:class:`RayCluster` keeps a cluster up (a context manager) and runs any number of commands in its
namespaces (:meth:`RayCluster.run`, through ``nsenter``), and can remove a node mid-run
(:meth:`RayCluster.remove_node`, fault injection; from inside the namespaces:
:func:`remove_node_here`, and :func:`start_node_here` to bring it back). Its nodes carry
dlsched's identity resources (:data:`NODE_RESOURCE_PREFIX` + node name,
:data:`GPU_TYPE_RESOURCE_PREFIX` + GPU type), as a real cluster's nodes must for the Ray back
end (see :mod:`dlsched.backends.ray_backend`).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from dlsched.backends.ray_runner import (
    GPU_TYPE_RESOURCE_PREFIX,
    NODE_RESOURCE_AMOUNT,
    NODE_RESOURCE_PREFIX,
)

BIN = Path(sys.executable).parent
PORT = 6379
ADDRESS = f"127.0.0.1:{PORT}"
_COMMON = (
    "--node-ip-address=127.0.0.1 --num-cpus=1 --object-store-memory=200000000 --disable-usage-stats"
)
_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": ADDRESS}
# The head declares a lost node dead after ~3 missed 1 s health checks (Ray's default: ~15 s).
_HEAD_ENV = "RAY_health_check_period_ms=1000 RAY_health_check_failure_threshold=3"


def have_ray_and_namespaces() -> str | None:
    """Why a Ray cluster cannot be started here, or None if it can."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed (pip install 'dlsched[ray]')"
    for tool in ("unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} (util-linux) is missing"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"cannot create a network namespace: {probe.stderr.decode().strip()}"
    return None


def run_with_ray_cluster(command: list[str], gpus: tuple[int, ...] = (4, 2, 1)) -> str:
    """Start one Ray node per entry of ``gpus`` (the first is the head; fake GPU counts), run
    ``command`` against it (``RAY_ADDRESS`` is set), tear everything down and return the
    command's output. Raises CalledProcessError with the output if anything fails."""
    lines = [
        "set -eu",
        "ip link set lo up",
        "export RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled",
        f"export RAY_ADDRESS={ADDRESS}",
        "T=$(mktemp -d /tmp/rayXXXXXX)",
        f"{BIN}/ray start --head --port={PORT} --include-dashboard=false --temp-dir=$T "
        f"--num-gpus={gpus[0]} {_COMMON} >/dev/null",
    ]
    for count in gpus[1:]:
        lines.append(f"{BIN}/ray start --address={ADDRESS} --num-gpus={count} {_COMMON} >/dev/null")
    lines.append(" ".join(f"'{part}'" for part in command))
    script = "\n".join(lines) + "\n"
    result = subprocess.run(
        ["unshare", "-n", "-p", "-f", "--mount-proc", "bash", "-s"],
        input=script,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        raise subprocess.CalledProcessError(
            result.returncode, command, result.stdout, result.stderr
        )
    return result.stdout


@dataclass(frozen=True, slots=True)
class RayNode:
    """One node of a :class:`RayCluster`: its dlsched name, fake GPU count and GPU type."""

    name: str
    gpus: int
    gpu_type: str = "gpu"

    def resources(self) -> dict[str, float]:
        """The custom resources the node declares at ``ray start``."""
        out: dict[str, float] = {NODE_RESOURCE_PREFIX + self.name: NODE_RESOURCE_AMOUNT}
        if self.gpus:
            out[GPU_TYPE_RESOURCE_PREFIX + self.gpu_type] = self.gpus
        return out

    def start_args(self) -> str:
        return (
            f"--num-gpus={self.gpus} --resources={shlex.quote(json.dumps(self.resources()))} "
            f"{_COMMON}"
        )


class RayCluster:
    """A Ray cluster kept up in its own network, PID and mount namespaces: ``head`` first, then
    ``workers``. Use as a context manager; leaving it stops every process of the cluster (the
    namespace's first process exits, and the kernel kills the rest). Commands run inside with
    :meth:`run` see ``RAY_ADDRESS``, ``RAY_USAGE_STATS_ENABLED=0`` and ``RAY_AUTH_MODE=disabled``.
    """

    def __init__(self, head: RayNode, workers: Sequence[RayNode], timeout_s: float = 300.0):
        self.head = head
        self.workers = tuple(workers)
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen[str] | None = None
        self.init_pid: int | None = None
        """The host PID of the namespace's first process (the target of ``nsenter``)."""

    @property
    def nodes(self) -> tuple[RayNode, ...]:
        return (self.head, *self.workers)

    def _script(self) -> str:
        lines = [
            "set -eu",
            "ip link set lo up",
            *(f"export {k}={v}" for k, v in _ENV.items()),
            "T=$(mktemp -d /tmp/rayXXXXXX)",
            f"{_HEAD_ENV} {BIN}/ray start --head --port={PORT} --include-dashboard=false "
            f"--temp-dir=$T {self.head.start_args()} >/dev/null",
            *(
                f"{BIN}/ray start --address={ADDRESS} {w.start_args()} >/dev/null"
                for w in self.workers
            ),
            "echo READY",
            # Until the owner closes our stdin (or dies): then this, the namespace's first
            # process, exits and takes every Ray process with it.
            "cat >/dev/null || true",
        ]
        return "\n".join(lines) + "\n"

    def start(self, attempts: int = 2) -> None:
        """Start the nodes; returns once all have joined. A node that does not register within
        Ray's fixed 30 s (a busy machine) fails the start: the whole namespace is then torn
        down and started afresh, up to ``attempts`` times. Raises RuntimeError with Ray's
        output if the cluster does not come up."""
        for attempt in range(1, attempts + 1):
            error = self._start_once()
            if error is None:
                return
            if attempt == attempts:
                raise RuntimeError(f"the Ray cluster did not start: {error[-3000:]}")

    def _start_once(self) -> str | None:
        proc = subprocess.Popen(
            ["unshare", "-n", "-p", "-f", "--mount-proc", "bash", "-c", self._script()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._proc = proc
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != "READY":
            # Only the script's end closes its output before READY: stderr is complete.
            err = proc.stderr.read() if proc.stderr else ""
            self.stop()
            return line + err
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        self.init_pid = int(children[0])
        return None

    def run(
        self,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``command`` inside the cluster's namespaces and return its result (output
        captured; never raises for a nonzero exit)."""
        return subprocess.run(
            self._nsenter(command, cwd),
            env={**os.environ, **_ENV, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout_s or self.timeout_s,
            check=False,
        )

    def popen(
        self,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        **kwargs: object,
    ) -> subprocess.Popen[str]:
        """Start ``command`` inside the cluster's namespaces without waiting for it."""
        return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
            self._nsenter(command, cwd),
            env={**os.environ, **_ENV, **(env or {})},
            text=True,
            **kwargs,
        )

    def _nsenter(self, command: Sequence[str], cwd: Path | None) -> list[str]:
        if self.init_pid is None:
            raise RuntimeError("the Ray cluster is not running")
        # Entering the mount namespace resets the working directory unless it is named.
        wd = f"--wd={cwd or Path.cwd()}"
        return ["nsenter", "-t", str(self.init_pid), "-n", "-p", "-m", wd, "--", *command]

    def raylet_pid(self, name: str) -> int | None:
        """The host PID of node ``name``'s raylet (found by its identity resource), or None."""
        return next((pid for pid in raylet_pids(name) if self._in_cluster(pid)), None)

    def _in_cluster(self, pid: int) -> bool:
        try:
            return os.readlink(f"/proc/{pid}/ns/pid") == os.readlink(
                f"/proc/{self.init_pid}/ns/pid"
            )
        except OSError:
            return False

    def remove_node(self, name: str, timeout_s: float = 30.0) -> None:
        """Kill node ``name``'s raylet (SIGKILL, as a machine failure would): its workers, and
        the tasks and actors on it, die with it. Waits until the raylet is gone."""
        pid = self.raylet_pid(name)
        if pid is None:
            raise ValueError(f"no running raylet for node {name!r}")
        _kill_and_wait(pid, timeout_s)

    def stop(self) -> None:
        """Stop every process of the cluster and wait for the namespace to end."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            if self.init_pid is not None:
                os.kill(self.init_pid, signal.SIGKILL)
            proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        self.init_pid = None

    def __enter__(self) -> RayCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def raylet_pids(name: str) -> list[int]:
    """PIDs (as this process sees them) of the raylets that declare node ``name``'s identity
    resource."""
    mark = (NODE_RESOURCE_PREFIX + name).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.split(b"\0")[0].endswith(b"raylet") and mark in cmdline:
            found.append(int(entry.name))
    return found


def remove_node_here(name: str, timeout_s: float = 30.0) -> None:
    """:meth:`RayCluster.remove_node` for a process running inside the cluster's namespaces
    (:meth:`RayCluster.run` or :meth:`RayCluster.popen`), where only the cluster's processes
    are visible. Raises ValueError if no raylet declares node ``name``."""
    pids = raylet_pids(name)
    if len(pids) != 1:
        raise ValueError(f"expected one running raylet for node {name!r}, found {len(pids)}")
    _kill_and_wait(pids[0], timeout_s)


def _kill_and_wait(pid: int, timeout_s: float) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def start_node_here(node: RayNode, timeout_s: float = 120.0) -> None:
    """Start ``node`` again and join it to the cluster, from a process inside the cluster's
    namespaces (after :func:`remove_node_here`). Raises RuntimeError with Ray's output if
    ``ray start`` fails."""
    result = subprocess.run(
        [str(BIN / "ray"), "start", f"--address={ADDRESS}", *shlex.split(node.start_args())],
        env={**os.environ, **_ENV},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"ray start of {node.name} failed: {result.stderr[-3000:]}")
