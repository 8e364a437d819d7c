"""Microsoft Philly jobs as processed for the Pollux artifact (``philly_jobs.csv``).

Columns: ``job_id, submit_time, submit_s, duration_s, num_gpus, gpu_time_s, vc``. ``submit_time``
is the naive UTC wall time of ``submit_s`` (seconds since the first job), so the trace origin is
the first row's wall time minus its ``submit_s``; every later row must agree with it to 1 s.
``gpu_time_s`` is redundant (``duration_s * num_gpus``) and is only checked. No user, state or
job name exists in this file: those stay null.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pyarrow as pa

from dlsched.trace.readers.fields import BadField, Row, show_number
from dlsched.trace.readers.spec import CsvFormat

# A wall time and submit_s are both whole seconds; allow one second of rounding between them.
_WALL_TOLERANCE_S = 1.0


class PhillyParser:
    """Reads Philly rows; remembers the origin set by the first row."""

    def __init__(self) -> None:
        self._origin: float | None = None

    def parse(self, row: Row) -> tuple[Any, ...]:
        job_id = row.text("job_id")
        submit = row.number("submit_s")
        wall = row.wall_time("submit_time")
        if self._origin is None:
            self._origin = wall - submit
        elif abs(wall - self._origin - submit) > _WALL_TOLERANCE_S:
            raise BadField(
                "submit_time",
                f"wall time is {wall - self._origin:.0f} s after the trace origin "
                f"but submit_s is {show_number(submit)}",
            )
        duration = row.number("duration_s")
        num_gpus = row.integer("num_gpus")
        gpu_time = row.number("gpu_time_s") if row.has("gpu_time_s") else None
        expected = duration * num_gpus
        if gpu_time is not None and abs(gpu_time - expected) > max(1, num_gpus):
            raise BadField(
                "gpu_time_s",
                f"{show_number(gpu_time)} is not duration_s * num_gpus = {show_number(expected)}",
            )
        return job_id, submit, num_gpus, duration, row.text("vc")

    def finish(self, table: pa.Table) -> tuple[pa.Table, float | None]:
        return table, self._origin


PHILLY = CsvFormat(
    name="philly",
    source="Microsoft Philly jobs, philly_jobs.csv",
    required=("job_id", "submit_time", "submit_s", "duration_s", "num_gpus", "vc"),
    optional=("gpu_time_s",),
    signature=frozenset({"submit_s", "duration_s"}),
    outputs=("job_id", "submit_time", "num_gpus", "duration", "vc"),
    new_parser=PhillyParser,
    gpu_jobs_note="every Philly job is a GPU job",
    source_columns=MappingProxyType({"submit_time": "submit_s", "duration": "duration_s"}),
)
