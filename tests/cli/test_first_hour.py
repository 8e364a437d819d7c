"""What a new user meets in the first hour (issue 14): each failure mode the issue lists, now
one clear line and exit status 2 (or the right result), never a traceback or lost data.

Missing extras are simulated in a subprocess by setting ``sys.modules[name] = None``, which
makes ``import name`` fail exactly as it does where the package is not installed.
"""

from __future__ import annotations

import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from dlsched.cli.group import BLAS_SPIN, COMMANDS, calm_blas_threads, load_command
from dlsched.cli.main import app
from dlsched.extras import EXTRAS, MissingExtra, explain
from dlsched.trace.bundled import bundled_trace_path

PHILLY_2000 = bundled_trace_path("philly_jobs_2000")  # jobs name Philly VCs
VC_SLICE = bundled_trace_path("vc_0e4a51")
HEAVY = ("numpy", "pyarrow", "scipy", "dlsched.sim", "dlsched.elastic", "dlsched.runner")
OPTIONAL = ("scipy.optimize", "dlsched.elastic", "dlsched.ps", "dlsched.tenancy", "dlsched.serving")
"""What a run of rigid jobs never needs: the other job kinds, queues, serving, the LP solvers."""
SERVICE_ONLY = ("fastapi", "uvicorn", "starlette", "httpx", "httpcore")
"""The modules of the ``service`` extra (and what they bring), which the client commands need
none of."""


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def dlsched(
    *args: str | Path, without: Sequence[str] = (), cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``dlsched ARGS`` in a fresh interpreter in which the modules ``without`` are missing."""
    code = (
        "import sys\n"
        + "".join(f"sys.modules[{m!r}] = None\n" for m in without)
        + "from dlsched.cli.main import app\n"
        "app(args=sys.argv[1:], prog_name='dlsched')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLSCHED_")}
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def one_line_error(done: subprocess.CompletedProcess[str] | Result) -> str:
    """The single ``error: ...`` line a refused command printed (asserting there is one)."""
    err = done.stderr
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# ---- start-up: no simulator for help and the client commands --------------------------------


def imported_modules(args: Sequence[str], env: dict[str, str]) -> tuple[int, set[str]]:
    code = textwrap.dedent(
        """
        import json, sys
        from dlsched.cli.main import app
        try:
            app(args=sys.argv[1:], prog_name="dlsched")
        except SystemExit as exc:
            code = exc.code or 0
        print("MODULES " + json.dumps(sorted(sys.modules)), file=sys.stderr)
        sys.exit(code)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=60
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    return done.returncode, set(json.loads(line.removeprefix("MODULES ")))


def under(modules: set[str], prefixes: Sequence[str]) -> list[str]:
    """The ``modules`` that are one of ``prefixes`` or inside one of them."""
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_help_jobs_and_submit_import_no_simulator_numpy_or_scipy(tmp_path: Path) -> None:
    from dlsched.service.server import Service, ServiceConfig
    from tests.service.helpers import serving

    config = ServiceConfig(backend="fake", db=tmp_path / "state.db", round_s=0.2, poll_s=0.05)
    with serving(config) as (url, service):
        env = {**os.environ, "DLSCHED_URL": url, "DLSCHED_TOKEN_FILE": str(config.token_path)}
        assert isinstance(service, Service)
        for args in (
            ["--help"],
            ["submit", "--gpus", "1", "--name", "a", "--", "sleep", "1"],
            ["jobs"],
        ):
            code, modules = imported_modules(args, env)
            assert code == 0, args
            heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY))
            assert heavy == [], (args, heavy)
            assert under(modules, SERVICE_ONLY) == [], args


def test_blas_threads_stop_spinning_unless_the_user_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every command shortens how long OpenBLAS's idle threads spin (their default spin is CPU
    time a command pays on every other core as soon as numpy loads), in the C environment only:
    the user's own setting stands, and ``os.environ``, which the jobs a service starts copy,
    stays as it was."""
    name, value = BLAS_SPIN
    set_now: list[tuple[str, str]] = []
    monkeypatch.setattr(os, "putenv", lambda k, v: set_now.append((k, v)))
    monkeypatch.delenv(name, raising=False)
    assert calm_blas_threads() and set_now == [(name, value)]
    assert name not in os.environ
    set_now.clear()
    assert not calm_blas_threads({name: "28"}) and set_now == []


@pytest.mark.parametrize(
    "args",
    [["list", "policies"], ["list", "placements"], ["list", "clusters"], ["preset", "list"]],
)
def test_listings_import_no_simulator_numpy_or_optional_part(args: list[str]) -> None:
    """Listing policies (elastic and PS ones included) imports no policy that needs numpy or
    scipy's optimizers (dlsched.policy.catalog declares them), and listing presets no runner."""
    code, modules = imported_modules(args, dict(os.environ))
    assert code == 0, args
    assert under(modules, HEAVY) == [], args
    assert under(modules, OPTIONAL) == [], args


def rigid_run_modules(tmp_path: Path) -> set[str]:
    """The modules ``dlsched simulate`` of a 10-job rigid slice of a bundled trace imports."""
    trace = tmp_path / "ten.csv"
    trace.write_text("".join(VC_SLICE.read_text().splitlines(keepends=True)[:11]))
    args = ["simulate", "--trace", str(trace), "--cluster", "32x8", "--out", str(tmp_path / "r")]
    code, modules = imported_modules(args, dict(os.environ))
    assert code == 0
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["jobs"] == 10
    return modules


def test_a_rigid_run_imports_no_allocation_policy_or_serving(tmp_path: Path) -> None:
    """A rigid run imports nothing of elastic or parameter-server scheduling (their policies,
    adapters, scipy's optimizers) nor of serving."""
    modules = rigid_run_modules(tmp_path)
    assert under(modules, OPTIONAL) == []
    assert "dlsched.sim.elastic_adapter" not in modules
    assert "dlsched.sim.ps_adapter" not in modules


BLOCK_SERVICE = """
import sys

class Uninstalled:
    \"\"\"Finds the modules of the service extra nowhere, as where it is not installed.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Uninstalled())
from dlsched.cli.main import app
try:
    app(args=sys.argv[1:], prog_name="dlsched")
finally:
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
    assert not loaded, loaded
"""


def test_the_client_commands_need_no_service_extra(tmp_path: Path) -> None:
    """``pip install dlsched`` (no ``service`` extra) is enough to submit to a running service,
    list its jobs and cancel them: against a real ``dlsched serve --backend fake``, the client
    commands run where fastapi, uvicorn and httpx cannot be imported."""
    log = tmp_path / "serve.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dlsched.cli.main", "serve", "--backend", "fake",
             "--db", "state.db", "--port", "0", "--round", "0.2"],
            cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    try:
        text = _wait_for(log, "dlsched service at ", proc, 60)
        url = next(w for w in text.split() if w.startswith("http://")).rstrip("/")
        env = {k: v for k, v in os.environ.items() if not k.startswith("DLSCHED_")}
        env |= {"DLSCHED_URL": url, "DLSCHED_TOKEN_FILE": str(tmp_path / "state.db.token")}
        blocked = f"BLOCKED = {SERVICE_ONLY!r}\n" + BLOCK_SERVICE

        def client(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-c", blocked, *args],
                capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60,
            )  # fmt: skip

        refused = client("serve", "--db", "other.db")
        assert one_line_error(refused) == (
            "error: dlsched serve needs fastapi (the 'service' extra): "
            "pip install 'dlsched[service]'"
        )
        first = client("submit", "--gpus", "1", "--name", "first", "--", "sleep", "1000")
        assert first.returncode == 0, first.stderr
        assert first.stdout == "submitted j1 (first, 1 GPUs)\n"
        second = client("submit", "--gpus", "2", "--name", "second", "--", "true")
        assert second.returncode == 0, second.stderr
        listed = client("jobs", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [(j["id"], j["name"]) for j in json.loads(listed.stdout)] == [
            ("j1", "first"),
            ("j2", "second"),
        ]
        table = client("jobs", "--user", getpass.getuser())
        assert table.returncode == 0 and "first" in table.stdout and "second" in table.stdout
        cancelled = client("cancel", "j1")
        assert cancelled.returncode == 0, cancelled.stderr
        assert cancelled.stdout.startswith("j1: ")
        deadline = time.monotonic() + 30
        while (state := json.loads(client("jobs", "--json").stdout)[0]["state"]) != "CANCELLED":
            assert time.monotonic() < deadline, state
            time.sleep(0.2)
        unknown = client("cancel", "j99")
        assert unknown.returncode == 1 and "HTTP 404" in one_line_error(unknown)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    gone = client("jobs")
    assert gone.returncode == 1
    assert f"cannot reach the service at {url}" in one_line_error(gone)


def test_version_short_help_and_the_command_list() -> None:
    from dlsched import __version__

    assert invoke("--version").output == f"dlsched {__version__}\n"
    listing = invoke("-h")
    assert listing.exit_code == 0
    for name in COMMANDS:
        assert name in listing.output
    for args in (["simulate", "-h"], ["trace", "convert", "-h"], ["serve", "-h"]):
        shown = invoke(*args)
        assert shown.exit_code == 0 and "--help" in shown.output and "-h" in shown.output
    trace_help = invoke("trace", "--help").output
    assert "inspect" not in trace_help and "synth" in trace_help


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_listed_help_is_the_commands_own(name: str) -> None:
    """The command list is drawn without importing the commands: its one-line help must stay
    what each command says of itself."""
    own = " ".join((load_command(name).help or "").split())
    assert own.startswith(COMMANDS[name].help)


# ---- outputs: never an input, never replaced without --force --------------------------------


def test_trace_convert_never_replaces_its_input_or_an_unknown_file(tmp_path: Path) -> None:
    source = tmp_path / "x.csv"
    source.write_bytes(PHILLY_2000.read_bytes())
    before = source.read_bytes()
    for force in ([], ["--force"]):
        refused = invoke("trace", "convert", source, "--out", source, *force)
        assert refused.exit_code == 2
        assert f"{source}: is an input of this command" in one_line_error(refused)
        assert source.read_bytes() == before
    out = tmp_path / "x.parquet"
    assert invoke("trace", "convert", source, "--out", out).exit_code == 0
    again = invoke("trace", "convert", "--trace", source, "--out", out)
    assert again.exit_code == 2
    assert "already exists (Parquet file); pass --force" in one_line_error(again)
    assert invoke("trace", "convert", source, "--out", out, "--force").exit_code == 0
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    refused = invoke("trace", "convert", source, "--out", notes, "--force")
    assert refused.exit_code == 2 and "is not a Parquet file; refusing" in refused.stderr
    assert notes.read_text() == "mine"


def test_a_parquet_file_is_recognized_by_its_contents(tmp_path: Path) -> None:
    parquet = tmp_path / "x.parquet"
    assert invoke("trace", "convert", VC_SLICE, "--out", parquet).exit_code == 0
    disguised = tmp_path / "y.csv"
    disguised.write_bytes(parquet.read_bytes())
    checked = invoke("trace", "validate", disguised)
    assert checked.exit_code == 0
    assert "ok: format canonical, 990 rows read" in checked.output


def test_simulate_never_replaces_a_run_holding_its_own_trace(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert invoke("simulate", "--trace", VC_SLICE, "--cluster", "32x8", "--out", run).exit_code == 0
    trace = run / "jobs.parquet"  # not a trace, but an input all the same
    refused = invoke("simulate", "--trace", trace, "--cluster", "32x8", "--out", run, "--force")
    assert refused.exit_code == 2
    assert f"{run}: holds {trace}, an input of this command" in one_line_error(refused)


KILL_MID_WRITE = """
import os, signal, sys
from pathlib import Path
from dlsched.metrics.rundir import RUN_DIR
stage = sys.argv[2]
real_replace = os.replace
def replace(src, dst):
    real_replace(src, dst)
    if stage == "between-renames":
        os.kill(os.getpid(), signal.SIGKILL)
os.replace = replace
def fill(tmp: Path) -> None:
    (tmp / "jobs.parquet").write_text("half")
    if stage == "filling":
        os.kill(os.getpid(), signal.SIGKILL)
RUN_DIR.write(Path(sys.argv[1]), fill, force=True)
"""


def test_an_interrupted_write_leaves_nothing_the_next_write_keeps(tmp_path: Path) -> None:
    """A run killed while writing leaves only a hidden sibling; the next write removes it.
    Killed between moving the old run aside and renaming the new one in, the old run is put
    back first (and, without --force, kept)."""
    out = tmp_path / "runs" / "r"
    base = ("simulate", "--trace", VC_SLICE, "--cluster", "32x8", "--out", out)
    for stage in ("filling", "between-renames"):
        assert invoke(*base, "--force").exit_code == 0
        before = (out / "summary.json").read_text()
        killed = subprocess.run([sys.executable, "-c", KILL_MID_WRITE, str(out), stage])
        assert killed.returncode == -signal.SIGKILL
        hidden = [p.name for p in out.parent.iterdir() if p.name.startswith(".")]
        assert hidden, "the killed write left its hidden sibling"
        kept = invoke(*base)
        assert kept.exit_code == 2 and "already exists" in kept.stderr
        assert (out / "summary.json").read_text() == before
        assert [p.name for p in out.parent.iterdir()] == ["r"]


# ---- runs of nothing -------------------------------------------------------------------------


def test_runs_that_would_simulate_no_job_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cases = {
        ("--cluster", "32x8"): "all 2,000 jobs were set aside, none ran: partition '",
        ("--cluster", "philly-vcs", "--vc", "nosuch"): "--vc nosuch: no job of the trace is in",
        ("--cluster", "philly-vcs", "--subsample", "0"): "--subsample must be a fraction in",
        ("--cluster", "philly-vcs", "--start", "2018-01-01", "--end", "2018-02-01"): (
            "--start 2018-01-01 --end 2018-02-01: no job of the trace was submitted then; "
            "its jobs span 2017-"
        ),
        ("--cluster", "philly-vcs", "--start", "2017-12-01", "--end", "2017-11-01"): (
            "--end 2017-11-01 is before --start 2017-12-01"
        ),
    }
    for args, message in cases.items():
        refused = invoke("simulate", "--trace", PHILLY_2000, *args, "--out", out)
        assert refused.exit_code == 2, args
        assert message in one_line_error(refused), args
        assert not out.exists()
    hint = invoke("simulate", "--trace", PHILLY_2000, "--cluster", "32x8", "--out", out).stderr
    assert "--no-partitions" in hint
    pooled = invoke(
        "simulate", "--trace", PHILLY_2000, "--cluster", "32x8", "--no-partitions", "--out", out
    )
    assert pooled.exit_code == 0, pooled.output


# ---- missing extras: one line, the right install command, before any work --------------------


@pytest.mark.parametrize(
    ("args", "missing", "expected"),
    [
        (
            ["predict", "eval", VC_SLICE, "--estimator", "history,lgbm"],
            "lightgbm",
            "--estimator lgbm needs lightgbm (the 'predict' extra): pip install 'dlsched[predict]'",
        ),
        (
            # The trace does not exist: the extra is checked before anything is read.
            ["simulate", "--trace", "absent.csv", "--cluster", "pollux", "--policy", "ones",
             "--out", "run"],
            "sklearn",
            "--policy ones needs scikit-learn (the 'elastic' extra): "
            "pip install 'dlsched[elastic]'",
        ),
        (
            ["analyze", VC_SLICE, "--out", "report"],
            "matplotlib",
            "dlsched analyze needs matplotlib (the 'analysis' extra): "
            "pip install 'dlsched[analysis]'",
        ),
        (
            ["energy", "replay", "philly", "--preset", "philly", "--out", "energy"],
            "lightgbm",
            "dlsched energy replay needs lightgbm (the 'predict' extra): "
            "pip install 'dlsched[predict]'",
        ),
        (
            ["serve", "--db", "state.db"],
            "fastapi",
            "dlsched serve needs fastapi (the 'service' extra): pip install 'dlsched[service]'",
        ),
    ],
)  # fmt: skip
def test_a_missing_extra_is_one_line_with_its_install_command(
    tmp_path: Path, args: list[str], missing: str, expected: str
) -> None:
    done = dlsched(*args, without=[missing], cwd=tmp_path)
    assert done.returncode == 2
    assert one_line_error(done) == f"error: {expected}"
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a store or a token


def test_an_unexpected_missing_module_of_an_extra_gets_the_hint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Where no check ran first, a ModuleNotFoundError for a module an extra brings still ends
    as the one-line hint; one for a core module is a broken installation (a bug report)."""

    def needs_sklearn(*_: object) -> None:
        raise ModuleNotFoundError("No module named 'sklearn'", name="sklearn.ensemble")

    monkeypatch.setattr("dlsched.cli.compare_cmd.compare_runs", needs_sklearn)
    done = invoke("compare", tmp_path)
    assert done.exit_code == 2
    assert one_line_error(done) == (
        "error: dlsched compare needs scikit-learn (the 'elastic' extra): "
        "pip install 'dlsched[elastic]'"
    )
    core = ModuleNotFoundError("No module named 'numpy'", name="numpy")
    assert explain(core, "x") is None
    assert explain(MissingExtra("y", "torch", "train"), "x") == str(
        MissingExtra("y", "torch", "train")
    )
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in str(
        MissingExtra("y", "torch", "train")
    )
    assert all(EXTRAS[extra] for extra in EXTRAS)


def test_a_bug_shows_its_traceback_and_where_to_report_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("an internal inconsistency")

    monkeypatch.setattr("dlsched.cli.compare_cmd.compare_runs", broken)
    done = invoke("compare", tmp_path)
    assert done.exit_code == 70
    assert "Traceback" in done.stderr and "RuntimeError: an internal inconsistency" in done.stderr
    assert "a bug in dlsched rather than a problem with your input" in done.stderr
    assert "issue tracker" in done.stderr


# ---- the live service -------------------------------------------------------------------------


def test_serve_on_a_port_in_use_says_so_and_creates_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = dlsched("serve", "--port", str(port), "--db", "state.db", cwd=tmp_path)
    assert done.returncode == 2
    assert one_line_error(done) == (
        f"error: 127.0.0.1:{port} is already in use (another dlsched serve?); choose another "
        "with --port (--port 0: any free port)"
    )
    assert list(tmp_path.iterdir()) == []


def _wait_for(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while text not in path.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, path.read_text()
        time.sleep(0.1)
    return path.read_text()


def test_a_relative_db_runs_local_jobs_to_completed(tmp_path: Path) -> None:
    """``serve --db state.db`` from the working directory, as the README types it: the local
    back end's jobs run in their own directories and still find their files."""
    log = tmp_path / "serve.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dlsched.cli.main", "serve", "--backend", "local",
             "--cluster", "1x2", "--db", "state.db", "--port", "0", "--round", "0.5"],
            cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    try:
        text = _wait_for(log, "dlsched service at ", proc, 60)
        url = next(w for w in text.split() if w.startswith("http://")).rstrip("/")
        assert f"token file: {tmp_path / 'state.db.token'}" in text
        client = ["--url", url, "--token-file", "state.db.token"]
        submitted = dlsched(
            "submit", "--name", "rel", *client, "--", "sh", "-c", "echo done > out.txt",
            cwd=tmp_path,
        )  # fmt: skip
        assert submitted.returncode == 0, submitted.stderr
        deadline = time.monotonic() + 60
        while True:
            listed = dlsched("jobs", "--json", *client, cwd=tmp_path)
            (job,) = json.loads(listed.stdout)
            if job["state"] in ("COMPLETED", "FAILED") or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert (job["state"], job["reason"]) == ("COMPLETED", None)
        assert (tmp_path / "state.db.jobs" / "jobs" / job["id"] / "out.txt").read_text() == "done\n"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def test_a_refused_request_says_where_the_token_was_looked_for(tmp_path: Path) -> None:
    from dlsched.service.server import ServiceConfig
    from tests.service.helpers import serving

    config = ServiceConfig(backend="fake", db=tmp_path / "svc" / "state.db")
    wrong = tmp_path / "wrong.token"
    wrong.write_text("not-the-token\n")
    with serving(config) as (url, _):
        done = dlsched("submit", "--url", url, "--token-file", wrong, "--", "true", cwd=tmp_path)
        assert done.returncode == 1
        line = one_line_error(done)
        assert "HTTP 401" in line and f"taken from --token-file {wrong}" in line
        assert "--token-file PATH or DLSCHED_TOKEN_FILE=PATH" in line
        anonymous = dlsched("cancel", "j1", "--url", url, cwd=tmp_path)
        assert f"no default token file {tmp_path / 'state.db.token'}" in one_line_error(anonymous)
