"""The Pollux evaluation workloads (``workload-N.csv``).

Columns: ``name, time, application, num_replicas, batch_size``. One replica runs on one GPU, so
``num_replicas`` is the GPU count. ``time`` is seconds from the workload's start. The file gives
no run time: ``duration`` stays null and the work comes from a performance model of
``application`` at ``batch_size``; every row is an ``elastic`` job.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from dlsched.trace.readers.fields import Row
from dlsched.trace.readers.spec import CsvFormat, RelativeTimes


class PolluxParser(RelativeTimes):
    """Reads Pollux workload rows."""

    def parse(self, row: Row) -> tuple[Any, ...]:
        return (
            row.text("name"),
            row.number("time"),
            row.integer("num_replicas"),
            row.text("application"),
            row.integer("batch_size", bits=64),
            "elastic",
        )


POLLUX = CsvFormat(
    name="pollux",
    source="Pollux evaluation workload",
    required=("name", "time", "application", "num_replicas", "batch_size"),
    optional=(),
    signature=frozenset({"name", "time", "num_replicas"}),
    outputs=("job_id", "submit_time", "num_gpus", "application", "batch_size", "kind"),
    new_parser=PolluxParser,
    gpu_jobs_note="every Pollux job is a GPU job",
    source_columns=MappingProxyType(
        {"job_id": "name", "submit_time": "time", "num_gpus": "num_replicas"}
    ),
)
