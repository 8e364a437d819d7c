"""The run directory: ``jobs.parquet``, ``timeline.parquet``, ``config.json``, ``summary.json``
and, for a run with queues, ``tenants.parquet`` (:mod:`dlsched.tenancy.series`).

A run directory is written whole or not at all, and replaces an earlier run only when asked to
(:mod:`dlsched.outdir` holds the rule every output follows).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dlsched.outdir import DirKind
from dlsched.safe_load import InputError, load_json, read_text

RUN_FILES = ("jobs.parquet", "timeline.parquet", "config.json", "summary.json")


class RunDirError(ValueError):
    """A directory is not a complete dlsched run, or may not be (re)placed by one."""


TENANTS_FILE = "tenants.parquet"
KUEUE_METRICS_FILE = "kueue_metrics.prom"

RUN_DIR = DirKind("run directory", (*RUN_FILES, TENANTS_FILE, KUEUE_METRICS_FILE), RunDirError)
"""Run directories as outputs: ``RUN_DIR.check(out, force)`` before a run."""


def write_run(
    out: str | Path,
    jobs: pa.Table,
    timeline: pa.Table,
    summary: dict[str, Any],
    config: dict[str, Any],
    force: bool = False,
    tenants: pa.Table | None = None,
    kueue_metrics: str | None = None,
) -> Path:
    """Write a run directory atomically (with ``tenants``: also ``tenants.parquet``; with
    ``kueue_metrics``, Kueue's metrics at the run's end: ``kueue_metrics.prom``). An
    earlier run at ``out`` is replaced only with ``force``, and nothing but a run ever is
    (:class:`RunDirError` otherwise)."""

    def fill(tmp: Path) -> None:
        pq.write_table(jobs, tmp / "jobs.parquet")
        pq.write_table(timeline, tmp / "timeline.parquet")
        if tenants is not None:
            pq.write_table(tenants, tmp / TENANTS_FILE)
        if kueue_metrics is not None:
            (tmp / KUEUE_METRICS_FILE).write_text(kueue_metrics)
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    return RUN_DIR.write(out, fill, force)


def read_summary(run: str | Path) -> dict[str, Any]:
    """The summary of a run directory; a clear error when it is not one."""
    path = Path(run) / "summary.json"
    if not path.is_file():
        raise RunDirError(f"{run}: not a dlsched run directory (no summary.json)")
    try:
        data = load_json(read_text(path), str(path), non_finite=True)
    except InputError as exc:
        raise RunDirError(str(exc)) from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: expected a JSON object")
    return data
