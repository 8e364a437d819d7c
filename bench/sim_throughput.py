"""Simulator throughput: simulated jobs per second for FIFO and Tiresias, against a bare loop.

For each dataset this measures, each in a fresh subprocess (so peak memory is per measurement):
- dlsched's simulator (trace already loaded; the time of ``simulate`` alone, which includes
  building the per-job and timeline tables), for FIFO and Tiresias with consolidated placement;
- a bare minimal heapq FIFO loop over the same jobs (per-partition free-GPU counters, no node
  placement, no records): the floor for an event loop in Python.

Datasets: (a) the bundled Philly VC 0e4a51 slice on 32x8; (b) all 82,247 Philly jobs on
``philly-vcs`` (``--philly``, default ../shared/traces); (c) a synthetic Philly-like trace of N
jobs (default 1,000,000) on 32x8. Prints one JSON line per measurement and a Markdown table for
bench/RESULTS.md.

With ``--cpu-against OLD_SRC`` (the ``src`` directory of a checkout of another commit; may be
given more than once) it instead compares CPU time: for each dataset and run, ``--repeat``
rounds of fresh processes, one importing this tree's dlsched and one per OLD_SRC, rotating which
goes first so that drifting load on a shared machine falls on every side; each reports the
process time of ``simulate`` alone. Prints the medians and the ratios of medians (this tree /
each OLD_SRC).

    python bench/sim_throughput.py [--datasets vc,philly,synthetic] [--synthetic-jobs N]
    python bench/sim_throughput.py --cpu-against /path/to/old/src --datasets philly \
        --runs fifo,tiresias --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import deque
from heapq import heappop, heappush
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PHILLY = ROOT.parent / "shared" / "traces" / "philly" / "philly_jobs.csv"


def load(dataset: str, synthetic_jobs: int, philly: Path = PHILLY) -> tuple[Any, Any]:
    from dlsched.cluster.parse import resolve_cluster
    from dlsched.trace.bundled import bundled_trace_path
    from dlsched.trace.read import read_trace
    from dlsched.trace.synth.philly_like import synthetic_trace

    if dataset == "vc":
        return read_trace(bundled_trace_path("vc_0e4a51")).trace, resolve_cluster("32x8")
    if dataset == "philly":
        return read_trace(philly).trace, resolve_cluster("philly-vcs")
    if dataset == "synthetic":
        return synthetic_trace(synthetic_jobs, seed=0), resolve_cluster("32x8")
    raise ValueError(f"unknown dataset {dataset!r}")


def bare_fifo(trace: Any, cluster: Any) -> tuple[float, int]:
    """FIFO with head-of-line blocking over per-partition GPU counters; returns (avg JCT, n)."""
    caps = cluster.partition_gpus()
    names = list(caps)
    index = {name: i for i, name in enumerate(names)}
    table = trace.table
    vcs = table.column("vc").to_pylist()
    submit = table.column("submit_time").to_pylist()
    gpus = table.column("num_gpus").to_pylist()
    dur = table.column("duration").to_pylist()
    single = len(names) == 1
    pool = [0 if single else index.get(v, -1) for v in vcs]
    keep = [i for i in range(len(submit)) if pool[i] >= 0 and gpus[i] <= caps[names[pool[i]]]]
    submit = [submit[i] for i in keep]
    gpus = [gpus[i] for i in keep]
    dur = [dur[i] for i in keep]
    pool = [pool[i] for i in keep]
    started = time.perf_counter()
    free = [caps[name] for name in names]
    queues: list[deque[int]] = [deque() for _ in names]
    heap: list[tuple[float, int]] = []
    end = [0.0] * len(submit)
    i, n = 0, len(submit)
    while i < n or heap:
        if heap and (i >= n or heap[0][0] <= submit[i]):
            t, j = heappop(heap)
            p = pool[j]
            free[p] += gpus[j]
        else:
            t, j = submit[i], i
            i += 1
            p = pool[j]
            queues[p].append(j)
        q = queues[p]
        while q and gpus[q[0]] <= free[p]:
            k = q.popleft()
            free[p] -= gpus[k]
            e = t + dur[k]
            end[k] = e
            heappush(heap, (e, k))
    wall = time.perf_counter() - started
    avg = sum(e - s for e, s in zip(end, submit, strict=True)) / max(1, n)
    return wall, int(avg) if n else 0


def measure(dataset: str, which: str, synthetic_jobs: int, philly: Path) -> dict[str, Any]:
    from dlsched.sim.config import SimConfig
    from dlsched.sim.simulator import simulate

    trace, cluster = load(dataset, synthetic_jobs, philly)
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu_started = time.process_time()
    if which == "bare-fifo":
        wall, avg = bare_fifo(trace, cluster)
        jobs = len(trace)
        extra: dict[str, Any] = {"avg_jct_s": avg}
    else:
        started = time.perf_counter()
        result = simulate(trace, cluster, SimConfig(policy=which))
        wall = time.perf_counter() - started
        jobs = result.summary["jobs"]
        extra = {
            "avg_jct_s": round(result.summary["avg_jct_s"] or 0),
            "events": result.summary["events"],
            "cycles": result.summary["cycles"],
        }
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "dataset": dataset,
        "run": which,
        "jobs": jobs,
        "wall_s": round(wall, 3),
        "cpu_s": round(time.process_time() - cpu_started, 3),
        "jobs_per_s": round(jobs / wall) if wall > 0 else None,
        "peak_rss_mib": round(peak / 1024),
        "rss_before_run_mib": round(base_rss / 1024),
        **extra,
    }


def run_one(dataset: str, run: str, args: argparse.Namespace, src: str | None) -> dict[str, Any]:
    """One measurement in a fresh process; ``src`` (a ``src`` directory) is put first on its
    PYTHONPATH, or the inherited environment is used when None."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--one",
            dataset,
            run,
            "--synthetic-jobs",
            str(args.synthetic_jobs),
            "--philly",
            str(args.philly),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    row: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return row


def cpu_against(args: argparse.Namespace, datasets: list[str]) -> None:
    """Alternating CPU-time comparison of this tree against each ``--cpu-against`` tree."""
    sides = [str(ROOT / "src"), *args.cpu_against]
    names = ["this tree", *(f"old {i + 1}" for i in range(len(args.cpu_against)))]
    for i, src in enumerate(args.cpu_against):
        print(f"old {i + 1}: {src}")
    table = []
    for dataset in datasets:
        for run in args.runs.split(","):
            cpu: list[list[float]] = [[] for _ in sides]
            for rep in range(args.repeat):
                # Rotate which side goes first so a load change hits every side alike.
                for k in range(len(sides)):
                    side = (rep + k) % len(sides)
                    row = run_one(dataset, run, args, sides[side])
                    row.update(side=names[side], rep=rep)
                    print(json.dumps(row), flush=True)
                    cpu[side].append(row["cpu_s"])
            table.append((dataset, run, [statistics.median(c) for c in cpu], [min(c) for c in cpu]))
    print(f"\n{args.repeat} rotations; CPU seconds of simulate(): median (min)")
    ratios = [f"this / {n}" for n in names[1:]]
    print(f"\n| dataset | run | {' | '.join(names)} | {' | '.join(ratios)} |")
    print("|---|---|" + "---|" * (len(names) + len(ratios)))
    for dataset, run, med, low in table:
        times = " | ".join(f"{m:.2f} ({lo:.2f})" for m, lo in zip(med, low, strict=True))
        shown = " | ".join(f"{med[0] / m:.2f}" for m in med[1:])
        print(f"| {dataset} | {run} | {times} | {shown} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="vc,philly,synthetic")
    parser.add_argument("--runs", default="bare-fifo,fifo,tiresias")
    parser.add_argument("--synthetic-jobs", type=int, default=1_000_000)
    parser.add_argument("--philly", type=Path, default=PHILLY, help="philly_jobs.csv")
    parser.add_argument(
        "--cpu-against", action="append", metavar="OLD_SRC", help="src dir of another checkout"
    )
    parser.add_argument("--repeat", type=int, default=5, help="rounds per row (--cpu-against)")
    parser.add_argument("--one", nargs=2, metavar=("DATASET", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one[0], args.one[1], args.synthetic_jobs, args.philly)))
        return
    datasets = args.datasets.split(",")
    if "philly" in datasets and not args.philly.exists():
        print(f"skipping philly: {args.philly} not found", file=sys.stderr)
        datasets.remove("philly")
    if args.cpu_against:
        cpu_against(args, datasets)
        return
    rows = []
    for dataset in datasets:
        for run in args.runs.split(","):
            row = run_one(dataset, run, args, None)
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("\n| dataset | run | jobs | wall (s) | jobs/s | ratio to bare FIFO | peak RSS (MiB) |")
    print("|---|---|---|---|---|---|---|")
    bare = {r["dataset"]: r["wall_s"] for r in rows if r["run"] == "bare-fifo"}
    for r in rows:
        ratio = r["wall_s"] / bare[r["dataset"]] if bare.get(r["dataset"]) else None
        shown = f"{ratio:.1f}x" if ratio else "-"
        print(
            f"| {r['dataset']} | {r['run']} | {r['jobs']:,} | {r['wall_s']:.2f} | "
            f"{r['jobs_per_s']:,} | {shown} | {r['peak_rss_mib']:,} |"
        )


if __name__ == "__main__":
    main()
