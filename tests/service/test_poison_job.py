"""A poison job among healthy ones: the back end cannot run it (or cannot stop it). The healthy
jobs complete, the poison one ends FAILED with the reason shown by the API, the control loop
never stops, and the service restarts cleanly with the poison job in its store.

The end-to-end test runs the real ``dlsched serve`` on the local back end, with a job whose
command holds a NUL byte written straight into the store (the API refuses such a job now; a
store written before, or by another tool, may still hold one). It also stops the service with
SIGTERM, which must run the same stop routine as Ctrl-C."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx

from dlsched.backends.base import LaunchRequest
from dlsched.backends.local import LocalBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.registry import create_policy
from dlsched.service.control.controller import Controller
from dlsched.service.store.database import Store
from dlsched.service.store.records import COMPLETED, FAILED, NewJob
from tests.service.helpers import all_final
from tests.service.service_proc import ServiceProcess, kill_jobs_of

POISON = NewJob("nul", "mallory", 1, ("echo", "a\x00b"))


class UnreliableBackend(LocalBackend):
    """The real local back end, except that launching job ``poison`` and stopping job
    ``stuck`` raise (as a buggy back end or a broken node agent might)."""

    def launch(self, request: LaunchRequest) -> None:
        if request.command[-1] == "poison":
            raise RuntimeError("agent crashed while launching")
        super().launch(request)

    def terminate(self, request_id: str, grace_s: float) -> None:
        if self.procs.get(request_id) and self.procs[request_id].request.command[-1] == "stuck":
            raise OSError("agent unreachable while stopping")
        super().terminate(request_id, grace_s)


def run_until_final(controller: Controller, store: Store, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not all_final(store):
        assert time.monotonic() < deadline, [(r.id, r.state) for r in store.jobs()]
        controller.step()
        time.sleep(0.05)


def test_back_end_errors_fail_only_their_job(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    backend = UnreliableBackend(tmp_path / "jobs", "poison-test")
    controller = Controller(store, backend, resolve_cluster("1x4"), create_policy("fifo"))
    jobs = {
        name: store.submit(NewJob(name, "u", 1, ("sh", "-c", command, name)), 0.0).seq
        for name, command in (
            ("ok1", "exit 0"),
            ("poison", "exit 0"),
            ("stuck", "sleep 30"),
            ("ok2", "exit 0"),
        )
    }
    store.submit(POISON, 0.0)
    controller.step()
    store.request_cancel(jobs["stuck"], 1.0)
    try:
        run_until_final(controller, store)
    finally:
        backend.kill_all()
    rows = {r.name: r for r in store.jobs()}
    assert rows["ok1"].state == rows["ok2"].state == COMPLETED
    assert rows["poison"].state == FAILED
    assert "could not launch it: RuntimeError: agent crashed" in (rows["poison"].reason or "")
    assert rows["stuck"].state == FAILED
    assert "could not stop it: OSError: agent unreachable" in (rows["stuck"].reason or "")
    # The NUL byte is contained by the local back end itself: a launch failure with its reason.
    assert rows["nul"].state == FAILED and "null byte" in (rows["nul"].reason or "")
    store.close()


def test_start_up_survives_a_job_recorded_on_another_cluster(tmp_path: Path) -> None:
    # A store written by a service of another cluster: one running job holds GPUs on a node
    # this cluster lacks, another GPUs a node here does not have. Both fail with the reason;
    # the rest of the store is scheduled as usual.
    store = Store(tmp_path / "state.db")
    gone = store.submit(NewJob("gone", "u", 1, ("true",)), 0.0).seq
    wide = store.submit(NewJob("wide", "u", 1, ("true",)), 0.0).seq
    ok = store.submit(NewJob("ok", "u", 1, ("sh", "-c", "exit 0")), 0.0).seq
    assert store.mark_started(gone, {"elsewhere-007": [0]}, 1.0, "old") is not None
    assert store.mark_started(wide, {"node-000": [9]}, 1.0, "old") is not None
    backend = LocalBackend(tmp_path / "jobs", "other-cluster")
    controller = Controller(
        store, backend, resolve_cluster("1x4"), create_policy("fifo"), service_id="old"
    )
    controller.recover()
    run_until_final(controller, store)
    rows = {r.name: r for r in store.jobs()}
    assert rows["gone"].state == rows["wide"].state == FAILED
    assert "node 'elsewhere-007' is not in this service's cluster" in (rows["gone"].reason or "")
    assert "GPUs [9] are not all on node 'node-000'" in (rows["wide"].reason or "")
    assert store.get(ok) is not None and rows["ok"].state == COMPLETED
    store.close()


def api(method: str, url: str, token: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(
        method, url, headers={"Authorization": f"Bearer {token}"}, timeout=10, **kwargs
    )


def wait_final(url: str, token: str, ids: list[str], timeout_s: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        jobs = {j["id"]: j for j in api("GET", f"{url}/jobs", token).json()}
        if all(jobs[i]["state"] in ("COMPLETED", "FAILED", "CANCELLED") for i in ids):
            return jobs
        assert time.monotonic() < deadline, jobs
        time.sleep(0.2)


def test_poison_job_fails_alone_and_the_service_restarts_with_it(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    seeded = Store(db)
    poison_id = seeded.submit(POISON, time.time()).id
    seeded.close()
    args = ("--cluster", "1x2", "--round", "0.2")
    service = ServiceProcess(db, *args)
    try:
        url = service.wait_ready()
        token = (tmp_path / "state.db.token").read_text().strip()
        healthy = []
        for i in range(4):
            body = {"name": f"ok{i}", "gpus": 1, "command": ["sh", "-c", "sleep 0.2"]}
            r = api("POST", f"{url}/jobs", token, json=body)
            assert r.status_code == 201, r.text
            healthy.append(r.json()["id"])
        jobs = wait_final(url, token, [poison_id, *healthy])
        assert all(jobs[i]["state"] == "COMPLETED" for i in healthy), jobs
        assert jobs[poison_id]["state"] == "FAILED"
        assert "null byte" in jobs[poison_id]["reason"]
        # SIGTERM runs the same stop routine as Ctrl-C: a clean exit, no traceback.
        service.proc.send_signal(signal.SIGTERM)
        assert service.proc.wait(timeout=30) == 0
        log = service.log.read_text()
        assert "dlsched service stopped" in log and "Traceback" not in log, log

        again = ServiceProcess(db, *args)
        try:
            url = again.wait_ready()
            record = api("GET", f"{url}/jobs/{poison_id}", token).json()
            assert record["state"] == "FAILED" and "null byte" in record["reason"]
            r = api(
                "POST", f"{url}/jobs", token, json={"name": "after", "gpus": 1, "command": ["true"]}
            )
            assert r.status_code == 201
            assert wait_final(url, token, [r.json()["id"]])[r.json()["id"]]["state"] == "COMPLETED"
            again.proc.send_signal(signal.SIGINT)
            assert again.proc.wait(timeout=30) == 0
        finally:
            again.kill9()
    finally:
        service.kill9()
        instance = sqlite3.connect(db).execute("SELECT value FROM meta WHERE key='instance'")
        kill_jobs_of(instance.fetchone()[0])
