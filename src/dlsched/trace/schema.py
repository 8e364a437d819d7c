"""The canonical job record of dlsched and its columnar container.

Every reader turns its public format into a :class:`Trace`: one Arrow table whose columns are
exactly :data:`SCHEMA`. A field a format does not carry is an Arrow null, never a guessed value.
:class:`JobSpec` is the same record as a frozen dataclass, for code that handles one job at a time.

Units: times in seconds (``submit_time`` relative to the trace's own origin, which
``origin_unix`` records when the format gives wall-clock times); memory in MiB; ``gpu_milli`` is
the share of *each* requested GPU in thousandths (1000 = a whole GPU).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pyarrow as pa

WORK_UNITS = ("seconds", "iterations", "samples", "epochs")
FINAL_STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "RUNNING", "PENDING")

SCHEMA = pa.schema(
    [
        pa.field("job_id", pa.string(), nullable=False),
        pa.field("submit_time", pa.float64(), nullable=False),
        pa.field("num_gpus", pa.int32(), nullable=False),
        pa.field("duration", pa.float64()),
        pa.field("user", pa.string()),
        pa.field("vc", pa.string()),
        pa.field("job_name", pa.string()),
        pa.field("state", pa.string()),
        pa.field("gpu_type", pa.string()),
        pa.field("num_cpus", pa.float64()),
        pa.field("memory_mib", pa.float64()),
        pa.field("gpu_milli", pa.int32()),
        pa.field("application", pa.string()),
        pa.field("batch_size", pa.int64()),
        pa.field("work", pa.float64()),
        pa.field("work_unit", pa.string()),
        pa.field("start_time", pa.float64()),
        pa.field("end_time", pa.float64()),
        pa.field("num_nodes", pa.int32()),
        pa.field("kind", pa.string()),
        pa.field("num_servers", pa.int32()),
        pa.field("max_gpus", pa.int32()),
        pa.field("max_servers", pa.int32()),
        pa.field("deadline", pa.float64()),
        pa.field("amp", pa.bool_()),
    ],
    metadata={"dlsched.schema": "4"},
)
OPTIONAL_SINCE_V2 = ("kind", "num_servers", "max_gpus", "max_servers")
"""Fields added in schema 2 (job kinds)."""
OPTIONAL_SINCE_V3 = ("deadline",)
"""Fields added in schema 3 (deadlines)."""
OPTIONAL_SINCE_V4 = ("amp",)
"""Fields added in schema 4 (the workload's numeric precision, for interference models)."""
ADDED_FIELDS = OPTIONAL_SINCE_V2 + OPTIONAL_SINCE_V3 + OPTIONAL_SINCE_V4
"""Fields a trace stored by an older schema may lack; they read as nulls."""
COLUMN_NAMES: tuple[str, ...] = tuple(SCHEMA.names)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One job as submitted. ``None`` means the trace does not say.

    ``duration`` is the run time at the requested allocation (what a replay uses as work when
    ``work`` is absent). ``gpu_milli`` below 1000 means the job shares one GPU (``num_gpus`` is 1).
    ``start_time``/``end_time`` are what the original cluster did, kept for characterization only.

    ``kind`` says how the job runs (:data:`dlsched.perf.model.KIND_NAMES`; None: inferred, see
    :func:`dlsched.sim.kinds.row_kind`): ``rigid`` replays its run time at ``num_gpus``;
    ``elastic`` is an ``application`` of the Pollux profiles at global batch ``batch_size``,
    asking for ``num_gpus`` (an elastic policy may give it up to ``max_gpus``); ``ps`` is a
    parameter-server job training ``work`` samples of the zoo network ``application`` at
    per-worker ``batch_size``, asking for ``num_gpus`` workers and ``num_servers`` PS (up to
    ``max_gpus`` and ``max_servers``).

    ``deadline`` is when the job should have finished, in seconds on the ``submit_time`` clock
    (not relative to its submission); None means best effort (no deadline).

    ``amp`` says whether the job trains with automatic mixed precision; with ``application``
    (the model) and ``batch_size`` it names the workload a co-location interference model looks
    up (:mod:`dlsched.perf.interference`).
    """

    job_id: str
    submit_time: float
    num_gpus: int
    duration: float | None = None
    user: str | None = None
    vc: str | None = None
    job_name: str | None = None
    state: str | None = None
    gpu_type: str | None = None
    num_cpus: float | None = None
    memory_mib: float | None = None
    gpu_milli: int | None = None
    application: str | None = None
    batch_size: int | None = None
    work: float | None = None
    work_unit: str | None = None
    start_time: float | None = None
    end_time: float | None = None
    num_nodes: int | None = None
    kind: str | None = None
    num_servers: int | None = None
    max_gpus: int | None = None
    max_servers: int | None = None
    deadline: float | None = None
    amp: bool | None = None


assert tuple(f.name for f in fields(JobSpec)) == COLUMN_NAMES


@dataclass(frozen=True)
class Trace:
    """A job trace: an Arrow table with :data:`SCHEMA`, sorted by ``submit_time`` (stable).

    ``source`` names where it came from (a path or a generator); ``origin_unix`` is the wall-clock
    time (Unix seconds) of ``submit_time == 0`` when the format had wall-clock times, else None.
    """

    table: pa.Table
    source: str = ""
    origin_unix: float | None = None

    def __post_init__(self) -> None:
        if not self.table.schema.equals(SCHEMA, check_metadata=False):
            raise ValueError(
                f"trace {self.source!r}: table schema differs from dlsched's canonical schema"
            )

    def __len__(self) -> int:
        return int(self.table.num_rows)

    def column(self, name: str) -> pa.ChunkedArray:
        return self.table.column(name)

    def jobs(self) -> Iterator[JobSpec]:
        """Yield every row as a :class:`JobSpec` (slow path; the simulator reads columns)."""
        for row in self.table.to_pylist():
            yield JobSpec(**row)

    @classmethod
    def from_jobs(
        cls, jobs: Sequence[JobSpec], source: str = "", origin_unix: float | None = None
    ) -> Trace:
        """Build a trace from records, sorting stably by submit time."""
        columns: dict[str, list[Any]] = {name: [] for name in COLUMN_NAMES}
        for job in jobs:
            for name in COLUMN_NAMES:
                columns[name].append(getattr(job, name))
        return cls.from_columns(columns, source, origin_unix)

    @classmethod
    def from_columns(
        cls,
        columns: dict[str, Any],
        source: str = "",
        origin_unix: float | None = None,
    ) -> Trace:
        """Build a trace from column lists/arrays; missing columns become all-null."""
        unknown = set(columns) - set(COLUMN_NAMES)
        if unknown:
            raise ValueError(f"unknown trace columns: {sorted(unknown)}")
        n = len(columns["job_id"]) if "job_id" in columns else 0
        arrays = []
        for f in SCHEMA:
            if f.name in columns:
                arrays.append(pa.array(columns[f.name], type=f.type))
            else:
                arrays.append(pa.nulls(n, type=f.type))
        table = pa.Table.from_arrays(arrays, schema=SCHEMA)
        return cls(sort_by_submit(table), source, origin_unix)


def sort_by_submit(table: pa.Table) -> pa.Table:
    """Stable sort by submit time (ties keep file order)."""
    return sort_stable(table, "submit_time")


def sort_stable(table: pa.Table, column: str) -> pa.Table:
    """``table`` sorted stably by the numeric ``column`` (ties keep their order); the table
    itself when already sorted."""
    if table.num_rows == 0:
        return table
    values = table.column(column).to_numpy()
    if np.all(values[1:] >= values[:-1]):
        return table
    return table.take(pa.array(np.argsort(values, kind="stable")))


def empty_trace(source: str = "") -> Trace:
    return Trace(SCHEMA.empty_table(), source)
