"""The local back end with real processes: the job environment, exit codes, preemption with
SIGTERM → 75 and resume from the checkpoint, SIGKILL after the grace period (children too),
idempotent launches, and adoption or cleanup after a driver restart."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dlsched.backends.base import KnownRequest, LaunchRequest, Observation, ProcState
from dlsched.backends.local import LocalBackend
from dlsched.backends.procfs import is_alive
from tests.service.jobscript import job_command, write_job


def wait_for(check: Callable[[], bool], timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[Callable[[], LocalBackend]]:
    made: list[LocalBackend] = []

    def make() -> LocalBackend:
        b = LocalBackend(tmp_path / "root", "test-instance-" + tmp_path.name)
        made.append(b)
        return b

    yield make
    for b in made:
        b.kill_all()


def request(rid: str, job: str, command: tuple[str, ...], **kw: object) -> LaunchRequest:
    return LaunchRequest(rid, job, command, {"node-001": (2, 3)}, **kw)  # type: ignore[arg-type]


def final(b: LocalBackend, rid: str, timeout: float = 15.0) -> Observation:
    wait_for(lambda: b.observe()[rid].state is ProcState.EXITED, timeout)
    return b.observe()[rid]


def test_job_environment_workdir_and_log(backends: Callable[[], LocalBackend]) -> None:
    b = backends()
    b.launch(request("j1.1", "j1", ("sh", "-c", "env > env.txt; pwd; echo hello"), batch_size=64))
    assert final(b, "j1.1").exit_code == 0
    work = b.workdir("j1")
    env = dict(
        line.split("=", 1) for line in (work / "env.txt").read_text().splitlines() if "=" in line
    )
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert env["DLSCHED_JOB_ID"] == "j1"
    assert env["DLSCHED_WORKDIR"] == str(work)
    assert env["DLSCHED_CHECKPOINT_DIR"] == str(work / "checkpoint")
    assert env["DLSCHED_STATUS_FILE"] == str(work / "status.json")
    assert env["DLSCHED_NUM_GPUS"] == "2"
    assert env["DLSCHED_BATCH_SIZE"] == "64"
    assert env["DLSCHED_NODE"] == "node-001"
    assert (work / "checkpoint").is_dir()
    assert (work / "log.txt").read_text().splitlines() == [str(work), "hello"]


def test_exit_codes_and_a_missing_command(backends: Callable[[], LocalBackend]) -> None:
    b = backends()
    b.launch(request("a.1", "a", ("sh", "-c", "exit 3")))
    b.launch(request("b.1", "b", ("no-such-command-xyz",)))
    assert final(b, "a.1").exit_code == 3
    assert final(b, "b.1").exit_code == 127
    b.forget("a.1")
    assert "a.1" not in b.observe()


def test_launch_is_idempotent(backends: Callable[[], LocalBackend]) -> None:
    b = backends()
    req = request("c.1", "c", ("sh", "-c", "echo once >> runs.txt; sleep 0.3"))
    b.launch(req)
    b.launch(req)
    assert final(b, "c.1").exit_code == 0
    b.launch(req)
    assert (b.workdir("c") / "runs.txt").read_text() == "once\n"
    again = backends()  # a restarted driver launching the same request does not rerun it
    again.launch(req)
    assert final(again, "c.1").exit_code == 0
    assert (b.workdir("c") / "runs.txt").read_text() == "once\n"


def test_preempt_with_sigterm_then_resume_from_checkpoint(
    tmp_path: Path, backends: Callable[[], LocalBackend]
) -> None:
    b = backends()
    script = write_job(tmp_path)
    b.launch(request("d.1", "d", job_command(script, 15)))
    work = b.workdir("d")
    wait_for(lambda: (work / "status.json").exists())
    running = b.observe()["d.1"]
    assert running.state is ProcState.RUNNING and running.pid and running.start_time
    assert running.status is not None and running.status["step"] >= 1
    b.terminate("d.1", grace_s=10.0)
    stopped = final(b, "d.1")
    assert stopped.exit_code == 75
    saved = int((work / "checkpoint" / "step").read_text())
    assert 1 <= saved < 15
    b.launch(request("d.2", "d", job_command(script, 15)))
    assert final(b, "d.2").exit_code == 0
    assert (work / "resume.txt").read_text().split() == [
        "resumed-from",
        "0",
        "resumed-from",
        str(saved),
    ]
    assert (work / "done.txt").read_text() == "done\n"
    lines = (work / "gpu_log.txt").read_text().splitlines()
    assert [line.split()[1] for line in lines] == ["start", "stop", "start", "stop"]


def test_sigkill_after_grace_reaches_children(
    tmp_path: Path, backends: Callable[[], LocalBackend]
) -> None:
    b = backends()
    cmd = ("sh", "-c", "trap '' TERM; sleep 60 & echo $! > child.pid; wait")
    b.launch(request("e.1", "e", cmd))
    pidfile = b.workdir("e") / "child.pid"
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() != "")
    child = int(pidfile.read_text())
    b.terminate("e.1", grace_s=0.5)
    time.sleep(0.2)
    assert b.observe()["e.1"].state is ProcState.RUNNING, "TERM is ignored: still running"
    obs = final(b, "e.1")
    assert obs.exit_code is None  # killed: no exit code recorded
    wait_for(lambda: not is_alive(child, None), 5.0)


def test_restarted_driver_adopts_known_and_kills_orphans(
    tmp_path: Path, backends: Callable[[], LocalBackend]
) -> None:
    first = backends()
    script = write_job(tmp_path)
    first.launch(request("f.1", "f", job_command(script, 100)))
    first.launch(request("g.1", "g", ("sleep", "60")))
    first.launch(request("h.1", "h", ("sh", "-c", "exit 0")))
    wait_for(lambda: (first.workdir("f") / "status.json").exists())
    final(first, "h.1")
    f_obs, g_obs = first.observe()["f.1"], first.observe()["g.1"]
    # The driver dies (its back end object is dropped without touching the processes).
    first.procs.clear()
    second = backends()
    known = {
        "f.1": KnownRequest(
            request("f.1", "f", job_command(script, 100)), f_obs.pid, f_obs.start_time
        ),
        "h.1": KnownRequest(request("h.1", "h", ("sh", "-c", "exit 0"))),
    }
    second.recover(known)
    obs = second.observe()
    assert obs["f.1"].state is ProcState.RUNNING and obs["f.1"].pid == f_obs.pid
    assert obs["h.1"].state is ProcState.EXITED and obs["h.1"].exit_code == 0
    assert "g.1" not in obs
    assert g_obs.pid is not None
    wait_for(lambda: not is_alive(g_obs.pid, g_obs.start_time), 5.0)  # type: ignore[arg-type]
    second.terminate("f.1", grace_s=10.0)
    assert final(second, "f.1").exit_code == 75
    assert os.path.exists(second.workdir("f") / "checkpoint" / "step")
