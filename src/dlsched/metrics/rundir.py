"""The run directory: ``jobs.parquet``, ``timeline.parquet``, ``config.json``, ``summary.json``.

A run directory is written whole or not at all: files go to a fresh sibling directory that is
renamed into place at the end, so a crash never leaves a half-written run behind.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

RUN_FILES = ("jobs.parquet", "timeline.parquet", "config.json", "summary.json")


class RunDirError(ValueError):
    """A directory is not a complete dlsched run, or may not be replaced by one."""


def check_replaceable(out: Path) -> None:
    """Refuse an ``out`` that exists and is not a run directory: writing a run replaces
    whatever is at ``out``, and a directory holding anything else (``.``, a home directory, a
    folder of results) must never be deleted for it. An empty directory may be replaced."""
    if not out.exists() and not out.is_symlink():
        return
    if out.is_symlink() or not out.is_dir():
        raise RunDirError(f"{out}: exists and is not a directory; refusing to replace it")
    others = sorted(p.name for p in out.iterdir() if p.name not in RUN_FILES)
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise RunDirError(
            f"{out}: exists and is not a dlsched run directory (holds {shown}); "
            "refusing to replace it"
        )


def write_run(
    out: str | Path,
    jobs: pa.Table,
    timeline: pa.Table,
    summary: dict[str, Any],
    config: dict[str, Any],
) -> Path:
    """Write a run directory atomically, replacing any previous run at ``out`` (and nothing
    else: see :func:`check_replaceable`)."""
    out = Path(out)
    check_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # os.mkdir (unlike tempfile.mkdtemp, which makes 0700 directories) honours the umask, so
    # a run directory gets the permissions any directory the user creates would get.
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{uuid.uuid4().hex}"
    os.mkdir(tmp)
    try:
        pq.write_table(jobs, tmp / "jobs.parquet")
        pq.write_table(timeline, tmp / "timeline.parquet")
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        old = None
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}-{uuid.uuid4().hex}"
            os.replace(out, old)
        try:
            os.replace(tmp, out)
        except BaseException:
            if old is not None:
                os.replace(old, out)
            raise
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


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
