"""The controller with the local back end and real processes: a preemptive policy preempts a
running job (SIGTERM → checkpoint → exit 75), resumes it from its checkpoint directory later,
and a cancelled job that ignores SIGTERM is killed after the grace period."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlsched.backends.local import LocalBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.registry import create_policy
from dlsched.service.control.controller import Controller
from dlsched.service.store.database import Store
from dlsched.service.store.records import CANCELLED, COMPLETED, FINAL, NewJob
from tests.service.jobscript import job_command, write_job


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[Store, LocalBackend, Controller]]:
    store = Store(tmp_path / "state.db")
    backend = LocalBackend(tmp_path / "jobs", store.instance)
    # Tiresias with a 2 GPU-second threshold: a job is demoted almost at once, so two 8-GPU
    # jobs on 8 GPUs take turns.
    policy = create_policy("tiresias", {"thresholds": "2"})
    ctl = Controller(store, backend, resolve_cluster("2x4"), policy, grace_s=0.5)
    yield store, backend, ctl
    backend.kill_all()
    store.close()


def drive(store: Store, ctl: Controller, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ctl.step()
        if all(r.state in FINAL for r in store.jobs()):
            return
        time.sleep(0.1)
    raise AssertionError([(r.id, r.state) for r in store.jobs()])


@pytest.mark.slow
def test_preempted_job_resumes_from_its_checkpoint(
    tmp_path: Path, live: tuple[Store, LocalBackend, Controller]
) -> None:
    store, backend, ctl = live
    script = write_job(tmp_path)
    a = store.submit(NewJob("a", "u", 8, job_command(script, 25)), time.time()).seq
    ctl.step()
    time.sleep(0.8)  # a runs past the threshold
    b = store.submit(NewJob("b", "u", 8, job_command(script, 25)), time.time()).seq
    drive(store, ctl)
    rows = {r.seq: r for r in store.jobs()}
    assert rows[a].state == rows[b].state == COMPLETED
    assert rows[a].restarts >= 1
    kinds = [k for _, k, _ in store.events(a)]
    assert kinds.count("preempting") == kinds.count("requeued") == rows[a].restarts
    assert kinds.count("completed") == 1
    work_a = backend.workdir(f"j{a}")
    resumed = [int(x) for x in (work_a / "resume.txt").read_text().split()[1::2]]
    assert resumed[0] == 0 and resumed[1] > 0, "the restarted job resumed from its checkpoint"
    assert resumed == sorted(resumed), "progress never went backwards"
    for seq in (a, b):
        assert (backend.workdir(f"j{seq}") / "done.txt").read_text() == "done\n"
    spans = []
    for seq in (a, b):
        lines = (backend.workdir(f"j{seq}") / "gpu_log.txt").read_text().splitlines()
        starts = [float(x.split()[0]) for x in lines if " start " in x]
        stops = [float(x.split()[0]) for x in lines if x.endswith(" stop")]
        spans += list(zip(starts, stops, strict=True))
    spans.sort()
    for (_, e1), (b2, _) in itertools.pairwise(spans):
        assert e1 <= b2, "both 8-GPU jobs held the GPUs at once"


def test_cancel_kills_a_job_that_ignores_sigterm(
    live: tuple[Store, LocalBackend, Controller],
) -> None:
    store, _, ctl = live
    cmd = ("sh", "-c", "trap '' TERM; sleep 60 & wait; sleep 60")
    seq = store.submit(NewJob("stubborn", "u", 2, cmd), time.time()).seq
    ctl.step()
    time.sleep(0.3)
    store.request_cancel(seq, time.time())
    began = time.monotonic()
    drive(store, ctl, timeout=15.0)
    row = store.get(seq)
    assert row is not None and row.state == CANCELLED and row.exit_code is None
    assert time.monotonic() - began >= 0.5, "killed only after the grace period"
