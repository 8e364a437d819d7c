"""Slurm's client commands, called with subprocess, and what their JSON says.

Written against Slurm 22.05 (Debian ``slurm-wlm``), whose ``squeue --json`` and ``sinfo --json``
print ``{"jobs": [...]}`` and ``{"nodes": [...]}`` (the Python binding ``pyslurm`` does not
support this version). :class:`SlurmCommands` runs the commands with a fixed environment (which
carries ``SLURM_CONF`` when the cluster is not the system's); :func:`read_queue` and
:func:`read_inventory` turn their output into small typed records, and :func:`inventory_cluster`
turns an inventory into the :class:`~dlsched.cluster.spec.ClusterSpec` the scheduler plans on.

``python -m dlsched.backends.slurm_cli cluster.toml [--only-available]`` writes the cluster file
of the Slurm cluster that ``$SLURM_CONF`` names, for ``dlsched serve --backend slurm --cluster
cluster.toml``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.cluster.spec import DEFAULT_GPU_TYPE, DEFAULT_PARTITION, ClusterSpec, NodeSpec
from dlsched.cluster.toml_io import CLUSTER_FILE, write_cluster_toml
from dlsched.outdir import OutputError

UNAVAILABLE_STATES = frozenset({"down", "future", "unknown", "error"})
"""Base node states in which Slurm starts no job (lower case, as ``sinfo --json`` prints)."""
UNAVAILABLE_FLAGS = frozenset(
    {
        "DRAIN",
        "FAIL",
        "MAINTENANCE",
        "NOT_RESPONDING",
        "POWERED_DOWN",
        "POWERING_DOWN",
        "REBOOT_REQUESTED",
        "REBOOT_ISSUED",
    }
)
"""Node state flags that keep Slurm from starting new jobs on the node."""
LOST_STATES = frozenset({"down", "unknown", "error"})
LOST_FLAGS = frozenset({"NOT_RESPONDING", "FAIL"})


class SlurmCommandError(RuntimeError):
    """A Slurm command failed or printed something other than the expected JSON."""


@dataclass(frozen=True, slots=True)
class QueuedJob:
    """One job of ``squeue --json``: ``state`` is Slurm's ``job_state`` (``PENDING``,
    ``RUNNING``, ``COMPLETED``, ...), ``reason`` its ``state_reason``, ``restarts`` its
    ``restart_cnt`` (how often Slurm requeued it)."""

    job_id: int
    name: str
    state: str
    reason: str
    nodes: str
    restarts: int
    start_time: float | None
    exit_code: int | None


@dataclass(frozen=True, slots=True)
class SlurmNode:
    """One node of ``sinfo --json``: its GPUs (count and type from its ``gres``), its base
    ``state`` (lower case) and state ``flags`` (``DRAIN``, ...), and the admin's ``reason``."""

    name: str
    gpus: int
    gpu_type: str
    state: str
    flags: tuple[str, ...]
    reason: str
    partitions: tuple[str, ...]
    cpus: int | None
    memory_mib: int | None

    @property
    def lost(self) -> bool:
        """Whether Slurm has lost touch with the node (down, not responding, failing): jobs
        ending there may have died with it. A drained node is not lost."""
        return self.state in LOST_STATES or bool(LOST_FLAGS.intersection(self.flags))

    @property
    def available(self) -> bool:
        """Whether Slurm may start new jobs here (not down, drained, failing, ...)."""
        return self.state not in UNAVAILABLE_STATES and not (
            UNAVAILABLE_FLAGS.intersection(self.flags)
        )


class SlurmCommands:
    """Runs Slurm client commands with ``env`` (the current environment when None), each
    bounded by ``timeout_s``."""

    def __init__(self, env: Mapping[str, str] | None = None, timeout_s: float = 30.0) -> None:
        self.env = dict(os.environ if env is None else env)
        self.timeout_s = timeout_s

    def run(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        """Run ``args``; never raises for a non-zero exit (the caller reads ``returncode``).
        A missing command or a timeout is a :class:`SlurmCommandError`."""
        try:
            return subprocess.run(
                list(args),
                env=self.env,
                capture_output=True,
                text=True,
                check=False,
                timeout=self.timeout_s,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmCommandError(f"{args[0]}: {exc}") from exc

    def json(self, args: Sequence[str], key: str) -> list[dict[str, Any]]:
        """The list under ``key`` in the JSON that ``args`` prints."""
        done = self.run(args)
        if done.returncode != 0:
            raise SlurmCommandError(
                f"{' '.join(args)} exited with code {done.returncode}: {done.stderr.strip()}"
            )
        try:
            data = json.loads(done.stdout)
        except ValueError as exc:
            raise SlurmCommandError(f"{' '.join(args)} printed invalid JSON: {exc}") from exc
        items = data.get(key) if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise SlurmCommandError(f"{' '.join(args)}: expected a list under {key!r}")
        return [item for item in items if isinstance(item, dict)]


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _exit_code(value: Any) -> int | None:
    # 22.05 prints the raw wait status; later versions an object with a return code.
    if isinstance(value, dict):
        return _int(value.get("return_code"))
    raw = _int(value)
    return None if raw is None else (raw >> 8) & 0xFF


def parse_job(raw: Mapping[str, Any]) -> QueuedJob:
    """One ``squeue --json`` job record (22.05 layout; missing fields become defaults)."""
    state = raw.get("job_state", "")
    if isinstance(state, list):
        state = state[0] if state else ""
    start = _int(raw.get("start_time"))
    return QueuedJob(
        job_id=_int(raw.get("job_id")) or 0,
        name=str(raw.get("name", "")),
        state=str(state).upper(),
        reason=str(raw.get("state_reason", "") or ""),
        nodes=str(raw.get("nodes", "") or ""),
        restarts=_int(raw.get("restart_cnt")) or 0,
        start_time=float(start) if start else None,
        exit_code=_exit_code(raw.get("exit_code")),
    )


def read_queue(commands: SlurmCommands) -> list[QueuedJob]:
    """Every job ``squeue`` knows, finished ones included (until Slurm's ``MinJobAge``)."""
    return [parse_job(j) for j in commands.json(["squeue", "--json", "--states=all"], "jobs")]


def parse_gres(text: str) -> tuple[int, str]:
    """GPU count and type of a node's ``gres`` string (``gpu:a100:4(S:0)``, ``gpu:2``,
    ``gpu:a100:2,gpu:v100:2``; several types give the first type and the total count)."""
    total = 0
    gpu_type: str | None = None
    for item in text.split(","):
        parts = item.split("(", 1)[0].strip().split(":")
        if not parts or parts[0] != "gpu" or len(parts) < 2:
            continue
        try:
            count = int(parts[-1])
        except ValueError:
            continue
        total += count
        if len(parts) >= 3 and gpu_type is None:
            gpu_type = parts[1]
    return total, gpu_type or DEFAULT_GPU_TYPE


def parse_node(raw: Mapping[str, Any]) -> SlurmNode:
    """One ``sinfo --json`` node record."""
    gpus, gpu_type = parse_gres(str(raw.get("gres", "") or ""))
    flags = raw.get("state_flags") or []
    partitions = raw.get("partitions") or []
    return SlurmNode(
        name=str(raw.get("name", "")),
        gpus=gpus,
        gpu_type=gpu_type,
        state=str(raw.get("state", "")).lower(),
        flags=tuple(str(f).upper() for f in flags),
        reason=str(raw.get("reason", "") or ""),
        partitions=tuple(str(p) for p in partitions),
        cpus=_int(raw.get("cpus")),
        memory_mib=_int(raw.get("real_memory")),
    )


def read_inventory(commands: SlurmCommands) -> list[SlurmNode]:
    """Every node ``sinfo`` knows, in its order (one record per node, however many
    partitions it is in)."""
    nodes: dict[str, SlurmNode] = {}
    for raw in commands.json(["sinfo", "--json"], "nodes"):
        node = parse_node(raw)
        nodes.setdefault(node.name, node)
    return list(nodes.values())


def inventory_cluster(
    nodes: Sequence[SlurmNode], name: str = "slurm", only_available: bool = False
) -> ClusterSpec:
    """The cluster the scheduler plans on: one :class:`NodeSpec` per node with GPUs (in the
    partition of the node's first Slurm partition), leaving out unavailable nodes when
    ``only_available``."""
    specs = tuple(
        NodeSpec(
            n.name,
            n.gpus,
            n.gpu_type,
            n.partitions[0] if n.partitions else DEFAULT_PARTITION,
            cpus=n.cpus,
            memory_mib=n.memory_mib,
        )
        for n in nodes
        if n.gpus > 0 and (n.available or not only_available)
    )
    if not specs:
        raise ValueError("the Slurm inventory has no node with GPUs")
    return ClusterSpec(name, specs, description="read from sinfo --json", source="slurm")


def main(argv: Sequence[str] | None = None) -> int:
    """Write the cluster file of the current Slurm cluster (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="python -m dlsched.backends.slurm_cli",
        description="Write a dlsched cluster file from the Slurm inventory (sinfo --json).",
    )
    p.add_argument("out", type=Path, help="cluster file to write (.toml)")
    p.add_argument("--name", default="slurm", help="cluster name (default slurm)")
    p.add_argument("--only-available", action="store_true", help="leave out drained and down nodes")
    p.add_argument("--force", action="store_true", help="replace an existing cluster file")
    args = p.parse_args(argv)
    try:
        CLUSTER_FILE.check(args.out, args.force)
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        spec = inventory_cluster(read_inventory(SlurmCommands()), args.name, args.only_available)
    except (SlurmCommandError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    path = write_cluster_toml(spec, args.out)
    print(f"wrote {path}: {len(spec.nodes)} nodes, {spec.total_gpus} GPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
