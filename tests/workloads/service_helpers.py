"""A real ``dlsched serve`` subprocess on 127.0.0.1 and a small JSON client for tests."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Service:
    url: str
    token: str
    proc: subprocess.Popen[bytes]
    jobs_root: Path

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return json.load(r)

    def send(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        req = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def submit(self, name: str, gpus: int, seconds: float, command: list[str] | None = None) -> str:
        """Submit a job expected to run ``seconds`` (a ``sleep`` unless ``command`` is given)."""
        body = {
            "name": name,
            "user": "alice" if gpus % 2 else "bob",
            "gpus": gpus,
            "command": command or ["sleep", str(seconds)],
            "expected_duration_s": seconds,
        }
        job_id: str = self.send("POST", "/jobs", body)["id"]
        return job_id

    def wait(
        self, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 60
    ) -> list[dict[str, Any]]:
        """Poll ``GET /jobs`` until ``done(jobs)``; returns those jobs."""
        deadline = time.monotonic() + timeout
        jobs: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            jobs = self.get("/jobs")
            if done(jobs):
                return jobs
            time.sleep(0.1)
        raise AssertionError(f"service never reached the expected state: {jobs}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextmanager
def running_service(tmp_path: Path, backend: str, cluster: str, policy: str) -> Iterator[Service]:
    """Start ``dlsched serve`` with its store in ``tmp_path`` on a free port; stop it after."""
    db = tmp_path / "state.db"
    out = tmp_path / "serve.out"
    cmd = [sys.executable, "-m", "dlsched.cli.main", "serve", "--backend", backend]
    cmd += ["--cluster", cluster, "--policy", policy, "--db", str(db), "--port", "0"]
    cmd += ["--round", "0.5"]
    with open(out, "wb") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, cwd=tmp_path)
    service = None
    try:
        deadline = time.monotonic() + 120
        while not (m := re.search(r"service at (http://\S+?)/?\s", out.read_text())):
            assert proc.poll() is None, out.read_text()
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.1)
        token = (tmp_path / "state.db.token").read_text().strip()
        service = Service(m.group(1), token, proc, tmp_path / "state.db.jobs" / "jobs")
        yield service
    finally:
        if service is not None:
            service.stop()
        elif proc.poll() is None:
            proc.kill()
            proc.wait()
