"""The run directory: ``jobs.parquet``, ``timeline.parquet``, ``config.json``, ``summary.json``.

A run directory is written whole or not at all: files go to a fresh sibling directory that is
renamed into place at the end, so a crash never leaves a half-written run behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dlsched.outdir import check_replaceable as check_directory
from dlsched.outdir import write_directory

RUN_FILES = ("jobs.parquet", "timeline.parquet", "config.json", "summary.json")


class RunDirError(ValueError):
    """A directory is not a complete dlsched run, or may not be replaced by one."""


def check_replaceable(out: Path) -> None:
    """Refuse an ``out`` that exists and is not a run directory (see
    :func:`dlsched.outdir.check_replaceable`)."""
    check_directory(out, RUN_FILES, "run directory", RunDirError)


def write_run(
    out: str | Path,
    jobs: pa.Table,
    timeline: pa.Table,
    summary: dict[str, Any],
    config: dict[str, Any],
) -> Path:
    """Write a run directory atomically, replacing any previous run at ``out`` (and nothing
    else: see :func:`check_replaceable`)."""

    def fill(tmp: Path) -> None:
        pq.write_table(jobs, tmp / "jobs.parquet")
        pq.write_table(timeline, tmp / "timeline.parquet")
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    return write_directory(out, RUN_FILES, "run directory", fill, RunDirError)


def read_summary(run: str | Path) -> dict[str, Any]:
    """The summary of a run directory; a clear error when it is not one."""
    path = Path(run) / "summary.json"
    if not path.is_file():
        raise RunDirError(f"{run}: not a dlsched run directory (no summary.json)")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{path}: invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: expected a JSON object")
    return data
