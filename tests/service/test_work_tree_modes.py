"""The service's work tree is private, as documented: every directory it creates has mode
0700 and every file 0600, whatever the umask. A real service (local back end) is started,
runs a job to its end, and the whole tree under the store's directory is walked."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import httpx

from dlsched.service.server import ServiceConfig
from tests.service.helpers import serving


def test_every_directory_is_0700_and_every_file_0600(tmp_path: Path) -> None:
    root = tmp_path / "svc"
    config = ServiceConfig(
        cluster="1x2",
        backend="local",
        db=root / "state.db",
        round_s=0.2,
        poll_s=0.05,
    )
    old = os.umask(0o022)  # the usual umask, which would give 0755 and 0644
    try:
        with serving(config) as (url, service):
            auth = {"Authorization": f"Bearer {service.token}"}
            r = httpx.post(
                f"{url}/jobs", json={"name": "t", "gpus": 1, "command": ["true"]}, headers=auth
            )
            assert r.status_code == 201, r.text
            deadline = time.monotonic() + 30
            state = ""
            while time.monotonic() < deadline:
                state = httpx.get(f"{url}/jobs/j1", headers=auth).json()["state"]
                if state == "COMPLETED":
                    break
                time.sleep(0.05)
            assert state == "COMPLETED"
    finally:
        os.umask(old)
    seen = {"dirs": 0, "files": 0}
    bad = []
    for here, _dirs, files in os.walk(root):
        mode = stat.S_IMODE(Path(here).stat().st_mode)
        seen["dirs"] += 1
        if mode != 0o700:
            bad.append(f"{here}: {mode:o}")
        for name in files:
            path = Path(here) / name
            seen["files"] += 1
            mode = stat.S_IMODE(path.lstat().st_mode)
            if mode != 0o600:
                bad.append(f"{path}: {mode:o}")
    assert not bad, bad
    # The store, its token, service-id, the job's log and exit file at least.
    names = {p.name for p in root.rglob("*")}
    assert {"state.db", "state.db.token", "service-id", "log.txt", "j1.1"} <= names, names
    assert seen["dirs"] >= 4
