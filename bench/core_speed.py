"""Simulation speed of this checkout against another one (e.g. the commit before the one
simulation core), measured in one run.

Each case runs in a fresh process per checkout, alternating checkouts and repeating, and times
the simulation alone (``time.process_time`` around it, the trace already loaded and the modules
imported: the baseline imported scipy with the package, this checkout only when a model is
fitted); the table gives the median CPU seconds of each and their ratio, with one BLAS thread.
Cases: all Philly jobs on ``philly-vcs`` under FIFO and Tiresias, the 1,000,000-job synthetic
trace on 32x8 under FIFO and Tiresias, and Pollux workload 6 end to end under Tiresias (57,600
GPU-s) and Pollux.

    python bench/core_speed.py --baseline ../dlsched-before/src [--repeat 3] [--skip-million]

``--baseline`` is the ``src`` directory of the other checkout (``git worktree add --detach
../dlsched-before COMMIT``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "traces"
"""The public traces beside the checkout (``--traces`` elsewhere)."""

RIGID = """
import json, sys, time
from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace import synthetic_trace
from dlsched.trace.read import read_trace
which, policy, path = sys.argv[1:4]
if which == "philly":
    trace, cluster = read_trace(path).trace, resolve_cluster("philly-vcs")
else:
    trace, cluster = synthetic_trace(1_000_000, seed=0), resolve_cluster("32x8")
t = time.process_time()
result = simulate(trace, cluster, SimConfig(policy=policy))
print(json.dumps({"cpu_s": time.process_time() - t, "avg_jct_s": result.summary["avg_jct_s"]}))
"""

ELASTIC = """
import json, sys, time
import scipy.optimize, scipy.stats
from dlsched.cluster.parse import resolve_cluster
from dlsched.trace.read import read_trace
policy, path = sys.argv[2], sys.argv[3]
options = {"thresholds": "57600"} if policy == "tiresias" else {}
trace, cluster = read_trace(path).trace, resolve_cluster("pollux")
try:
    from dlsched.elastic.run import run_elastic
except ImportError:
    from dlsched.sim.config import SimConfig
    from dlsched.sim.simulator import simulate
    placement = "pack" if policy == "tiresias" else "consolidate"
    config = SimConfig(policy=policy, policy_options=options, placement=placement)
    run = lambda: simulate(trace, cluster, config).summary
else:
    run = lambda: run_elastic(trace, cluster, policy, options).summary
t = time.process_time()
summary = run()
print(json.dumps({"cpu_s": time.process_time() - t, "avg_jct_s": summary["avg_jct_s"]}))
"""


def cases(skip_million: bool, traces: Path) -> list[tuple[str, str, list[str]]]:
    philly = str(traces / "philly" / "philly_jobs.csv")
    workload = str(traces / "pollux-workloads" / "workloads" / "workload-6.csv")
    out = [
        ("Philly, all jobs: fifo", RIGID, ["philly", "fifo", philly]),
        ("Philly, all jobs: tiresias", RIGID, ["philly", "tiresias", philly]),
    ]
    if not skip_million:
        out += [
            ("synthetic 1,000,000: fifo", RIGID, ["million", "fifo", "-"]),
            ("synthetic 1,000,000: tiresias", RIGID, ["million", "tiresias", "-"]),
        ]
    out += [
        ("Pollux workload-6: tiresias-57.6k", ELASTIC, ["elastic", "tiresias", workload]),
        ("Pollux workload-6: pollux", ELASTIC, ["elastic", "pollux", workload]),
    ]
    return out


def run(src: Path, code: str, args: list[str]) -> dict[str, float]:
    # One BLAS thread: a multi-threaded SVD in the profile fits counts every thread's CPU, and
    # how many it spins up depends on the other load on the machine, not on the checkout.
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"{src}: {' '.join(args)} failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", type=Path, required=True, help="src/ of the other checkout")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-million", action="store_true")
    parser.add_argument("--traces", type=Path, default=SHARED, help="the public traces")
    args = parser.parse_args()
    ours = ROOT / "src"
    print("| case | baseline CPU s | this CPU s | ratio | avg JCT baseline / this |")
    print("|---|---|---|---|---|")
    for name, code, cargs in cases(args.skip_million, args.traces):
        base: list[float] = []
        this: list[float] = []
        jct: dict[str, float] = {}
        for _ in range(args.repeat):
            for label, src, times in (("base", args.baseline, base), ("this", ours, this)):
                result = run(src, code, cargs)
                times.append(result["cpu_s"])
                jct[label] = result["avg_jct_s"]
        b, t = statistics.median(base), statistics.median(this)
        print(
            f"| {name} | {b:.2f} | {t:.2f} | {t / b:.2f} | "
            f"{jct['base']:,.1f} / {jct['this']:,.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
