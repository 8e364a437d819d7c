"""Crash recovery of the real service: kill -9 at random points of a 20-job run on the local
back end, restart on the same store, and check from the jobs' own files that every job completed
exactly once and no GPU was ever held by two running jobs."""

from __future__ import annotations

import itertools
import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.service.jobscript import job_command, write_job
from tests.service.service_proc import ServiceProcess, kill_jobs_of

N_JOBS = 20


def read_intervals(path: Path) -> list[tuple[str, tuple[str, ...], float, float | None]]:
    out: list[tuple[str, tuple[str, ...], float, float | None]] = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts[1] == "start":
            node = parts[2].removeprefix("node=")
            gpus = tuple(g for g in parts[3].removeprefix("gpus=").split(",") if g)
            out.append((node, gpus, float(parts[0]), None))
        else:
            assert parts[1] == "stop" and out and out[-1][3] is None, f"{path}: {line}"
            node, gpus, start, _ = out[-1]
            out[-1] = (node, gpus, start, float(parts[0]))
    return out


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[tuple[Path, list[ServiceProcess]]]:
    services: list[ServiceProcess] = []
    yield tmp_path, services
    for s in services:
        s.kill9()
    db = tmp_path / "state.db"
    if db.exists():
        instance = (
            sqlite3.connect(db).execute("SELECT value FROM meta WHERE key='instance'").fetchone()[0]
        )
        kill_jobs_of(instance)


@pytest.mark.slow
def test_kill_9_at_random_points_every_job_completes_once(
    run_dir: tuple[Path, list[ServiceProcess]],
) -> None:
    tmp, services = run_dir
    rng = random.Random(2026)
    db = tmp / "state.db"
    script = write_job(tmp)
    args = (
        "--cluster",
        "2x4",
        "--policy",
        "srtf",
        "--backend",
        "local",
        "--round",
        "0.5",
        "--grace",
        "5",
    )

    def start() -> tuple[ServiceProcess, httpx.Client]:
        s = ServiceProcess(db, *args)
        services.append(s)
        url = s.wait_ready()
        token = (tmp / "state.db.token").read_text().strip()
        return s, httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"})

    jobs = []
    for i in range(N_JOBS):
        steps = rng.randint(5, 20)
        jobs.append(
            {
                "name": f"job{i:02d}",
                "gpus": rng.choice([1, 1, 2, 2, 3, 4]),
                "command": list(job_command(script, steps)),
                "expected_duration_s": steps * 0.1,
            }
        )
    cut = rng.randint(3, 10)

    # 1. killed during submission (between two accepted submissions)
    svc, client = start()
    for body in jobs[:cut]:
        assert client.post("/jobs", json=body).status_code == 201
    svc.kill9()
    client.close()
    # 2. killed right after submitting the rest: during launches
    svc, client = start()
    for body in jobs[cut:]:
        assert client.post("/jobs", json=body).status_code == 201
    time.sleep(rng.uniform(0.0, 0.3))
    svc.kill9()
    client.close()
    # 3. killed while jobs run
    svc, client = start()
    time.sleep(rng.uniform(0.8, 2.0))
    states = [r["state"] for r in client.get("/jobs").json()]
    svc.kill9()
    assert "RUNNING" in states, "the third kill should hit running jobs"
    client.close()
    # 4. the last run finishes everything
    svc, client = start()
    deadline = time.monotonic() + 120
    records: list[dict[str, object]] = []
    while time.monotonic() < deadline:
        records = client.get("/jobs").json()
        if len(records) == N_JOBS and all(r["state"] == "COMPLETED" for r in records):
            break
        time.sleep(0.3)
    client.close()
    assert [r["state"] for r in records] == ["COMPLETED"] * N_JOBS, records
    svc.kill9()

    work = tmp / "state.db.jobs" / "jobs"
    held: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
    for r in records:
        jid = str(r["id"])
        assert (work / jid / "done.txt").read_text() == "done\n", f"{jid} did not finish once"
        for node, gpus, begin, end in read_intervals(work / jid / "gpu_log.txt"):
            assert end is not None, f"{jid}: a run never stopped (killed?)"
            assert len(gpus) == r["gpus"]
            for g in gpus:
                held.setdefault((node, g), []).append((begin, end, jid))
    for cell, spans in held.items():
        spans.sort()
        for (_, e1, j1), (b2, _, j2) in itertools.pairwise(spans):
            assert e1 <= b2, f"GPU {cell}: {j1} held it until {e1}, {j2} from {b2}"
    events = (
        sqlite3.connect(db)
        .execute("SELECT job, COUNT(*) FROM events WHERE kind='completed' GROUP BY job")
        .fetchall()
    )
    assert sorted(n for _, n in events) == [1] * N_JOBS
    instance = sqlite3.connect(db).execute("SELECT value FROM meta WHERE key='instance'")
    assert kill_jobs_of(instance.fetchone()[0]) == 0, "job processes left behind"
