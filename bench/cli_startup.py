"""Start-up cost of every ``dlsched`` command: each command's and subcommand's ``-h``, and the
small real runs a user types first.

The runs: ``list policies|placements|clusters``, ``preset list``, ``simulate`` of a 10-job
slice of the bundled Philly VC 0e4a51 trace (rigid jobs), ``serve-sim`` of the first 20
requests of the bundled Azure code trace, and the client commands ``jobs`` and ``submit``
against a real service (``dlsched serve --backend fake`` of this tree, port 0), so each does
its whole work. The subcommands whose ``-h`` is measured are listed from this tree.

Both trees are measured as ``pip install`` leaves a package: with its bytecode compiled
(``compileall`` before the first run; pip compiles at install time). Without it, as in an
editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` (this machine kind sets it), every start
compiles each module it imports from source, about 0.1 CPU-s more for a run; ``--source``
measures that instead.

For each command and each source tree (this one, and a baseline from git), in fresh
subprocesses, the two trees' runs interleaved so that a drift of the machine's speed hits both:
- process CPU time (user + system, from ``getrusage`` of the children) and wall time, median of
  ``--repeat`` runs;
- ``python -X importtime``: the total import time it reports (cumulative microseconds of the
  top-level imports) and which heavy modules (numpy, pyarrow, scipy, scipy.optimize, the
  simulator, the other job kinds, the service's dependencies...) were imported.

Prints the machine (CPU model, date, load), one JSON line per measurement and a Markdown table
for bench/RESULTS.md, with the ratios baseline / now measured in the same run; the last column
says whether the command starts within the budget (``--budget``, CPU seconds).

    python bench/cli_startup.py [--baseline-rev 51a4f2d] [--repeat 5] [--budget 0.5] [--source]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "numpy",
    "pyarrow",
    "scipy",
    "scipy.optimize",
    "sklearn",
    "matplotlib",
    "fastapi",
    "uvicorn",
    "httpx",
    "dlsched.sim",
    "dlsched.runner",
    "dlsched.elastic",
    "dlsched.ps",
    "dlsched.tenancy",
    "dlsched.serving",
)
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")
LIST_SUBCOMMANDS = """
import json
from dlsched.cli.group import COMMANDS, load_command
found = []
for name in COMMANDS:
    command = load_command(name)
    found += [[name, sub] for sub in sorted(getattr(command, "commands", {}))]
print(json.dumps(found))
"""


def extract_tree(rev: str, into: Path) -> Path:
    """The ``src`` directory of commit ``rev`` of this repository, extracted under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def bytecode(src: Path, compiled: bool) -> None:
    """Compile every module of tree ``src`` to bytecode, or remove its compiled bytecode."""
    if compiled:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
        return
    for cache in src.rglob("__pycache__"):
        for pyc in cache.glob("*.pyc"):
            pyc.unlink()


def run_timed(src: Path, args: Sequence[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, exit code) of ``python -m dlsched.cli.main ARGS``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "dlsched.cli.main", *args],
        env={**env, "PYTHONPATH": str(src)},
        capture_output=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.returncode


def import_profile(src: Path, args: Sequence[str], env: dict[str, str]) -> tuple[float, list[str]]:
    """(total import seconds, heavy modules imported) from ``-X importtime``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dlsched.cli.main", *args],
        env={**env, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
    )
    total_us = 0
    modules = set()
    for line in done.stderr.splitlines():
        m = IMPORT_LINE.match(line)
        if not m:
            continue
        modules.add(m[4])
        if len(m[3]) == 1:  # a top-level import: its cumulative time includes its children
            total_us += int(m[2])
    heavy = sorted(h for h in HEAVY if any(m == h or m.startswith(h + ".") for m in modules))
    return total_us / 1e6, heavy


@contextmanager
def fake_service(src: Path, workdir: Path) -> Iterator[tuple[str, Path]]:
    """A ``dlsched serve --backend fake`` of ``src`` on a free port: (URL, token file)."""
    log = workdir / "serve.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dlsched.cli.main", "serve", "--backend", "fake",
             "--db", str(workdir / "state.db"), "--port", "0"],
            env={**os.environ, "PYTHONPATH": str(src), "PYTHONUNBUFFERED": "1"},
            stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (m := re.search(r"dlsched service at (\S+)", log.read_text())):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the service did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield m[1].rstrip("/"), workdir / "state.db.token"
    finally:
        proc.terminate()
        proc.wait(30)


@dataclass(frozen=True)
class Measure:
    """One command on one tree."""

    cpu_s: float
    wall_s: float
    import_s: float
    heavy: list[str]
    exit_codes: list[int]


def measure_both(
    trees: dict[str, Path], argv: Sequence[str], env: dict[str, str], repeat: int
) -> dict[str, Measure]:
    """``argv`` on every tree, the trees' runs alternating (module docstring)."""
    runs: dict[str, list[tuple[float, float, int]]] = {tree: [] for tree in trees}
    for _ in range(repeat):
        for tree, src in trees.items():
            runs[tree].append(run_timed(src, argv, env))
    out = {}
    for tree, src in trees.items():
        imports, heavy = import_profile(src, argv, env)
        out[tree] = Measure(
            cpu_s=statistics.median(c for c, _, _ in runs[tree]),
            wall_s=statistics.median(w for _, w, _ in runs[tree]),
            import_s=imports,
            heavy=heavy,
            exit_codes=sorted({code for _, _, code in runs[tree]}),
        )
    return out


def subcommands(src: Path) -> list[list[str]]:
    """``[group, subcommand]`` for every subcommand of the command groups of tree ``src``."""
    done = subprocess.run(
        [sys.executable, "-c", LIST_SUBCOMMANDS],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        check=True,
    )
    found: list[list[str]] = json.loads(done.stdout)
    return found


def top_level(src: Path) -> list[str]:
    """The top-level subcommands of tree ``src``."""
    done = subprocess.run(
        [sys.executable, "-c", "import json; from dlsched.cli.group import COMMANDS; "
         "print(json.dumps(list(COMMANDS)))"],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    names: list[str] = json.loads(done.stdout)
    return names


def machine() -> str:
    """The CPU model, the date and the load average, for the results' heading."""
    model = "unknown CPU"
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in lscpu.splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    cores = os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{model}, {cores} cores; {datetime.datetime.now():%Y-%m-%d %H:%M}; load {load}"


def small_inputs(work: Path) -> tuple[Path, Path]:
    """A 10-job slice of a bundled rigid trace and 20 requests of a bundled request trace."""
    data = ROOT / "src" / "dlsched" / "data"
    trace = work / "ten_jobs.csv"
    lines = (data / "traces" / "vc_0e4a51.csv").read_text().splitlines(keepends=True)
    trace.write_text("".join(lines[:11]))
    requests = work / "twenty_requests.csv"
    lines = (data / "inference" / "azure_code_3000.csv").read_text().splitlines(keepends=True)
    requests.write_text("".join(lines[:21]))
    return trace, requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline-rev", default="51a4f2d")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.5, help="CPU seconds a start may take")
    parser.add_argument(
        "--source", action="store_true", help="no compiled bytecode: compile at every start"
    )
    args = parser.parse_args()
    # every child inherits it: the compiled bytecode stays what bytecode() left
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    print(f"machine: {machine()}", flush=True)
    print(f"bytecode: {'none (compiled at every start)' if args.source else 'compiled'}")
    results: dict[str, dict[str, Measure]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trees = {"before": extract_tree(args.baseline_rev, work), "now": ROOT / "src"}
        for src in trees.values():
            bytecode(src, compiled=not args.source)
        trace, requests = small_inputs(work)
        commands: dict[str, list[str]] = {"--help": ["--help"]}
        for path in [[name] for name in top_level(trees["now"])] + subcommands(trees["now"]):
            commands[f"{' '.join(path)} -h"] = [*path, "-h"]
        commands |= {
            "list policies": ["list", "policies"],
            "list placements": ["list", "placements"],
            "list clusters": ["list", "clusters"],
            "preset list": ["preset", "list"],
            "simulate (10 rigid jobs)": [
                "simulate", "--trace", str(trace), "--cluster", "32x8",
                "--out", str(work / "sim"), "--force",
            ],
            "serve-sim (20 requests)": [
                "serve-sim", str(requests), "--out", str(work / "serve-sim"), "--force"
            ],
            "jobs": ["jobs"],
            "submit": ["submit", "--gpus", "1", "--name", "bench", "--", "sleep", "1"],
        }  # fmt: skip
        with fake_service(trees["now"], work) as (url, token):
            env = {**os.environ, "DLSCHED_URL": url, "DLSCHED_TOKEN_FILE": str(token)}
            for name, argv in commands.items():
                results[name] = measure_both(trees, argv, env, args.repeat)
                for tree, found in results[name].items():
                    print(json.dumps({"command": name, "tree": tree, **asdict(found)}), flush=True)
    print(f"\nmachine at the end: {machine()}\n")
    print(
        f"| command | CPU before (s) | CPU now (s) | before / now | wall now (s) "
        f"| imports before (s) | imports now (s) | heavy modules now | ≤ {args.budget:g} CPU-s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in commands:
        b, n = results[name]["before"], results[name]["now"]
        failed = " (exit " + ",".join(map(str, n.exit_codes)) + ")" if n.exit_codes != [0] else ""
        print(
            f"| `dlsched {name}`{failed} | {b.cpu_s:.2f} | {n.cpu_s:.2f} "
            f"| {b.cpu_s / n.cpu_s:.1f}x | {n.wall_s:.2f} | {b.import_s:.2f} | {n.import_s:.2f} "
            f"| {', '.join(n.heavy) or 'none'} | {'yes' if n.cpu_s <= args.budget else 'no'} |"
        )


if __name__ == "__main__":
    main()
