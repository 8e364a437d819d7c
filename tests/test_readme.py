"""Every command block of README.md and of the reference pages (docs/reference/), run exactly
as written, as a user following them runs it: from the root of a fresh checkout with the public
traces beside it in ``../shared``, each section's commands in order in one working directory. An
example that breaks, or a new block no session covers, fails here.

The live-service blocks start the page's own ``dlsched serve ...`` (default port 8765) in a
network namespace of their own and check that its jobs really reach their final states.
"""

from __future__ import annotations

import csv
import itertools
import json
import shlex
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.readme_commands import (
    REPO,
    SHARED,
    Block,
    inline_commands,
    is_syntax,
    make_checkout,
    readme_blocks,
    run_command,
    user_env,
)

PAGES = (
    "README.md",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs" / "reference").glob("*.md")),
)
"""The pages whose command blocks this test runs, section by section (the guide's run page by
page in tests/test_docs.py)."""
TEXTS = {page: (REPO / page).read_text(encoding="utf-8") for page in PAGES}
INLINE_NOT_RUN = {
    "make system": "make test runs it (as root) before this suite",
    "make test-long": "it runs this suite's long tests (CI runs it after make test)",
}


@dataclass(frozen=True)
class Session:
    """README sections whose blocks run in order in one checkout."""

    headings: tuple[str, ...]
    page: str = "README.md"
    shared: bool = False  # needs ../shared/traces
    slow: bool = False
    long: bool = False  # about half a minute or more: CI runs it after make test
    service: bool = False  # starts dlsched serve: run in its own network namespace
    slurm: bool = False  # on a throwaway Slurm cluster (in the session's network namespace,
    # with this host's name on loopback)
    not_run: dict[str, str] = field(default_factory=dict)  # command -> why this test skips it
    broken: dict[str, str] = field(default_factory=dict)  # command -> issue; must still fail
    after_jobs_final: tuple[str, ...] = ()


SESSIONS = {
    "quick-start": Session(
        ("Quick start (Python 3.11, a fresh machine)",),
        not_run={"make test": "it is the command that runs this test suite"},
    ),
    "workflow": Session(
        ("The workflow", "Command-line conventions"),
        page="docs/reference/simulate.md",
        shared=True,
        long=True,
    ),
    "helios": Session(
        ("Helios: characterization, duration prediction, QSSF", "A Helios-like trace generator"),
        page="docs/reference/helios.md",
        shared=True,
        slow=True,
        long=True,
    ),
    "energy": Session(
        ("Energy: CES offline and inside the simulator",),
        page="docs/reference/energy.md",
        slow=True,
        long=True,
    ),
    "sweeps": Session(
        ("Sweeps",), page="docs/reference/sweeps.md", shared=True, slow=True, long=True
    ),
    "perf": Session(("Performance models from profiles",), page="docs/reference/jobs.md"),
    "ps": Session(("Parameter-server jobs: SMD",), page="docs/reference/jobs.md", slow=True),
    "elastic": Session(
        ("Elastic jobs: Pollux workloads",),
        page="docs/reference/jobs.md",
        shared=True,
        slow=True,
    ),
    "mixed": Session(
        ("Mixed workloads",), page="docs/reference/jobs.md", shared=True, slow=True, long=True
    ),
    "serving": Session(("LLM inference serving",), page="docs/reference/serving.md"),
    "serving-shared": Session(
        ("Request traces, disaggregation, serving beside training",),
        page="docs/reference/serving.md",
        shared=True,
    ),
    "tenants": Session(
        ("Shared clusters: queues and quotas",),
        page="docs/reference/tenancy.md",
        shared=True,
        slow=True,
    ),
    "whatif": Session(
        ("What if: the same jobs under another quota configuration",),
        shared=True,
        slow=True,
        long=True,
    ),
    "deadlines": Session(("Deadlines: which jobs finish in time?",), shared=True),
    "colocation": Session(("Co-location: which jobs can share a GPU?",)),
    "heterogeneity": Session(("Heterogeneous GPUs: which type for which job?",), shared=True),
    "topology": Session(
        ("Network topology: racks, blocks and topology-aware placement",),
        page="docs/reference/tenancy.md",
    ),
    "service": Session(
        ("The live service", "The training workload and the dashboard"),
        page="docs/reference/live.md",
        slow=True,
        service=True,
        after_jobs_final=(
            "python -m dlsched.workloads.measure state.db.jobs --out throughputs.json",
        ),
    ),
    "slurm": Session(
        ("On Slurm",), page="docs/reference/live.md", slow=True, service=True, slurm=True
    ),
    "example": Session(
        ("A worked example: which policy for this cluster?",), shared=True, slow=True, long=True
    ),
}


def session_commands(session: Session) -> list[str]:
    blocks = readme_blocks(TEXTS[session.page])
    return [c for b in blocks if b.heading in session.headings for c in b.commands]


def all_blocks() -> list[tuple[str, Block]]:
    """Every command block of every page, with its page."""
    return [(page, block) for page, text in TEXTS.items() for block in readme_blocks(text)]


def test_every_readme_block_belongs_to_a_session() -> None:
    covered = {(s.page, h) for s in SESSIONS.values() for h in s.headings}
    uncovered = [
        f"{page}:{b.line} ({b.heading})"
        for page, b in all_blocks()
        if (page, b.heading) not in covered
    ]
    assert not uncovered, f"add these blocks to a session of this test: {uncovered}"
    empty = [name for name, s in SESSIONS.items() if not session_commands(s)]
    assert not empty, f"sessions without README commands (a heading renamed?): {empty}"


def test_blocks_run_in_order_in_one_directory_write_distinct_outputs() -> None:
    """A user may run every block in one directory: no two commands may write the same output
    (the second would stop: it exists, and --force is not given)."""
    writers: dict[str, list[str]] = {}
    for page, block in all_blocks():
        for command in block.commands:
            words = shlex.split(command)
            for flag, value in itertools.pairwise(words):
                if flag == "--out" and "--force" not in words:
                    writers.setdefault(value.rstrip("/"), []).append(f"{page}:{block.line}")
    shared = {out: where for out, where in writers.items() if len(where) > 1}
    assert not shared, f"outputs written by more than one command: {shared}"


def test_inline_commands_are_syntax_or_run_in_a_block() -> None:
    """A concrete command in the prose must be one the blocks run; anything else shows syntax
    (TRACE, JOB, [--json], ...) and cannot be run as written."""
    fenced = {c for _, b in all_blocks() for c in b.commands}
    untested = [
        c
        for text in TEXTS.values()
        for c in inline_commands(text)
        if c not in fenced and not is_syntax(c) and c not in INLINE_NOT_RUN
    ]
    assert not untested, f"concrete inline commands no block runs: {untested}"


def _check_results(session: Session, results: list[dict[str, Any]]) -> None:
    for r in results:
        shown = f"{r['command']}\nexit {r['rc']}\n{r.get('err', '')}{r.get('log', '')}"
        if r["command"] in session.broken:
            assert r["rc"] != 0, (
                f"fixed? remove it from the broken commands of this test: {r['command']}"
            )
            continue
        assert r["rc"] == 0, shown
        assert "Traceback" not in r.get("err", "") + r.get("log", ""), shown


def _run_make(checkout: Path, command: str) -> dict[str, Any]:
    """``make demo`` in a checkout whose ``.venv`` is this environment, already installed (the
    state after a first ``make demo``: its stamp newer than pyproject.toml)."""
    shutil.copy(REPO / "Makefile", checkout / "Makefile")
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    venv = checkout / ".venv"
    venv.mkdir()
    (venv / "bin").symlink_to(Path(sys.executable).parent)
    (venv / ".core").touch()
    return run_command(command, checkout, user_env(), 600)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            marks=[m for m, on in ((pytest.mark.slow, s.slow), (pytest.mark.long, s.long)) if on],
        )
        for name, s in SESSIONS.items()
    ],
)
def test_readme_session_runs_as_written(name: str, tmp_path: Path) -> None:
    session = SESSIONS[name]
    if session.shared and not SHARED.is_dir():
        pytest.skip("the shared public traces are not available beside the checkout")
    commands = [c for c in session_commands(session) if c not in session.not_run]
    checkout = make_checkout(tmp_path)
    if session.service:
        results, jobs = _run_service_session(name, session, commands, checkout)
        _check_results(session, results)
        _check_service(name, jobs, checkout)
        return
    results = []
    for command in commands:
        if command.startswith("make "):
            results.append(_run_make(checkout, command))
            results.append(_run_make_again(checkout, command))
        else:
            results.append(run_command(command, checkout, user_env(), 900))
    _check_results(session, results)
    _check_outputs(name, checkout)


def _run_make_again(checkout: Path, command: str) -> dict[str, Any]:
    """The same make command a second time: it replaces its own outputs."""
    return run_command(command, checkout, user_env(), 600)


def _check_outputs(name: str, checkout: Path) -> None:
    """What the sessions wrote is there (beyond their exit codes)."""
    expected = {
        "quick-start": ["runs/demo/fifo/summary.json", "runs/demo/tiresias/summary.json"],
        "workflow": ["philly.parquet", "runs/fifo/summary.json", "runs/tiresias/summary.json"],
        "helios": ["report/index.html", "runs/qssf/summary.json", "venus/trace.parquet"],
        "energy": ["energy/index.html", "runs/ces/summary.json"],
        "sweeps": ["sweeps/philly/results.csv", "sweeps/philly/table.md"],
        "whatif": ["sweeps/lending/whatif.md", "sweeps/lending/whatif.csv"],
        "ps": [
            "ps.parquet",
            "runs/smd/summary.json",
            "runs/ps/trace.parquet",
            "runs/ps/smd/summary.json",
        ],
        "mixed": ["mixed.parquet", "runs/mixed/summary.json"],
        "elastic": ["runs/ones/summary.json"],
        "serving": [f"runs/serve/{s}/summary.json" for s in ("vllm", "sarathi", "static")],
        "serving-shared": [
            "reports/azure-code/index.html",
            "runs/serve/split/summary.json",
            "runs/serve/beside/summary.json",
        ],
        "tenants": ["runs/vcs/summary.json", "runs/cohort/summary.json"],
        "topology": [
            "sweeps/topology/results.csv",
            "runs/spread/summary.json",
            "runs/rack/summary.json",
        ],
    }
    missing = [p for p in expected.get(name, []) if not (checkout / p).is_file()]
    assert not missing, missing
    if name == "sweeps":
        rows = (checkout / "sweeps/philly/results.csv").read_text().splitlines()
        assert len(rows) == 1 + 6  # 3 policies x 2 seeds
    if name == "topology":
        _check_topology(checkout)
    if name == "whatif":
        _check_whatif(checkout)


def _check_whatif(checkout: Path) -> None:
    """The cohort-level changes the what-if section reads off its sweep."""
    with (checkout / "sweeps/lending/whatif.csv").open() as handle:
        cohort = {
            r["metric"]: (float(r["delta"]), float(r["delta_ci95"]))
            for r in csv.DictReader(handle)
            if r["level"] == "cohort" and r["name"] == "philly"
        }
    # The average JCT's change sits within its interval under the cycle clock (README).
    for metric in ("evictions_InCohortReclamation", "borrowed_gpus_avg"):
        delta, half = cohort[metric]
        assert delta + half < 0, (metric, delta, half)
    assert (checkout / "sweeps/lending/whatif.png").is_file()


def _check_topology(checkout: Path) -> None:
    """The effects the topology section's prose reads off its runs."""
    with (checkout / "sweeps/topology/results.csv").open() as handle:
        cells = {r["placement"]: r for r in csv.DictReader(handle)}
    spread, packed = cells["consolidate"], cells["topology"]
    assert float(packed["avg_jct_s"]) < 0.8 * float(spread["avg_jct_s"])
    assert float(packed["rack_spanning_share"]) < float(spread["rack_spanning_share"])
    assert spread["fragmented_jobs"] == "" and int(packed["fragmented_jobs"]) > 0
    runs = {
        run: json.loads((checkout / f"runs/{run}/summary.json").read_text())
        for run in ("spread", "rack")
    }
    assert runs["rack"]["avg_jct_s"] > 1.1 * runs["spread"]["avg_jct_s"]
    tiers = runs["rack"]["starts_by_tier"]
    assert tiers["rack"] > 0 and tiers["block"] == tiers["cluster"] == 0, tiers


def _in_own_network(argv: list[str], hosts: Path | None = None) -> list[str]:
    """``argv`` in a new network namespace with loopback up, when this machine allows it, so
    the README's fixed port 8765 is free whatever else runs here. With ``hosts``, that file is
    mounted over /etc/hosts inside and a veth pair gives the namespace an address besides
    loopback: Slurm's daemons resolve this host's name, and ask getaddrinfo for addresses
    only of configured families (AI_ADDRCONFIG, which ignores loopback)."""
    flags = ["-n", "-m"] if hosts is not None else ["-n"]
    setup = "ip link set lo up"
    if hosts is not None:
        setup += (
            " && ip link add dlsched0 type veth peer name dlsched1"
            " && ip addr add 10.254.0.1/24 dev dlsched0"
            " && ip link set dlsched0 up && ip link set dlsched1 up"
            f" && mount --bind {shlex.quote(str(hosts))} /etc/hosts"
        )
    if shutil.which("unshare") is None:
        return argv
    probe = subprocess.run(["unshare", *flags, "sh", "-c", setup], capture_output=True)
    if probe.returncode != 0:
        return argv
    return ["unshare", *flags, "sh", "-c", f'{setup} && exec "$@"', "sh", *argv]


def _loopback_hosts(where: Path) -> Path:
    """A hosts file naming this host on loopback."""
    path = where / "hosts"
    path.write_text(f"127.0.0.1 localhost\n127.0.0.1 {socket.gethostname()}\n")
    return path


def _run_service_session(
    name: str, session: Session, commands: list[str], checkout: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if session.slurm:
        from dlsched.testing.slurm_cluster import missing_tools

        missing = missing_tools()
        if missing:
            pytest.fail(f"the Slurm session needs {missing}: apt-get install -y slurm-wlm munge")
    spec_file = checkout.parent / "spec.json"
    result_file = checkout.parent / "result.json"
    spec = {
        "cwd": str(checkout),
        "commands": commands,
        "after_jobs_final": list(session.after_jobs_final),
        "slurm": session.slurm,
        "timeout": 600,
        "result": str(result_file),
    }
    spec_file.write_text(json.dumps(spec))
    driver = [sys.executable, str(REPO / "tests" / "readme_commands.py"), str(spec_file)]
    hosts = _loopback_hosts(checkout.parent) if session.slurm else None
    argv = _in_own_network(driver, hosts)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"the {name} session did not run:\n{done.stdout}{done.stderr}"
    result = json.loads(result_file.read_text())
    return result["results"], result["jobs"]


def _check_service(name: str, jobs: list[dict[str, Any]], checkout: Path) -> None:
    states = {j["name"]: (j["state"], j.get("reason")) for j in jobs}
    if name == "service":
        # The README's relative --db: jobs run in their own directories, and still complete.
        assert states == {
            "x": ("COMPLETED", None),
            "long": ("CANCELLED", states["long"][1]),
            "resnet-a": ("COMPLETED", None),
        }, states
        assert (checkout / "state.db").is_file() and (checkout / "state.db.token").is_file()
        table = json.loads((checkout / "throughputs.json").read_text())
        assert [(r["model"], r["gpus"]) for r in table] == [("resnet-small", 2)]
        assert table[0]["samples_per_s"] > 0
    if name == "slurm":
        assert "[[nodes]]" in (checkout / "cluster.toml").read_text()
