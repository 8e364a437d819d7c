"""Running the training script as the service runs it: a real subprocess with its environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

TRAIN = [sys.executable, "-m", "dlsched.workloads.train"]


def job_env(workdir: Path, **extra: str) -> dict[str, str]:
    """The contract environment for a job in ``workdir``, without any inherited DLSCHED_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLSCHED_")}
    env.update(
        OMP_NUM_THREADS="1",
        DLSCHED_JOB_ID="job-1",
        DLSCHED_WORKDIR=str(workdir),
        DLSCHED_CHECKPOINT_DIR=str(workdir / "ckpt"),
        DLSCHED_STATUS_FILE=str(workdir / "status.json"),
        DLSCHED_NODE="node-3",
        CUDA_VISIBLE_DEVICES="4,5",
        DLSCHED_NUM_GPUS="2",
    )
    env.update(extra)
    return env


def start(args: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.Popen[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [*TRAIN, *args],
        env=dict(env),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(
    args: list[str], env: Mapping[str, str], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [*TRAIN, *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def wait_for_status(
    path: Path,
    until: Callable[[dict[str, Any]], bool],
    proc: subprocess.Popen[str],
    timeout: float = 300,
) -> list[dict[str, Any]]:
    """Poll the status file until ``until(status)``; returns every distinct status seen."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            status = json.loads(path.read_text())
            if not seen or status != seen[-1]:
                seen.append(status)
            if until(status):
                return seen
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"job exited with {proc.returncode}: {err}")
        time.sleep(0.05)
    raise AssertionError(f"status never satisfied the condition; last {seen[-1:]}")
