"""A real ``dlsched serve`` subprocess on 127.0.0.1 (:class:`dlsched.testing.live_run.LiveService`)
and a small JSON client for tests."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.testing.live_run import LiveService


@dataclass
class Service:
    live: LiveService
    jobs_root: Path
    """The jobs' working directories (``<jobs_root>/<job id>``)."""

    @property
    def url(self) -> str:
        return self.live.url

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return json.load(r)

    def send(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.live.call(method, path, body)

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
        self.live.stop(timeout_s=15)


@contextmanager
def running_service(
    tmp_path: Path, backend: str, cluster: str, policy: str, *extra: str
) -> Iterator[Service]:
    """Start ``dlsched serve`` (with options ``extra`` too) with its store in ``tmp_path`` on a
    free port; stop it after."""
    args = ["--backend", backend, "--cluster", cluster, "--policy", policy, "--round", "0.5"]
    args += extra
    with LiveService(tmp_path, args) as live:
        yield Service(live, live.jobs_root / "jobs")
