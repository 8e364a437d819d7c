"""A Slurm node crashes under running jobs (a real Slurm on loopback, ``SlurmdTimeout`` 10 s:
nodes sn1 and sn2 with 2 fake a100 GPUs each).

Two jobs run on sn2 and one on sn1. The first victim's own processes die first, so its wrapper
records the kill (exit 137) and Slurm hears the job ended FAILED while sn2 still looks alive:
the order a dying node often shows, which once made the service fail a job for its node's
death. Then sn2's slurmd, step daemons and the other victim die at once, and Slurm learns of it
only from missed pings. Both victims must be reported ``node_lost`` (the service queues them
again), the job on sn1 must finish untouched, and sn2 must be reported unavailable.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from dlsched.backends.base import RESUMABLE_ERRORS, LaunchRequest, ProcState
from dlsched.backends.jobfiles import REQUEST_VAR
from dlsched.backends.procfs import marked_processes
from dlsched.backends.slurm import SlurmBackend
from dlsched.testing.slurm_cluster import FakeNode, SlurmCluster, missing_tools
from tests.service.jobscript import job_command, write_job

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(missing_tools()), reason="needs Slurm: apt-get install -y slurm-wlm munge"
    ),
]


def states(backend: SlurmBackend) -> dict[str, ProcState]:
    return {rid: o.state for rid, o in backend.observe().items()}


def wait_until(backend: SlurmBackend, rids: list[str], state: ProcState, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        seen = states(backend)
        if all(seen.get(r) is state for r in rids):
            return
        assert time.monotonic() < deadline, f"timed out waiting for {rids} {state}: {seen}"
        time.sleep(0.2)


def kill_job_processes(request_id: str) -> int:
    """SIGKILL the job's own processes, sparing its wrapper (which then records the kill)."""
    killed = 0
    for stats in marked_processes(REQUEST_VAR, request_id, REQUEST_VAR).values():
        for st in stats:
            with contextlib.suppress(OSError):
                if b"dlsched-job" in Path(f"/proc/{st.pid}/cmdline").read_bytes():
                    continue
                os.kill(st.pid, signal.SIGKILL)
                killed += 1
    return killed


@pytest.mark.long
def test_jobs_of_a_killed_slurm_node_are_reported_lost_and_the_others_run_on(
    tmp_path: Path,
) -> None:
    nodes = (FakeNode("sn1", "a100", 2), FakeNode("sn2", "a100", 2))
    with SlurmCluster(nodes, directory=tmp_path / "slurm", slurmd_timeout_s=10) as cluster:
        backend = SlurmBackend(tmp_path / "root", "nodekill", env=cluster.env)
        script = write_job(tmp_path)
        first = LaunchRequest("ja.0", "ja", job_command(script, 900), {"sn2": (0,)})
        silent = LaunchRequest("jb.0", "jb", job_command(script, 900), {"sn2": (1,)})
        other = LaunchRequest("jc.0", "jc", job_command(script, 300), {"sn1": (0,)})
        for request in (first, silent, other):
            backend.launch(request)
        wait_until(backend, ["ja.0", "jb.0", "jc.0"], ProcState.RUNNING, 60)
        deadline = time.monotonic() + 60
        while not all((backend.workdir(j) / "status.json").exists() for j in ("ja", "jb", "jc")):
            assert time.monotonic() < deadline, "the jobs never reported a status"
            time.sleep(0.1)

        assert kill_job_processes("ja.0") >= 1
        exit_file = backend.exit_file("ja.0")
        deadline = time.monotonic() + 10
        while not exit_file.exists():
            assert time.monotonic() < deadline, "the wrapper never recorded the kill"
            time.sleep(0.05)
        time.sleep(1.0)  # let Slurm hear of the exit while sn2 still answers
        assert backend.jobs["jb.0"].slurm_id in cluster.kill_node("sn2")

        wait_until(backend, ["ja.0", "jb.0"], ProcState.EXITED, 120)
        errors = {e.request_id: e for e in backend.errors()}
        assert {rid: e.kind for rid, e in errors.items()} == {
            "ja.0": "node_lost",
            "jb.0": "node_lost",
        }, errors
        assert all(e.kind in RESUMABLE_ERRORS for e in errors.values())
        assert "sn2" in errors["ja.0"].message
        obs = backend.observe()
        assert obs["ja.0"].exit_code == 128 + 9
        assert obs["jb.0"].exit_code in (None, 128 + 9)
        assert "sn2" in backend.unavailable_nodes()

        wait_until(backend, ["jc.0"], ProcState.EXITED, 120)
        assert backend.observe()["jc.0"].exit_code == 0
        assert backend.errors() == []
