"""Job isolation on the local back end with sandbox users: a hostile job tries every escape
against a real ``dlsched serve`` (another tenant's files and processes, the token file, the
store, the service's command line and environment, its own environment) and each one fails.

These tests need root and the pool of ``make sandbox-users`` (CI runs the suite as root after
``make system``); they skip, saying which is missing, elsewhere.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from dlsched.backends.base import SANDBOX_BUSY, LaunchRequest, ProcState
from dlsched.backends.confinement import Confinement, JobLimits, probe
from dlsched.backends.job_env import allowed, check_extra_names, job_environment
from dlsched.backends.local import REQUEST_VAR, LocalBackend
from dlsched.backends.sandbox import (
    SandboxError,
    SandboxPool,
    SandboxUser,
    pool_users,
    resolve_mode,
)
from dlsched.cli.main import app as cli
from tests.service.service_proc import ServiceProcess, kill_jobs_of

ADMIN = "admin-token-" + secrets.token_hex(12)
TEAM_A = "team-a-token-" + secrets.token_hex(12)
TEAM_B = "team-b-token-" + secrets.token_hex(12)
TOKENS = f"""
admin_token = "{ADMIN}"

[tenants.team-a]
token = "{TEAM_A}"
queues = ["qa"]

[tenants.team-b]
token = "{TEAM_B}"
queues = ["qb"]
"""

needs_sandbox = pytest.mark.skipif(
    os.geteuid() != 0 or not pool_users(),
    reason="needs root and the sandbox users (sudo make system, or make sandbox-users)"
    if os.geteuid() != 0
    else "no sandbox users dlsched-sbN: run make sandbox-users (as root)",
)

# Each line: NAME:denied, or NAME:ESCAPED when the attempt worked. $1 another tenant's job
# directory, $2 the token file, $3 the store, $4 the service's pid, $5 a process of the other
# tenant's job, $6 a secret of the service's environment, $7 and $9 the halves of a secret of
# its command line (whole, it would be in this job's own command line), $8 the admin token.
HOSTILE = r"""
printf '%s%s\n' "$7" "$9" > needle
try() { n=$1; shift; if "$@" >/dev/null 2>&1; then echo "$n:ESCAPED"; else echo "$n:denied"; fi; }
try list_other_job_dir ls "$1"
try read_other_job_file cat "$1/mine.txt"
try write_other_job_dir touch "$1/planted"
try read_token_file cat "$2"
try read_store cat "$3"
try list_service_dir ls "$(dirname "$3")"
try read_service_environ grep -q -a -- "$6" "/proc/$4/environ"
try read_service_cmdline grep -q -a -F -f needle "/proc/$4/cmdline"
try scan_every_cmdline sh -c 'cat /proc/[0-9]*/cmdline | tr "\0" " " | grep -q -F -f needle'
try scan_every_environ sh -c 'cat /proc/[0-9]*/environ | tr "\0" " " | grep -q -- "$0"' "$6"
try signal_other_job kill -TERM "$5"
try signal_service kill -0 "$4"
try token_in_env sh -c 'env | grep -q -e "$0" -e "$1"' "$6" "$8"
try secret_names_in_env sh -c 'env | grep -q -E "^(PG|DLSCHED_TOKEN|DLSCHED_URL|DLSCHED_DB)"'
echo "uid:$(id -u)"
env | sed 's/^/env:/'
echo finished
"""


@pytest.fixture(autouse=True)
def one_test_at_a_time() -> Iterator[None]:
    """The machine has one sandbox pool: tests of this module that use it run one at a time
    across xdist workers (a service takes the pool's lock without waiting)."""
    with open("/var/tmp/dlsched-isolation-tests.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture()
def shared() -> Iterator[Path]:
    """A directory the sandbox users can reach (pytest's temporary directories are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="dlsched-iso-", dir="/var/tmp"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def wait(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def job_pids(request_id: str) -> list[tuple[int, int]]:
    """(pid, real uid) of the processes carrying ``request_id`` in their environment."""
    out = []
    want = f"{REQUEST_VAR}={request_id}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if want not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            uid_line = next(
                x for x in (entry / "status").read_text().splitlines() if x.startswith("Uid:")
            )
        except (OSError, StopIteration):
            continue
        out.append((int(entry.name), int(uid_line.split()[1])))
    return out


def remove_cgroups(instance: str) -> None:
    """Remove the cgroups a killed service left (its jobs are dead)."""
    conf = probe(instance)
    if conf.cgroups is not None:
        for parent in {conf.cgroups.memory, conf.cgroups.cpu}:
            for child in parent.iterdir():
                if child.is_dir():
                    child.rmdir()
            parent.rmdir()


def report(log: Path) -> dict[str, str]:
    lines = log.read_text().splitlines()
    return dict(x.split(":", 1) for x in lines if ":" in x and not x.startswith(("env:", "[")))


@needs_sandbox
def test_a_hostile_job_escapes_nothing_on_the_local_back_end(shared: Path) -> None:
    tokens = shared / "tokens.toml"
    tokens.write_text(TOKENS)
    tokens.chmod(0o600)
    db = shared / "state.db"
    env_secret, cmd_secret = "env-secret-" + secrets.token_hex(8), "cmd-" + secrets.token_hex(8)
    os.environ["PGPASSWORD"] = env_secret
    try:
        service = ServiceProcess(
            db,
            "--backend", "local", "--cluster", "1x2", "--round", "0.2",
            "--tokens", str(tokens), "--sandbox", "users", "--job-memory", "256M",
            "--job-cpus", "0.5", "--allow-host", cmd_secret,
        )  # fmt: skip
    finally:
        del os.environ["PGPASSWORD"]
    try:
        url = service.wait_ready()
        jobs = shared / "state.db.jobs" / "jobs"
        with httpx.Client(base_url=url, timeout=10) as http:
            victim = ["sh", "-c", "echo victim-data > mine.txt; sleep 120"]
            b = {"Authorization": f"Bearer {TEAM_B}"}
            a = {"Authorization": f"Bearer {TEAM_A}"}
            r = http.post("/jobs", json={"name": "v", "gpus": 1, "command": victim}, headers=b)
            assert r.status_code == 201, r.text
            wait(lambda: (jobs / "j1" / "mine.txt").exists(), "the victim's file")
            victim_procs = [(p, u) for p, u in job_pids("j1.1") if u != 0]
            assert victim_procs, "the victim job runs as a sandbox user"
            victim_pid, victim_uid = victim_procs[-1]
            mode = (jobs / "j1").stat()
            assert stat.S_IMODE(mode.st_mode) == 0o700 and mode.st_uid == victim_uid
            hostile = [
                "sh", "-c", HOSTILE, "hostile", str(jobs / "j1"), str(tokens), str(db),
                str(service.proc.pid), str(victim_pid), env_secret, cmd_secret[:6], ADMIN,
                cmd_secret[6:],
            ]  # fmt: skip
            r = http.post("/jobs", json={"name": "h", "gpus": 1, "command": hostile}, headers=a)
            assert r.status_code == 201, r.text
            log = jobs / "j2" / "log.txt"
            wait(lambda: log.exists() and "finished" in log.read_text(), "the hostile job")
            # Root (the test) can do each of these: the denials are the sandbox's.
            assert cmd_secret.encode() in Path(f"/proc/{service.proc.pid}/cmdline").read_bytes()
            assert env_secret.encode() in Path(f"/proc/{service.proc.pid}/environ").read_bytes()
            got = report(log)
            escaped = {k: v for k, v in got.items() if v != "denied" and k != "uid"}
            assert len(got) >= 15 and not escaped, log.read_text()
            hostile_uid = int(got["uid"])
            assert hostile_uid != victim_uid and hostile_uid in {u.uid for u in pool_users()}
            names = {
                x[4:].split("=", 1)[0] for x in log.read_text().splitlines() if x[:4] == "env:"
            }
            contract = {"HOME", "PWD", "SHLVL", "OLDPWD", "_", "CUDA_VISIBLE_DEVICES"}
            assert all(allowed(n) or n in contract or n.startswith("DLSCHED_") for n in names)
            assert not {"DLSCHED_TOKEN", "DLSCHED_URL", "PGPASSWORD"} & names
            header = log.read_text().splitlines()[0]
            assert header.startswith("[dlsched] request j2.1: user dlsched-sb")
            conf = probe("iso-check")
            if conf.cgroups is not None:
                assert "cgroup v" in header and "memory 268435456 bytes" in header
            else:
                assert f"no cgroup, memory/CPU limits not enforced ({conf.cgroups_off})" in header
            record = http.get("/jobs/j1", headers=b).json()
            assert record["state"] == "RUNNING" and not (jobs / "j1" / "planted").exists()
            assert os.path.exists(f"/proc/{victim_pid}")
            assert http.delete("/jobs/j1", headers=b).status_code in (200, 202)
            wait(lambda: http.get("/jobs/j1", headers=b).json()["state"] == "CANCELLED", "cancel")
            assert not os.path.exists(f"/proc/{victim_pid}")
            # Given back, the directory is the service's again: the next tenant of that
            # user cannot read it.
            assert (jobs / "j1").stat().st_uid == 0
    finally:
        service.kill9()
        ids = [x.split()[-1] for x in service.log.read_text().splitlines() if "service id" in x]
        for instance in ids:
            kill_jobs_of(instance)
        time.sleep(0.5)
        for instance in ids:
            remove_cgroups(instance)


@needs_sandbox
def test_without_namespaces_the_job_still_runs_as_another_user_and_its_log_says_so(
    shared: Path,
) -> None:
    off = Confinement(False, "disabled by the test", None, "disabled by the test")
    backend = LocalBackend(
        shared / "root", "iso-nons", sandbox=SandboxPool(pool_users()), confinement=off
    )
    try:
        probe_cmd = (
            "sh",
            "-c",
            f"id -u; cat /proc/{os.getpid()}/environ && echo LEAK; kill -0 {os.getpid()} "
            "&& echo SIGNALLED; exit 3",
        )
        backend.launch(LaunchRequest("n.0", "n", probe_cmd, {"n0": (0,)}, tenant="t"))
        wait(lambda: backend.observe()["n.0"].state is ProcState.EXITED, "the job")
        assert backend.observe()["n.0"].exit_code == 3
        lines = (backend.workdir("n") / "log.txt").read_text().splitlines()
        assert "no namespaces (disabled by the test)" in lines[0]
        assert "no cgroup, memory/CPU limits not enforced (disabled by the test)" in lines[0]
        assert int(lines[1]) in {u.uid for u in pool_users()}
        assert "LEAK" not in lines and "SIGNALLED" not in lines
    finally:
        backend.kill_all()
        backend.close()


@needs_sandbox
def test_the_cgroup_limits_apply_where_the_kernel_allows(shared: Path) -> None:
    limits = JobLimits(64 * 2**20, 0.25)
    backend = LocalBackend(
        shared / "root", "iso-cg", sandbox=SandboxPool(pool_users()), limits=limits
    )
    try:
        conf = backend.confinement
        assert conf is not None
        if conf.cgroups is None:
            pytest.skip(f"this kernel gives no cgroup: {conf.cgroups_off}")
        show = "cat /proc/self/cgroup"
        backend.launch(LaunchRequest("c.0", "c", ("sh", "-c", show), {"n0": (0,)}, tenant="t"))
        wait(lambda: backend.observe()["c.0"].state is ProcState.EXITED, "the job")
        log = (backend.workdir("c") / "log.txt").read_text()
        assert "/dlsched-iso-cg/c.0" in log
        # A job that allocates past its memory limit is killed (the kernel's OOM killer).
        hog = (
            "/usr/bin/python3",
            "-c",
            "b = bytearray(512 * 2**20); b[::4096] = b'x' * len(b[::4096])",
        )
        backend.launch(LaunchRequest("c.1", "c2", hog, {"n0": (0,)}, tenant="t"))
        wait(lambda: backend.observe()["c.1"].state is ProcState.EXITED, "the memory hog")
        assert backend.observe()["c.1"].exit_code == 128 + 9
    finally:
        backend.kill_all()
        backend.close()
    assert not conf.cgroups.memory.exists()


def test_detection_reports_what_an_unprivileged_process_may_not_do() -> None:
    if os.geteuid() != 0 or not pool_users():
        pytest.skip("needs root and the sandbox users, to probe as one of them")
    user = pool_users()[0]
    src = str(Path(__file__).resolve().parents[2] / "src")
    code = (
        "from dlsched.backends.confinement import probe; c = probe('unpriv'); "
        "print(c.namespaces, c.cgroups is None); print(c.namespaces_off); print(c.cgroups_off)"
    )
    done = subprocess.run(
        ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups", "--",
         "/usr/bin/python3", "-c", code],
        capture_output=True, text=True, env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        cwd="/", check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, ns_off, cg_off = done.stdout.splitlines()
    assert first == "False True"
    assert "unshare" in ns_off and "denied" in cg_off.lower()


def test_the_pool_never_gives_one_user_to_two_tenants() -> None:
    fake = [SandboxUser(f"u{i}", 5000 + i, 5000 + i) for i in range(2)]
    pool = SandboxPool(fake)
    a1, a2, b1 = pool.acquire("a.1", "a"), pool.acquire("a.2", "a"), pool.acquire("b.1", "b")
    assert a1 == a2 and b1 is not None and b1 != a1
    assert pool.acquire("c.1", "c") is None  # every user is another tenant's
    assert pool.release("a.1") is None  # tenant a still runs a.2
    assert pool.release("a.2") == a1
    assert pool.acquire("c.1", "c") == a1
    assert not pool.adopt("x.1", "x", b1)  # b holds it


def test_the_environment_is_an_allow_list() -> None:
    service = {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TZ": "UTC",
        "DLSCHED_TOKEN": "t",
        "DLSCHED_URL": "u",
        "PGPASSWORD": "p",
        "AWS_SECRET_ACCESS_KEY": "s",
        "PYTHONPATH": "/x",
    }
    env = job_environment(service, "/w", {"DLSCHED_JOB_ID": "j1"}, ("PYTHONPATH",))
    assert env == {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TZ": "UTC",
        "PYTHONPATH": "/x",
        "HOME": "/w",
        "DLSCHED_JOB_ID": "j1",
    }
    assert job_environment({}, "/w", {})["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    for bad in ("DLSCHED_TOKEN", "PGPASSWORD", "1X", "A-B"):
        with pytest.raises(ValueError, match="--job-env"):
            check_extra_names([bad])


def test_sandbox_modes_and_their_refusals() -> None:
    with pytest.raises(SandboxError, match="expected one of auto, users, none"):
        resolve_mode("bogus", False)
    assert resolve_mode("none", True) == ("none", None)
    if os.geteuid() == 0:
        with pytest.raises(SandboxError, match="refusing to run tenants' jobs as root"):
            resolve_mode("auto", True, prefix="dlsched-nosuch")
        mode, warning = resolve_mode("auto", False, prefix="dlsched-nosuch")
        assert mode == "none" and warning is not None and "\n" not in warning
        with pytest.raises(SandboxError, match="--sandbox users: no sandbox users"):
            resolve_mode("users", False, prefix="dlsched-nosuch")
    else:
        with pytest.raises(SandboxError, match="not running as root"):
            resolve_mode("users", False)


def test_serve_refuses_bad_sandbox_options_in_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    db = ["--db", str(tmp_path / "s.db"), "--port", "0"]
    for args, expected in (
        (["--sandbox", "bogus"], "expected one of auto, users, none"),
        (["--backend", "fake", "--sandbox", "users"], "applies only to backend 'local'"),
        (["--job-memory", "lots"], "--job-memory 'lots'"),
        (["--job-env", "DLSCHED_TOKEN"], "never reach jobs"),
    ):
        r = runner.invoke(cli, ["serve", *db, *args])
        assert r.exit_code == 2, r.output
        assert expected in r.output and "Traceback" not in r.output
        assert len(r.output.strip().splitlines()) == 1


@needs_sandbox
def test_a_launch_waits_when_every_sandbox_user_is_another_tenants(shared: Path) -> None:
    one = pool_users()[:1]
    backend = LocalBackend(shared / "root", "iso-busy", sandbox=SandboxPool(one))
    try:
        backend.launch(LaunchRequest("a.0", "a", ("sleep", "30"), {"n0": (0,)}, tenant="a"))
        backend.launch(LaunchRequest("b.0", "b", ("true",), {"n0": (1,)}, tenant="b"))
        assert backend.observe()["b.0"].state is ProcState.EXITED
        assert [e.kind for e in backend.errors()] == [SANDBOX_BUSY]
    finally:
        backend.kill_all()
        backend.close()
