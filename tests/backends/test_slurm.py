"""The Slurm back end against a real Slurm (slurmctld, 3 slurmd, munge) started on loopback.

The cluster (module scope) has nodes sn1 and sn2 with 4 fake a100 GPUs each and sn3 with 2 v100.
Jobs are the contract's tiny shell job (tests/service/jobscript.py) or small shell commands;
every test uses its own driver instance and cancels its jobs when it ends.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dlsched.backends.base import EXIT_PREEMPTED, KnownRequest, LaunchRequest, ProcState
from dlsched.backends.slurm import SlurmBackend
from dlsched.backends.slurm_cli import inventory_cluster, main, parse_gres
from dlsched.cluster.toml_io import read_cluster_toml
from dlsched.testing.slurm_cluster import SlurmCluster, missing_tools
from tests.service.jobscript import job_command, write_job

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(missing_tools()), reason="needs Slurm: apt-get install -y slurm-wlm munge"
    ),
]

_instances = itertools.count()
KILLED = 128 + 9


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with SlurmCluster(directory=tmp_path_factory.mktemp("slurm")) as c:
        yield c


@pytest.fixture()
def backend(cluster: SlurmCluster, tmp_path: Path) -> Iterator[SlurmBackend]:
    b = SlurmBackend(tmp_path / "root", f"t{next(_instances)}", env=cluster.env)
    yield b
    b.cancel_all()


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    return write_job(tmp_path)


def wait_for(
    backend: SlurmBackend, done: Callable[[dict[str, ProcState]], bool], timeout_s: float = 30.0
) -> dict[str, ProcState]:
    deadline = time.monotonic() + timeout_s
    while True:
        states = {rid: o.state for rid, o in backend.observe().items()}
        if done(states):
            return states
        assert time.monotonic() < deadline, f"timed out; states {states}"
        time.sleep(0.2)


def exited(*rids: str) -> Callable[[dict[str, ProcState]], bool]:
    return lambda states: all(states.get(r) is ProcState.EXITED for r in rids)


def running(*rids: str) -> Callable[[dict[str, ProcState]], bool]:
    return lambda states: all(states.get(r) is ProcState.RUNNING for r in rids)


def slurm_jobs(cluster: SlurmCluster, name_prefix: str) -> list[dict[str, object]]:
    data = json.loads(cluster.run("squeue", "--json", "--states=all").stdout)
    return [j for j in data["jobs"] if str(j["name"]).startswith(name_prefix)]


def gpu_log(backend: SlurmBackend, job_id: str) -> list[str]:
    return (backend.workdir(job_id) / "gpu_log.txt").read_text().splitlines()


def test_launch_lands_on_planned_nodes_with_their_gpus(
    backend: SlurmBackend, script: Path, cluster: SlurmCluster
) -> None:
    a = LaunchRequest("ja.0", "ja", job_command(script, 3), {"sn3": (0, 1)}, batch_size=32)
    b = LaunchRequest("jb.0", "jb", job_command(script, 3), {"sn2": (1, 2, 3)})
    backend.launch(a)
    backend.launch(b)
    seen: set[ProcState] = set()

    def track(states: dict[str, ProcState]) -> bool:
        seen.update(states.values())
        return exited("ja.0", "jb.0")(states)

    wait_for(backend, track)
    assert ProcState.RUNNING in seen
    obs = backend.observe()
    assert (obs["ja.0"].exit_code, obs["jb.0"].exit_code) == (0, 0)
    assert backend.errors() == []
    start_a = gpu_log(backend, "ja")[0].split()
    start_b = gpu_log(backend, "jb")[0].split()
    assert start_a[2] == "node=sn3"
    assert sorted(start_a[3].removeprefix("gpus=").split(",")) == ["0", "1"]
    assert start_b[2] == "node=sn2"
    gpus_b = start_b[3].removeprefix("gpus=").split(",")
    assert len(set(gpus_b)) == 3 and set(gpus_b) <= {"0", "1", "2", "3"}
    records = {j["name"]: j for j in slurm_jobs(cluster, backend.name_prefix)}
    assert records[backend.job_name("ja.0")]["tres_per_node"] == "gres:gpu:v100:2"
    assert records[backend.job_name("jb.0")]["tres_per_node"] == "gres:gpu:a100:3"
    status = json.loads((backend.workdir("ja") / "status.json").read_text())
    assert status["step"] == 3


def test_job_environment_follows_the_contract(backend: SlurmBackend) -> None:
    dump = ("sh", "-c", "env | grep -E '^(DLSCHED_|CUDA_VISIBLE)' | sort > env.txt")
    backend.launch(LaunchRequest("je.0", "je", dump, {"sn1": (0,)}, batch_size=16))
    wait_for(backend, exited("je.0"))
    env = dict(
        line.split("=", 1) for line in (backend.workdir("je") / "env.txt").read_text().splitlines()
    )
    workdir = backend.workdir("je")
    assert env["DLSCHED_JOB_ID"] == "je"
    assert env["DLSCHED_WORKDIR"] == str(workdir)
    assert env["DLSCHED_CHECKPOINT_DIR"] == str(workdir / "checkpoint")
    assert env["DLSCHED_STATUS_FILE"] == str(workdir / "status.json")
    assert (env["DLSCHED_NUM_GPUS"], env["DLSCHED_BATCH_SIZE"]) == ("1", "16")
    assert env["DLSCHED_NODE"] == "sn1"
    assert env["DLSCHED_GPU_IDS"] == "sn1:0"
    assert env["CUDA_VISIBLE_DEVICES"] in {"0", "1", "2", "3"}


def test_the_job_gets_only_the_allowed_environment(cluster: SlurmCluster, tmp_path: Path) -> None:
    secrets = {"DLSCHED_TOKEN": "tok-secret", "PGPASSWORD": "pg-secret", "SERVICE_ONLY": "x"}
    env = {**cluster.env, **secrets, "KEEP_ME": "kept"}
    backend = SlurmBackend(tmp_path / "root", "envtest", env=env, extra_env=("KEEP_ME",))
    try:
        dump = ("sh", "-c", "env > env.txt")
        backend.launch(LaunchRequest("ev.0", "ev", dump, {"sn1": (0,)}))
        wait_for(backend, exited("ev.0"))
        text = (backend.workdir("ev") / "env.txt").read_text()
    finally:
        backend.cancel_all()
    got = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    assert not set(secrets) & set(got) and "tok-secret" not in text and "pg-secret" not in text
    assert got["KEEP_ME"] == "kept" and got["HOME"] == str(backend.workdir("ev"))
    assert "PATH" in got


def test_relaunch_is_idempotent_across_driver_objects(
    backend: SlurmBackend, script: Path, cluster: SlurmCluster, tmp_path: Path
) -> None:
    req = LaunchRequest("ji.0", "ji", job_command(script, 30), {"sn1": (0,)})
    backend.launch(req)
    backend.launch(req)
    again = SlurmBackend(backend.root, backend.instance, env=cluster.env)
    again.launch(req)
    assert len(slurm_jobs(cluster, backend.job_name("ji.0"))) == 1
    assert again.jobs["ji.0"].slurm_id == backend.jobs["ji.0"].slurm_id
    backend.terminate("ji.0", 0.0)
    wait_for(backend, exited("ji.0"))
    backend.forget("ji.0")
    # An exited request whose code is recorded is not submitted again either.
    (backend.exit_file("ji.0")).write_text("0\n")
    backend.launch(req)
    assert backend.observe()["ji.0"].exit_code == 0
    assert len(slurm_jobs(cluster, backend.job_name("ji.0"))) == 1


def test_graceful_preemption_checkpoints_and_resumes(backend: SlurmBackend, script: Path) -> None:
    first = LaunchRequest("jp.0", "jp", job_command(script, 60), {"sn2": (0, 1)})
    backend.launch(first)
    wait_for(backend, running("jp.0"))
    status = backend.workdir("jp") / "status.json"
    deadline = time.monotonic() + 60
    while not status.exists():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    backend.terminate("jp.0", 20.0)
    wait_for(backend, exited("jp.0"))
    assert backend.observe()["jp.0"].exit_code == EXIT_PREEMPTED
    assert backend.errors() == []
    step = int((backend.workdir("jp") / "checkpoint" / "step").read_text())
    assert 0 < step < 60
    backend.forget("jp.0")
    second = LaunchRequest("jp.1", "jp", job_command(script, 60), {"sn1": (2, 3)})
    backend.launch(second)
    wait_for(backend, exited("jp.1"), timeout_s=40)
    assert backend.observe()["jp.1"].exit_code == 0
    resumed = (backend.workdir("jp") / "resume.txt").read_text().split()
    assert resumed == ["resumed-from", "0", "resumed-from", str(step)]
    log = gpu_log(backend, "jp")
    assert "node=sn2" in log[0] and "node=sn1" in log[2]


def test_forced_kill_after_grace_and_cancel_of_pending_job(
    backend: SlurmBackend, cluster: SlurmCluster
) -> None:
    stubborn = ("sh", "-c", "trap '' TERM; echo started > started.txt; sleep 120")
    backend.launch(LaunchRequest("jk.0", "jk", stubborn, {"sn3": (0, 1)}))
    # sn3 has only 2 GPUs: this one waits in Slurm's queue.
    backend.launch(LaunchRequest("jw.0", "jw", ("true",), {"sn3": (0,)}))
    wait_for(backend, lambda s: s.get("jk.0") is ProcState.RUNNING)
    assert backend.observe()["jw.0"].state is ProcState.STARTING
    backend.terminate("jw.0", 30.0)
    began = time.monotonic()
    backend.terminate("jk.0", 1.0)
    wait_for(backend, exited("jk.0", "jw.0"))
    assert time.monotonic() - began < 15
    obs = backend.observe()
    # SIGKILL reaches the job and its wrapper in either order: killed, with or without a code.
    assert obs["jk.0"].exit_code in (None, KILLED)
    assert obs["jw.0"].exit_code is None
    assert backend.errors() == []
    assert (
        not (backend.workdir("jw") / "log.txt").exists()
        or not (backend.workdir("jw") / "log.txt").read_text()
    )


def test_recover_adopts_known_jobs_and_cancels_orphans(
    backend: SlurmBackend, script: Path, cluster: SlurmCluster
) -> None:
    keep = LaunchRequest("jr.0", "jr", job_command(script, 100), {"sn1": (0,)})
    orphan = LaunchRequest("jo.0", "jo", job_command(script, 100), {"sn1": (1,)})
    quick = LaunchRequest("jq.0", "jq", job_command(script, 1), {"sn2": (0,)})
    for req in (keep, orphan, quick):
        backend.launch(req)
    wait_for(backend, lambda s: running("jr.0", "jo.0")(s) and exited("jq.0")(s))
    slurm_id = backend.jobs["jr.0"].slurm_id
    # The driver restarts: a new object, knowing only jr.0 and jq.0.
    fresh = SlurmBackend(backend.root, backend.instance, env=cluster.env)
    fresh.recover({r.request_id: KnownRequest(r) for r in (keep, quick)})
    obs = fresh.observe()
    assert obs["jr.0"].state is ProcState.RUNNING and obs["jr.0"].pid == slurm_id
    assert obs["jq.0"].state is ProcState.EXITED and obs["jq.0"].exit_code == 0
    assert "jo.0" not in obs
    deadline = time.monotonic() + 15
    while True:
        states = {j["name"]: j["job_state"] for j in slurm_jobs(cluster, fresh.name_prefix)}
        if states[fresh.job_name("jo.0")] == "CANCELLED":
            break
        assert time.monotonic() < deadline, states
        time.sleep(0.2)
    assert states[fresh.job_name("jr.0")] == "RUNNING"
    fresh.terminate("jr.0", 10.0)
    wait_for(fresh, exited("jr.0"))
    assert fresh.observe()["jr.0"].exit_code == EXIT_PREEMPTED


def test_drained_node_in_inventory_and_its_job_reported(
    backend: SlurmBackend, cluster: SlurmCluster
) -> None:
    nodes = {n.name: n for n in backend.inventory()}
    assert {n: (v.gpus, v.gpu_type) for n, v in nodes.items()} == {
        "sn1": (4, "a100"),
        "sn2": (4, "a100"),
        "sn3": (2, "v100"),
    }
    assert all(n.available for n in nodes.values())
    assert backend.unavailable_nodes() == frozenset()
    cluster.set_node_state("sn2", "drain", reason="disk failing")
    try:
        drained = {n.name: n for n in backend.inventory()}["sn2"]
        assert not drained.available and "DRAIN" in drained.flags
        assert drained.reason == "disk failing"
        assert backend.unavailable_nodes() == {"sn2"}
        spec = inventory_cluster(backend.inventory(), only_available=True)
        assert [n.name for n in spec.nodes] == ["sn1", "sn3"]
        assert inventory_cluster(backend.inventory()).total_gpus == 10
        backend.launch(LaunchRequest("jd.0", "jd", ("true",), {"sn2": (0,)}))
        wait_for(backend, exited("jd.0"))
        assert backend.observe()["jd.0"].exit_code is None
        errors = backend.errors()
        assert [(e.request_id, e.kind) for e in errors] == [("jd.0", "node_unavailable")]
        assert "sn2" in errors[0].message and "disk failing" in errors[0].message
    finally:
        cluster.set_node_state("sn2", "resume")


def test_job_cancelled_outside_dlsched_is_reported(
    backend: SlurmBackend, script: Path, cluster: SlurmCluster
) -> None:
    stubborn = ("sh", "-c", "trap '' TERM; sleep 120")
    backend.launch(LaunchRequest("jx.0", "jx", job_command(script, 100), {"sn1": (0,)}))
    backend.launch(LaunchRequest("jy.0", "jy", stubborn, {"sn1": (1,)}))
    wait_for(backend, running("jx.0", "jy.0"))
    # The contract job traps SIGTERM once it runs its loop: wait for its first status.
    status = backend.workdir("jx") / "status.json"
    deadline = time.monotonic() + 60
    while not status.exists():
        assert time.monotonic() < deadline, "the job never reported a status"
        time.sleep(0.1)
    for rid in ("jx.0", "jy.0"):
        cluster.run("scancel", str(backend.jobs[rid].slurm_id))
    wait_for(backend, exited("jx.0", "jy.0"))
    obs = backend.observe()
    # Slurm's cancel sends SIGTERM first: the contract job checkpoints (resumable, no error);
    # the one ignoring it is killed after KillWait and reported.
    assert obs["jx.0"].exit_code == EXIT_PREEMPTED
    errors = backend.errors()
    if obs["jy.0"].exit_code is None:
        assert [(e.request_id, e.kind) for e in errors] == [("jy.0", "slurm_failed")]
        assert "CANCELLED" in errors[0].message
    else:
        # The wrapper outlived the job by a moment and recorded its death by SIGKILL.
        assert obs["jy.0"].exit_code == KILLED
        assert errors == []


def test_launch_on_unknown_node_fails_with_a_typed_error(backend: SlurmBackend) -> None:
    backend.launch(LaunchRequest("jn.0", "jn", ("true",), {"nowhere": (0,)}))
    obs = backend.observe()["jn.0"]
    assert obs.state is ProcState.EXITED and obs.exit_code is None
    errors = backend.errors()
    assert [(e.request_id, e.kind) for e in errors] == [("jn.0", "launch_failed")]
    assert "sbatch" in errors[0].message


def test_cluster_file_written_from_the_inventory(
    cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    assert main([str(tmp_path / "c.toml"), "--name", "here"]) == 0
    spec = read_cluster_toml(tmp_path / "c.toml")
    assert spec.name == "here"
    assert [(n.name, n.gpus, n.gpu_type) for n in spec.nodes] == [
        ("sn1", 4, "a100"),
        ("sn2", 4, "a100"),
        ("sn3", 2, "v100"),
    ]


def test_parse_gres_reads_typed_untyped_and_mixed() -> None:
    assert parse_gres("gpu:a100:4(S:0)") == (4, "a100")
    assert parse_gres("gpu:2") == (2, "gpu")
    assert parse_gres("gpu:a100:2,gpu:v100:2") == (4, "a100")
    assert parse_gres("") == (0, "gpu")
