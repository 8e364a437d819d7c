"""The Ray and Slurm node-kill tests and the takeover fault test, run again and again while another
process keeps a CPU busy.

A node that dies takes its jobs with it, and a job's exit can reach the service before the
cluster manager declares the node lost; under CPU load that order is common. The back ends must
classify such exits as node loss (the job is queued again), never as the job's own failure.
This script checks it the way it failed once: it starts ``--load`` busy processes (plain Python
spin loops at normal priority, each stopping by itself after ``--max-minutes``), then runs each
chosen node-kill test (``pytest NODEID``) ``--runs`` times in a row and stops at the first
failure, whose output it keeps.

``takeover`` is the short Jepsen-style round of :mod:`tests.service.test_takeover_faults` (two
real services on SQLite and on PostgreSQL, killed -9 and paused past their lease; every job must
run exactly once, no GPU held twice): each run is one fresh round per store with its own seed.

Usage: ``.venv/bin/python bench/node_kill_under_load.py [--tests ray,slurm] [--runs 20]
[--load 1] [--out runs/node_kill]`` (``--tests takeover`` for the fault test). Needs what the
tests need (root, the ``ray`` extra, ``apt-get install -y slurm-wlm munge``, PostgreSQL).
Prints one line per run and a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = {
    "ray": "tests/backends/test_ray_service.py::"
    "test_jobs_of_a_killed_ray_node_are_requeued_rescheduled_and_complete_once",
    "slurm": "tests/backends/test_slurm_node_kill.py::"
    "test_jobs_of_a_killed_slurm_node_are_reported_lost_and_the_others_run_on",
    "takeover": "tests/service/test_takeover_faults.py::"
    "test_every_job_runs_exactly_once_under_kills_and_pauses",
}
SPIN = (
    "import sys, time\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "while time.monotonic() < end:\n"
    "    pass\n"
)


def start_load(processes: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    """``processes`` busy loops that stop by themselves after ``seconds``."""
    return [subprocess.Popen([sys.executable, "-c", SPIN, str(seconds)]) for _ in range(processes)]


def run_test(nodeid: str, log: Path, tmp: Path, seed: int) -> tuple[bool, float]:
    """Run one test in a fresh pytest; (passed, seconds). Its output goes to ``log``, its
    temporary files to ``tmp`` (kept for a failed run); ``seed`` is given to tests that draw
    random faults (``$DLSCHED_FAULT_SEED``)."""
    began = time.monotonic()
    with open(log, "w") as out:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                nodeid,
                "-q",
                "-p",
                "no:cacheprovider",
                f"--basetemp={tmp}",
            ],
            cwd=REPO,
            env={**os.environ, "DLSCHED_FAULT_SEED": str(seed)},
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    return done.returncode == 0, time.monotonic() - began


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tests", default="ray,slurm", help="comma-separated: ray, slurm, takeover")
    p.add_argument("--runs", type=int, default=20, help="runs of each test in a row")
    p.add_argument("--load", type=int, default=1, help="busy processes beside the tests")
    p.add_argument("--max-minutes", type=float, default=240.0, help="load stops after this")
    p.add_argument("--out", type=Path, default=Path("runs/node_kill"))
    args = p.parse_args()
    names = [t.strip() for t in args.tests.split(",") if t.strip()]
    unknown = [n for n in names if n not in TESTS]
    if unknown:
        print(f"error: --tests: unknown {unknown}; expected some of {sorted(TESTS)}")
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    load = start_load(args.load, args.max_minutes * 60)
    summary: dict[str, dict[str, object]] = {}
    try:
        for name in names:
            passed_in_a_row, seconds = 0, []
            for i in range(1, args.runs + 1):
                log = args.out / f"{name}-{i}.log"
                tmp = args.out / f"{name}-{i}-tmp"
                ok, took = run_test(TESTS[name], log, tmp, i)
                seconds.append(round(took, 1))
                print(f"{name} run {i}: {'passed' if ok else 'FAILED'} in {took:.0f} s", flush=True)
                if not ok:
                    print(f"  output: {log}", flush=True)
                    break
                passed_in_a_row += 1
                log.unlink()
                shutil.rmtree(tmp, ignore_errors=True)
            summary[name] = {
                "runs": len(seconds),
                "passed_in_a_row": passed_in_a_row,
                "seconds": seconds,
            }
    finally:
        for proc in load:
            proc.kill()
            proc.wait()
    print(json.dumps({"load_processes": args.load, "tests": summary}))
    return 0 if all(s["passed_in_a_row"] == args.runs for s in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
