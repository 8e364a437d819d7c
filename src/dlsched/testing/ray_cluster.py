"""A real multi-node Ray cluster on this machine, for tests and benchmarks: a head and
workers started with ``ray start`` inside fresh network and PID namespaces (``unshare -n -p``),
so Ray binds to loopback only (it never reaches for an outside address) and every process it
started dies with the namespace when the script ends. Needs root (or user namespaces)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
PORT = 6379


def have_ray_and_namespaces() -> str | None:
    """Why a Ray cluster cannot be started here, or None if it can."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed (pip install 'dlsched[ray]')"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is missing"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"cannot create a network namespace: {probe.stderr.decode().strip()}"
    return None


def run_with_ray_cluster(command: list[str], gpus: tuple[int, ...] = (4, 2, 1)) -> str:
    """Start one Ray node per entry of ``gpus`` (the first is the head; fake GPU counts), run
    ``command`` against it (``RAY_ADDRESS`` is set), tear everything down and return the
    command's output. Raises CalledProcessError with the output if anything fails."""
    common = (
        "--node-ip-address=127.0.0.1 --num-cpus=1 --object-store-memory=200000000 "
        "--disable-usage-stats"
    )
    lines = [
        "set -eu",
        "ip link set lo up",
        "export RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled",
        f"export RAY_ADDRESS=127.0.0.1:{PORT}",
        "T=$(mktemp -d /tmp/rayXXXXXX)",
        f"{BIN}/ray start --head --port={PORT} --include-dashboard=false --temp-dir=$T "
        f"--num-gpus={gpus[0]} {common} >/dev/null",
    ]
    for count in gpus[1:]:
        lines.append(
            f"{BIN}/ray start --address=127.0.0.1:{PORT} --num-gpus={count} {common} >/dev/null"
        )
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
