"""Bounded resources: 1,100 idle connections neither stall the control loop nor keep the API
away for long, and repeated log messages are collapsed."""

from __future__ import annotations

import contextlib
import logging
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from dlsched.service.http_limits import HttpLimits
from dlsched.service.log_limits import RepeatFilter
from dlsched.service.store.database import Store
from dlsched.service.store.records import COMPLETED, NewJob

IDLE = 1100


def _raise_nofile(want: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))


def test_idle_connections_do_not_stall_the_loop_and_time_out(tmp_path: Path) -> None:
    _raise_nofile(IDLE + 512)
    db = tmp_path / "s.db"
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dlsched.cli.main", "serve", "--backend", "fake",
             "--db", str(db), "--port", "0", "--round", "0.5"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    conns: list[socket.socket] = []
    try:
        url = ""
        for _ in range(600):
            lines = [x for x in log.read_text().splitlines() if x.startswith("dlsched service at")]
            if lines:
                url = lines[0].split()[-1].rstrip("/")
                break
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        assert url, log.read_text()
        host, port = url.removeprefix("http://").split(":")
        store = Store(db)
        seqs = [
            store.submit(NewJob(f"b{i}", "u", 1, ("sleep", "2"), None, 2.0), time.time()).seq
            for i in range(4)
        ]
        began = time.monotonic()
        for _ in range(IDLE):
            s = socket.socket()
            s.setblocking(True)
            with contextlib.suppress(OSError):
                s.connect((host, int(port)))
            conns.append(s)
        opened = time.monotonic() - began
        # The loop runs on its own thread: the jobs finish on time while the connections idle.
        deadline = time.monotonic() + 8.0
        while time.monotonic() < deadline:
            rows = [store.get(seq) for seq in seqs]
            if all(r is not None and r.state == COMPLETED for r in rows):
                break
            time.sleep(0.1)
        finished = time.monotonic() - began
        assert all(store.get(seq).state == COMPLETED for seq in seqs), (opened, finished)  # type: ignore[union-attr]
        # The idle connections are closed after the request timeout; the API answers again.
        token = (tmp_path / "s.db.token").read_text().strip()
        wait = HttpLimits().request_timeout_s + 10.0
        end = time.monotonic() + wait
        status = None
        while time.monotonic() < end:
            try:
                r = httpx.get(
                    f"{url}/jobs", headers={"Authorization": f"Bearer {token}"}, timeout=2
                )
                status = r.status_code
                if status == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        assert status == 200, f"API still unavailable {wait:.0f} s after the flood"
        print(
            f"{IDLE} idle connections opened in {opened:.1f} s; 4 jobs of 2 s completed "
            f"{finished:.1f} s after the flood began; API answered again "
            f"{time.monotonic() - began:.1f} s after it; log {log.stat().st_size} bytes"
        )
        assert log.stat().st_size < 20_000, log.read_text()[-2000:]
        store.close()
    finally:
        for s in conns:
            s.close()
        proc.terminate()
        proc.wait(30)


def test_repeated_messages_are_collapsed() -> None:
    now = [0.0]
    f = RepeatFilter(window_s=10.0, clock=lambda: now[0])

    def rec(msg: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord("x", logging.WARNING, __file__, 1, msg, args, None)

    passed = [f.filter(rec("job %s failed", i)) for i in range(1000)]
    assert passed.count(True) == 1
    assert f.filter(rec("another message"))
    now[0] = 11.0
    last = rec("job %s failed", 7)
    assert f.filter(last)
    assert "999 similar messages suppressed" in last.getMessage()
