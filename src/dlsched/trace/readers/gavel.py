"""Philly arrivals as used by the Gavel evaluation (``philly_gavel_seed0.csv``, ``vc_0e4a51.csv``).

Columns: ``job_id, vc, gpu_num, submit_time, duration, job_type, total_steps``; ``vc`` and
``total_steps`` may be absent (the per-VC file has neither), and then ``vc`` and ``work`` stay null.
``submit_time`` is seconds from an unknown origin. ``job_type`` (e.g. "ResNet-50 (batch size
64)", Gavel's throughput key) becomes ``application`` as written; ``total_steps`` becomes ``work``
in iterations while ``duration`` stays the run time on Gavel's reference GPU (V100).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from dlsched.trace.readers.fields import Row
from dlsched.trace.readers.spec import CsvFormat, RelativeTimes


class GavelParser(RelativeTimes):
    """Reads Gavel-Philly rows."""

    def parse(self, row: Row) -> tuple[Any, ...]:
        work = row.number("total_steps") if row.has("total_steps") else None
        return (
            row.text("job_id"),
            row.number("submit_time"),
            row.integer("gpu_num"),
            row.number("duration"),
            row.text("vc") if row.has("vc") else None,
            row.text("job_type"),
            work,
            None if work is None else "iterations",
        )


GAVEL_PHILLY = CsvFormat(
    name="gavel-philly",
    source="Philly arrivals with Gavel job types",
    required=("job_id", "gpu_num", "submit_time", "duration", "job_type"),
    optional=("vc", "total_steps"),
    signature=frozenset({"gpu_num", "job_type"}),
    outputs=(
        "job_id",
        "submit_time",
        "num_gpus",
        "duration",
        "vc",
        "application",
        "work",
        "work_unit",
    ),
    new_parser=GavelParser,
    gpu_jobs_note="every Gavel-Philly job is a GPU job",
    source_columns=MappingProxyType(
        {"num_gpus": "gpu_num", "application": "job_type", "work": "total_steps"}
    ),
)
