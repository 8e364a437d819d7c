"""Start-up cost of the client commands: ``dlsched --help``, ``dlsched jobs``, ``dlsched submit``.

For each command and each source tree (this one, and a baseline from git, by default the commit
before the lazy imports), in fresh subprocesses:
- process CPU time (user + system, from ``getrusage`` of the children) and wall time, median of
  ``--repeat`` runs;
- ``python -X importtime``: the total import time it reports (cumulative microseconds of the
  top-level imports) and whether any heavy module (numpy, pyarrow, scipy, the simulators) was
  imported.

``jobs`` and ``submit`` talk to a real service (``dlsched serve --backend fake`` of this tree,
port 0), so they do their whole work. Prints one JSON line per measurement and a Markdown table
for bench/RESULTS.md, with the ratios baseline / now measured in the same run.

    python bench/cli_startup.py [--baseline-rev 791c7ba] [--repeat 5]
"""

from __future__ import annotations

import argparse
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
HEAVY = ("numpy", "pyarrow", "scipy", "dlsched.sim", "dlsched.elastic", "dlsched.runner")
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def extract_tree(rev: str, into: Path) -> Path:
    """The ``src`` directory of commit ``rev`` of this repository, extracted under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


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


def measure(src: Path, argv: Sequence[str], env: dict[str, str], repeat: int) -> Measure:
    runs = [run_timed(src, argv, env) for _ in range(repeat)]
    imports, heavy = import_profile(src, argv, env)
    return Measure(
        cpu_s=statistics.median(c for c, _, _ in runs),
        wall_s=statistics.median(w for _, w, _ in runs),
        import_s=imports,
        heavy=heavy,
        exit_codes=sorted({code for _, _, code in runs}),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline-rev", default="791c7ba")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    commands = {
        "--help": ["--help"],
        "jobs": ["jobs"],
        "submit": ["submit", "--gpus", "1", "--name", "bench", "--", "sleep", "1"],
    }
    results: dict[tuple[str, str], Measure] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trees = {"before": extract_tree(args.baseline_rev, work), "now": ROOT / "src"}
        with fake_service(trees["now"], work) as (url, token):
            env = {**os.environ, "DLSCHED_URL": url, "DLSCHED_TOKEN_FILE": str(token)}
            for name, argv in commands.items():
                for tree, src in trees.items():
                    found = measure(src, argv, env, args.repeat)
                    results[(name, tree)] = found
                    print(json.dumps({"command": name, "tree": tree, **asdict(found)}), flush=True)
    print()
    print(
        "| command | CPU before (s) | CPU now (s) | before / now | wall now (s) "
        "| imports before (s) | imports now (s) | heavy modules now |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in commands:
        b, n = results[(name, "before")], results[(name, "now")]
        print(
            f"| `dlsched {name}` | {b.cpu_s:.2f} | {n.cpu_s:.2f} | {b.cpu_s / n.cpu_s:.1f}x "
            f"| {n.wall_s:.2f} | {b.import_s:.2f} | {n.import_s:.2f} "
            f"| {', '.join(n.heavy) or 'none'} |"
        )


if __name__ == "__main__":
    main()
