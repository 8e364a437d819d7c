"""Start the real service as a subprocess (``python -m dlsched.cli.main serve``) and stop it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dlsched.backends.jobfiles import INSTANCE_VAR, REQUEST_VAR
from dlsched.backends.procfs import marked_processes


class ServiceProcess:
    """One run of ``dlsched serve`` on ``db``; :attr:`url` once it is listening."""

    def __init__(self, db: Path, *args: str) -> None:
        self.db = db
        self.log = db.with_name(f"serve-{time.monotonic_ns()}.log")
        self.url = ""
        out = open(self.log, "a")  # noqa: SIM115 - the child keeps writing after we return
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dlsched.cli.main",
                "serve",
                "--db",
                str(db),
                "--port",
                "0",
                *args,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        out.close()

    def wait_ready(self, timeout: float = 60.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for line in self.log.read_text().splitlines():
                if line.startswith("dlsched service at "):
                    self.url = line.split()[-1].rstrip("/")
                    return self.url
            if self.proc.poll() is not None:
                raise AssertionError(f"service exited early:\n{self.log.read_text()}")
            time.sleep(0.1)
        raise AssertionError(f"service not ready:\n{self.log.read_text()}")

    def kill9(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def kill_jobs_of(instance: str) -> int:
    """SIGKILL every job process group the service instance left behind; how many."""
    groups = marked_processes(INSTANCE_VAR, instance, REQUEST_VAR)
    for stats in groups.values():
        for st in stats:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(st.pgid, signal.SIGKILL)
    return len(groups)
