"""Peak memory of ``dlsched simulate`` against the span of time a trace covers.

Two-job traces whose second job arrives 1e4, 1e6 and 1e9 seconds after the first are simulated
(``--cluster 1x8``, default 60-s timeline step), each in a fresh process; the peak resident set
(``ru_maxrss`` of that process) and the rows of ``timeline.parquet`` are printed, with the ratio
of each peak to the 1e4-s one. Memory must follow the number of jobs, not the span: the ratios
stay near 1.

Usage: ``.venv/bin/python bench/sim_memory_span.py [--out runs/sim_memory_span]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

SPANS = (1e4, 1e6, 1e9)
MEASURE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], capture_output=True).returncode\n"
    "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def peak_kib(args: list[str]) -> int:
    """Peak resident set (KiB) of ``args`` run in a fresh child; raises if it fails."""
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, *args], capture_output=True, text=True, check=True
    )
    code, peak = (int(x) for x in out.stdout.split())
    if code != 0:
        raise SystemExit(f"{' '.join(args)} exited with code {code}")
    return peak


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/sim_memory_span"))
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    dlsched = str(Path(sys.executable).with_name("dlsched"))
    results = []
    for span in SPANS:
        trace = args.out / f"span-{span:g}.csv"
        trace.write_text(f"job_id,submit_time,num_gpus,duration\na,0,1,100\nb,{span:g},1,100\n")
        run = args.out / f"run-{span:g}"
        shutil.rmtree(run, ignore_errors=True)
        peak = peak_kib(
            [dlsched, "simulate", "--trace", str(trace), "--cluster", "1x8", "--out", str(run)]
        )
        rows = pq.read_metadata(run / "timeline.parquet").num_rows
        results.append({"span_s": span, "peak_mib": round(peak / 1024, 1), "timeline_rows": rows})
    base = results[0]["peak_mib"]
    for r in results:
        r["peak_vs_1e4"] = round(float(r["peak_mib"]) / float(base), 3)
        print(
            f"span {r['span_s']:>8g} s: peak {r['peak_mib']:>7} MiB "
            f"({r['peak_vs_1e4']}x the 1e4-s run), timeline rows {r['timeline_rows']}"
        )
    print(json.dumps({"runs": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
