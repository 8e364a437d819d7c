"""The one simulation core against the simulators it replaced: every reference run of
``tests/data/golden/old_simulators.json`` (figures of the old elastic, parameter-server and
rigid simulators at commit 791c7ba; its header says how they were made) rerun on the core.

- Elastic (Pollux workloads 1-8, loads 1.0 and 0.5, cluster ``pollux``): pollux, optimus
  ``remaining=epochs``, tiresias (default and ``thresholds=57600``) and fifo, with placement
  ``pack`` for the ordering policies as the old simulator placed them; Tiresias also with the
  default ``consolidate``, to show that difference. ONES, which is chaotic, as the mean and
  spread of its average JCT over seeds 0-4 per workload, old and new.
- PS: the 200-job SMD workload under smd, optimus, fifo and tiresias: mean JCT, and the largest
  relative difference of one job's JCT.
- Rigid: the bundled 990-job Philly VC on 32x8 and all Philly jobs on ``philly-vcs``.

Prints one JSON line per run, then Markdown tables for bench/RESULTS.md. Needs the shared
traces (``--traces``, default ``../shared/traces`` beside the project) for the Pollux workloads
other than the bundled workload-6 and for the whole Philly trace; runs missing them are left
out. About 15 minutes of CPU, most of it ONES.

    python bench/core_equivalence.py [--parts elastic,ones,ps,rigid] [--traces DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.cluster.parse import resolve_cluster
from dlsched.ps.machines import uniform_machines
from dlsched.ps.workload import build_workload, workload_trace
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import RunResult, simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from dlsched.trace.schema import Trace

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden" / "old_simulators.json"
ORDERING = ("fifo", "tiresias")
"""Policies the old elastic simulator placed as placement ``pack`` does."""


@dataclass
class Row:
    """One comparison of average JCTs: which runs (``group``), the policy as run, the case
    (workload or trace), the old and new figure, and the largest relative difference of one
    job's JCT where the reference has per-job figures."""

    group: str
    policy: str
    case: str
    old: float
    new: float
    per_job: float | None = None

    @property
    def ratio(self) -> float:
        return self.new / self.old


class Traces:
    """Reads and keeps the traces the runs share."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[tuple[str, int], Trace | None] = {}

    def pollux(self, load: str, workload: int) -> Trace | None:
        key = (load, workload)
        if key not in self._cache:
            if key == ("workloads", 6):
                path = bundled_trace_path("pollux_workload-6")
            else:
                path = self.root / "pollux-workloads" / load / f"workload-{workload}.csv"
            self._cache[key] = read_trace(path).trace if Path(path).is_file() else None
        return self._cache[key]


def timed(trace: Trace, cluster: str, config: SimConfig, label: str) -> RunResult:
    started = time.process_time()
    result = simulate(trace, resolve_cluster(cluster), config)
    cpu = time.process_time() - started
    s = result.summary
    print(json.dumps({"run": label, "avg_jct_s": s["avg_jct_s"], "cpu_s": round(cpu, 2)}))
    return result


def placements(policy: str) -> tuple[str, ...]:
    """The placements an elastic run is compared with: ``pack`` (the old simulator's) for the
    ordering policies, Tiresias also with the default; allocation policies place themselves."""
    if policy == "tiresias":
        return ("pack", "consolidate")
    return ("pack",) if policy in ORDERING else ("consolidate",)


def elastic_label(run: dict[str, Any], placement: str) -> str:
    opts = ",".join(f"{k}={v}" for k, v in sorted(run["options"].items()))
    name = run["policy"] + (f" {opts}" if opts else "")
    return name + (f" ({placement})" if run["policy"] in ORDERING else "")


def elastic_rows(golden: dict[str, Any], traces: Traces) -> Iterator[Row]:
    cluster = golden["elastic"]["cluster"]
    for run in golden["elastic"]["runs"]:
        if run["policy"] == "ones":
            continue
        trace = traces.pollux(run["load"], run["workload"])
        if trace is None:
            continue
        for placement in placements(run["policy"]):
            label = elastic_label(run, placement)
            options = dict(run["options"])
            if run["policy"] == "tiresias":
                # The old Tiresias's order inside a queue (the default keeps running jobs first).
                options["order"] = "submit"
            if run["policy"] == "pollux":
                # The old Pollux speedups (the default now follows the artifact).
                options.update(epoch_buckets="10", base="one")
            config = SimConfig(
                policy=run["policy"],
                policy_options=options,
                seed=run["seed"],
                placement=placement,
            )
            where = f"{run['load']} w{run['workload']} {label}"
            new = timed(trace, cluster, config, where).summary["avg_jct_s"]
            group = f"elastic {run['load']}"
            yield Row(group, label, f"w{run['workload']}", run["avg_jct_s"], new)


def ones_table(golden: dict[str, Any], traces: Traces) -> list[str]:
    """ONES per workload: mean ± sample standard deviation (min-max) of the average JCT over
    the seeds of the reference, old and new."""
    cluster = golden["elastic"]["cluster"]
    old: dict[tuple[str, int], list[float]] = defaultdict(list)
    new: dict[tuple[str, int], list[float]] = defaultdict(list)
    for run in golden["elastic"]["runs"]:
        if run["policy"] != "ones":
            continue
        key = (run["load"], run["workload"])
        trace = traces.pollux(*key)
        if trace is None:
            continue
        config = SimConfig(policy="ones", seed=run["seed"])
        label = f"{key[0]} w{key[1]} ones s{run['seed']}"
        old[key].append(run["avg_jct_s"])
        new[key].append(timed(trace, cluster, config, label).summary["avg_jct_s"])
    lines = [
        "| load | workload | seeds | old mean ± sd (min–max) | new mean ± sd (min–max) "
        "| new/old (means) |",
        "|---|---|---|---|---|---|",
    ]
    for key in sorted(old):
        a, b = old[key], new[key]
        lines.append(
            f"| {key[0]} | {key[1]} | {len(a)} | {spread(a)} | {spread(b)} "
            f"| {statistics.mean(b) / statistics.mean(a):.3f} |"
        )
    if old:
        a = [statistics.mean(v) for v in old.values()]
        b = [statistics.mean(v) for v in new.values()]
        lines.append(
            f"| all | mean of {len(a)} | | {statistics.mean(a):,.0f} | {statistics.mean(b):,.0f} "
            f"| {statistics.mean(b) / statistics.mean(a):.3f} |"
        )
    return lines


def spread(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):,.0f} ± {sd:,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def ps_rows(golden: dict[str, Any]) -> Iterator[Row]:
    w = golden["ps"]["workload"]
    machines = uniform_machines(w["machines"], gpus=w["gpus_per_machine"])
    jobs = build_workload(w["jobs"], machines, seed=w["seed"], time_scale=w["time_scale"])
    trace = workload_trace(jobs)
    for policy, ref in golden["ps"]["policies"].items():
        result = timed(trace, golden["ps"]["cluster"], SimConfig(policy=policy), f"ps {policy}")
        table = result.jobs
        jct = dict(zip(table["job_id"].to_pylist(), table["jct_s"].to_pylist(), strict=True))
        worst = max(
            abs(jct[job] / old - 1) if jct[job] is not None else float("inf")
            for job, old in ref["jct_s"].items()
            if old is not None
        )
        new = result.summary["avg_jct_s"]
        yield Row("ps 200 jobs", policy, "200 jobs", ref["mean_jct_s"], new, worst)


def rigid_rows(golden: dict[str, Any], traces: Path) -> Iterator[Row]:
    philly = traces / "philly" / "philly_jobs.csv"
    sources = {
        "990": (bundled_trace_path("vc_0e4a51"), "32x8"),
        "philly": (philly, "philly-vcs"),
    }
    loaded: dict[str, Trace] = {}
    for ref in golden["rigid"]:
        path, cluster = sources[ref["trace"]]
        if not Path(path).is_file():
            continue
        if ref["trace"] not in loaded:
            loaded[ref["trace"]] = read_trace(path).trace
        label = f"rigid {ref['trace']} {ref['policy']}"
        config = SimConfig(policy=ref["policy"])
        new = timed(loaded[ref["trace"]], cluster, config, label).summary["avg_jct_s"]
        yield Row(f"rigid {ref['trace']}", ref["policy"], ref["trace"], ref["avg_jct_s"], new)


def summary_table(rows: list[Row]) -> list[str]:
    """One line per (group, policy): runs, new/old range, largest relative difference."""
    by: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in rows:
        by[(r.group, r.policy)].append(r)
    lines = [
        "| runs | policy | n | new/old avg JCT: min – max | max \\|new/old − 1\\| "
        "| max per-job \\|new/old − 1\\| |",
        "|---|---|---|---|---|---|",
    ]
    for (group, policy), rs in by.items():
        ratios = [r.ratio for r in rs]
        worst = max(abs(x - 1) for x in ratios)
        per_job = [r.per_job for r in rs if r.per_job is not None]
        job_cell = f"{max(per_job):.1e}" if per_job else "—"
        lines.append(
            f"| {group} | {policy} | {len(rs)} | {min(ratios):.4f} – {max(ratios):.4f} "
            f"| {worst:.1e} | {job_cell} |"
        )
    return lines


def detail_table(rows: list[Row], policy: str) -> list[str]:
    lines = ["| runs | workload | old avg JCT (s) | new (s) | new/old |", "|---|---|---|---|---|"]
    for r in rows:
        if r.policy == policy:
            lines.append(f"| {r.group} | {r.case} | {r.old:,.1f} | {r.new:,.1f} | {r.ratio:.4f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--parts", default="elastic,ones,ps,rigid")
    parser.add_argument("--traces", type=Path, default=ROOT.parent / "shared" / "traces")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    golden = json.loads(GOLDEN.read_text())
    traces = Traces(args.traces)
    rows: list[Row] = []
    if "elastic" in parts:
        rows.extend(elastic_rows(golden, traces))
    if "ps" in parts:
        rows.extend(ps_rows(golden))
    if "rigid" in parts:
        rows.extend(rigid_rows(golden, args.traces))
    ones = ones_table(golden, traces) if "ones" in parts else []
    print()
    print("\n".join(summary_table(rows)))
    for policy in ("fifo (pack)", "tiresias thresholds=57600 (consolidate)"):
        if any(r.policy == policy for r in rows):
            print(f"\n{policy}:\n")
            print("\n".join(detail_table(rows, policy)))
    if ones:
        print("\nones:\n")
        print("\n".join(ones))


if __name__ == "__main__":
    main()
