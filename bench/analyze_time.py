"""Time ``dlsched analyze`` on all 82,247 Philly jobs, phase by phase.

Phases: reading the CSV (``read_trace``), the statistics (``characterize``), drawing the figures
and writing the report directory (``write_report``, which draws them again, so "write" is the
whole of what the command does after reading). Each phase is repeated ``--repeat`` times; the
minimum and median wall times are printed as one JSON object, with the report's size and the
process's peak resident memory. ``command`` is the whole command run once in a fresh interpreter
(imports of numpy, pyarrow and matplotlib included), as a user would see it.

    python bench/analyze_time.py [--trace PATH] [--cluster philly-machines] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlsched.analysis.characterize import characterize
from dlsched.analysis.report import TraceInput, report_figures, write_report
from dlsched.cluster.parse import resolve_cluster
from dlsched.trace.read import read_trace

ROOT = Path(__file__).resolve().parent.parent
PHILLY = ROOT.parent / "shared" / "traces" / "philly" / "philly_jobs.csv"
# The command function as registered in the CLI, run in a fresh interpreter.
COMMAND = "import sys, typer; from dlsched.cli.analyze_cmd import analyze; typer.run(analyze)"


def timed(repeat: int, work: Callable[[], Any]) -> tuple[dict[str, float], Any]:
    """Run ``work`` ``repeat`` times: min and median seconds, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return {"min_s": round(min(times), 3), "median_s": round(statistics.median(times), 3)}, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=PHILLY)
    parser.add_argument("--cluster", default="philly-machines")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    capacity = resolve_cluster(args.cluster)
    read_t, result = timed(args.repeat, lambda: read_trace(args.trace))
    trace = result.trace
    stats_t, report = timed(
        args.repeat, lambda: characterize(trace, capacity.total_gpus, capacity.name)
    )
    figures_t, figures = timed(args.repeat, lambda: report_figures(report))
    source = TraceInput(str(args.trace), result.format, result.rows_read, len(result.errors))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report"
        write_t, _ = timed(args.repeat, lambda: write_report(out, report, source, force=True))
        size = sum(p.stat().st_size for p in out.iterdir())
        files = len(list(out.iterdir()))
        argv = [sys.executable, "-c", COMMAND, str(args.trace), "--out", str(out), "--force"]
        start = time.perf_counter()
        subprocess.run([*argv, "--cluster", args.cluster], check=True, capture_output=True)
        command_s = time.perf_counter() - start
    total = read_t["median_s"] + stats_t["median_s"] + write_t["median_s"]
    print(
        json.dumps(
            {
                "trace": str(args.trace),
                "jobs": len(trace),
                "gpu_jobs": report.overview.gpu_jobs,
                "cluster": capacity.name,
                "repeat": args.repeat,
                "read": read_t,
                "characterize": stats_t,
                "figures": figures_t,
                "figures_drawn": len(figures),
                "write_report": write_t,
                "analyze_total_median_s": round(total, 3),
                "command_s": round(command_s, 3),
                "report_files": files,
                "report_bytes": size,
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
