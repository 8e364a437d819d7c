"""SenseTime Helios job logs (``cluster_log.csv`` of HeliosData).

Columns: ``job_id, user, vc, jobname, gpu_num, cpu_num, node_num, state, submit_time, start_time,
end_time, duration, queue``; ``jobname``, ``duration`` and ``queue`` may be absent, and a
``jobname`` may be empty. Times are naive ``YYYY-MM-DD HH:MM:SS`` wall times, read as UTC; the
trace origin is the earliest submit time among the rows that parse, and ``submit_time``,
``start_time`` and ``end_time`` become seconds from it. ``duration`` is computed as end - start; a
``duration`` (or ``queue`` = start - submit) column that disagrees by more than 1 s rejects the
row. ``gpu_num`` 0 is a CPU job, which is valid. A CANCELLED job may lack start and end times
(it never ran); then its duration is null.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dlsched.trace.readers.fields import BadField, Row, show_number
from dlsched.trace.readers.spec import CsvFormat

HELIOS_STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")
# Helios stores whole seconds; the derived columns may round differently from the stamps.
_AGREEMENT_S = 1.0


class HeliosParser:
    """Reads Helios rows with absolute times; ``finish`` makes them relative."""

    def parse(self, row: Row) -> tuple[Any, ...]:
        job_id = row.text("job_id")
        state = row.text("state")
        if state not in HELIOS_STATES:
            raise BadField("state", f"unknown state {state!r} (expected one of {HELIOS_STATES})")
        submit = row.wall_time("submit_time")
        if state == "CANCELLED":
            start = row.opt_wall_time("start_time")
            end = row.opt_wall_time("end_time")
        else:
            start = row.wall_time("start_time")
            end = row.wall_time("end_time")
        duration = end - start if start is not None and end is not None else None
        _check_derived(row, "duration", duration)
        _check_derived(row, "queue", None if start is None else start - submit)
        return (
            job_id,
            submit,
            row.integer("gpu_num"),
            duration,
            row.text("user"),
            row.text("vc"),
            row.opt_text("jobname"),
            state,
            row.number("cpu_num"),
            start,
            end,
            row.integer("node_num"),
        )

    def finish(self, table: pa.Table) -> tuple[pa.Table, float | None]:
        if table.num_rows == 0:
            return table, None
        origin = float(pc.min(table.column("submit_time")).as_py())
        for name in ("submit_time", "start_time", "end_time"):
            shifted = pc.subtract(table.column(name), origin)
            index = table.schema.get_field_index(name)
            table = table.set_column(index, table.schema.field(index), shifted)
        return table, origin


def _check_derived(row: Row, name: str, computed: float | None) -> None:
    """A ``duration``/``queue`` column, when present, must match what the stamps say.

    ``computed`` is None when a stamp is missing (a cancelled job that never ran): then only an
    empty or zero value is consistent. A negative ``computed`` means stamps out of order, which the
    common checks reject with a clearer message, so nothing is compared here.
    """
    given = row.opt_number(name)
    if given is None:
        return
    if computed is None:
        if given != 0:
            raise BadField(name, f"{show_number(given)} s given but the job has no start/end time")
        return
    if computed >= 0 and abs(given - computed) > _AGREEMENT_S:
        raise BadField(
            name,
            f"{show_number(given)} s disagrees with the time stamps ({show_number(computed)} s)",
        )


HELIOS = CsvFormat(
    name="helios",
    source="SenseTime Helios cluster_log.csv",
    required=(
        "job_id",
        "user",
        "vc",
        "gpu_num",
        "cpu_num",
        "node_num",
        "state",
        "submit_time",
        "start_time",
        "end_time",
    ),
    optional=("jobname", "duration", "queue"),
    signature=frozenset({"gpu_num", "start_time", "end_time"}),
    outputs=(
        "job_id",
        "submit_time",
        "num_gpus",
        "duration",
        "user",
        "vc",
        "job_name",
        "state",
        "num_cpus",
        "start_time",
        "end_time",
        "num_nodes",
    ),
    new_parser=HeliosParser,
    source_columns=MappingProxyType(
        {
            "num_gpus": "gpu_num",
            "job_name": "jobname",
            "num_cpus": "cpu_num",
            "num_nodes": "node_num",
        }
    ),
)
