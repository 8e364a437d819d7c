"""Writing PS simulation results: one directory per run, written atomically.

Files: ``jobs.csv`` (one row per job and policy, infeasible jobs with their reason),
``summary.json`` (per policy: mean JCT, jobs run, infeasible, decisions, decision time, and
each baseline's mean JCT over SMD's) and ``config.json`` (the run's settings).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dlsched.outdir import write_directory
from dlsched.ps.simulator import SimResult

FILES = ("jobs.csv", "summary.json", "config.json")


def summarize(results: Sequence[SimResult]) -> dict[str, Any]:
    """Per-policy figures and, when ``smd`` ran, every other policy's mean JCT over SMD's."""
    out: dict[str, Any] = {}
    for r in results:
        out[r.policy] = {
            "mean_jct_s": r.mean_jct,
            "jobs_run": sum(o.jct is not None for o in r.outcomes),
            "infeasible": len(r.infeasible),
            "decisions": r.decisions,
            "decide_seconds": r.decide_seconds,
        }
    if "smd" in out:
        smd = out["smd"]["mean_jct_s"]
        for figures in out.values():
            figures["jct_over_smd"] = figures["mean_jct_s"] / smd if smd > 0 else None
    return out


def write_run(out: str | Path, results: Sequence[SimResult], config: Mapping[str, Any]) -> Path:
    """Write the run directory ``out`` (replacing an earlier PS run directory only)."""

    def fill(tmp: Path) -> None:
        with open(tmp / "jobs.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(
                [
                    "policy", "job_id", "model", "arrival", "samples", "requested_workers",
                    "requested_servers", "finish", "jct", "restarts", "status", "reason",
                ]
            )  # fmt: skip
            for r in results:
                for o in r.outcomes:
                    status = "infeasible" if o.reason else "completed"
                    writer.writerow(
                        [
                            r.policy, o.job_id, o.model, o.arrival, o.samples,
                            o.requested_workers, o.requested_servers,
                            "" if o.finish is None else o.finish,
                            "" if o.jct is None else o.jct, o.restarts, status, o.reason or "",
                        ]
                    )  # fmt: skip
        (tmp / "summary.json").write_text(json.dumps(summarize(results), indent=2) + "\n")
        (tmp / "config.json").write_text(json.dumps(dict(config), indent=2) + "\n")

    return write_directory(out, FILES, "PS run directory", fill)
