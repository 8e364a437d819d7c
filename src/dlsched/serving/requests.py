"""The canonical LLM request record and its columnar container.

Every request-trace reader (:mod:`dlsched.serving.readers`) and generator
(:mod:`dlsched.serving.arrivals`) produces a :class:`RequestTrace`: one Arrow table whose
columns are exactly :data:`REQUEST_SCHEMA`, sorted by arrival time (stable). A field a format
does not carry is null, never a guessed value. :class:`RequestSpec` is the same record as a
frozen dataclass, for code that handles one request at a time.

Units: ``arrival_time`` in seconds from the trace's origin (``origin_unix`` records that
origin's wall-clock time when the format gives one); token counts are whole tokens of the
serving model's tokenizer. ``output_tokens`` counts every generated token, the first one (which
the prefill produces) included, so it is at least 1.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pyarrow as pa

from dlsched.trace.schema import sort_stable

REQUEST_SCHEMA = pa.schema(
    [
        pa.field("arrival_time", pa.float64(), nullable=False),
        pa.field("prompt_tokens", pa.int32(), nullable=False),
        pa.field("output_tokens", pa.int32(), nullable=False),
        pa.field("model", pa.string()),
        pa.field("tenant", pa.string()),
        pa.field("slo_class", pa.string()),
    ],
    metadata={"dlsched.requests": "1"},
)
REQUEST_COLUMNS: tuple[str, ...] = tuple(REQUEST_SCHEMA.names)


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One LLM inference request as it arrives. ``None`` means the trace does not say.

    ``model`` is the model the request names (BurstGPT's ``Model``); ``tenant`` who sent it;
    ``slo_class`` its latency class (BurstGPT's ``Log Type``: conversation or API)."""

    arrival_time: float
    prompt_tokens: int
    output_tokens: int
    model: str | None = None
    tenant: str | None = None
    slo_class: str | None = None


assert tuple(f.name for f in fields(RequestSpec)) == REQUEST_COLUMNS


@dataclass(frozen=True)
class RequestTrace:
    """A request trace: an Arrow table with :data:`REQUEST_SCHEMA`, sorted by
    ``arrival_time`` (stable). ``source`` names where it came from; ``origin_unix`` is the
    wall-clock time (Unix seconds) of ``arrival_time == 0`` when the format had wall-clock
    times, else None."""

    table: pa.Table
    source: str = ""
    origin_unix: float | None = None

    def __post_init__(self) -> None:
        if not self.table.schema.equals(REQUEST_SCHEMA, check_metadata=False):
            raise ValueError(
                f"request trace {self.source!r}: table schema differs from the request schema"
            )

    def __len__(self) -> int:
        return int(self.table.num_rows)

    def column(self, name: str) -> pa.ChunkedArray:
        return self.table.column(name)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Arrival times (float64), prompt and output tokens (int64) as numpy arrays."""
        return (
            self.column("arrival_time").to_numpy(),
            self.column("prompt_tokens").to_numpy().astype(np.int64),
            self.column("output_tokens").to_numpy().astype(np.int64),
        )

    def requests(self) -> Iterator[RequestSpec]:
        """Every row as a :class:`RequestSpec` (slow path; the simulator reads columns)."""
        for row in self.table.to_pylist():
            yield RequestSpec(**row)

    def duration(self) -> float:
        """Seconds from the first arrival to the last (0 for fewer than two requests)."""
        if len(self) < 2:
            return 0.0
        times = self.column("arrival_time")
        return float(times[-1].as_py() - times[0].as_py())

    @classmethod
    def from_requests(
        cls, requests: Sequence[RequestSpec], source: str = "", origin_unix: float | None = None
    ) -> RequestTrace:
        """Build a trace from records, sorting stably by arrival time."""
        columns: dict[str, list[Any]] = {name: [] for name in REQUEST_COLUMNS}
        for request in requests:
            for name in REQUEST_COLUMNS:
                columns[name].append(getattr(request, name))
        return cls.from_columns(columns, source, origin_unix)

    @classmethod
    def from_columns(
        cls, columns: dict[str, Any], source: str = "", origin_unix: float | None = None
    ) -> RequestTrace:
        """Build a trace from column lists/arrays; missing optional columns become null.
        ValueError for an unknown column or a missing required one."""
        unknown = set(columns) - set(REQUEST_COLUMNS)
        if unknown:
            raise ValueError(f"unknown request columns: {sorted(unknown)}")
        missing = [f.name for f in REQUEST_SCHEMA if not f.nullable and f.name not in columns]
        if missing:
            raise ValueError(f"request columns missing: {missing}")
        n = len(columns["arrival_time"])
        arrays = [
            pa.array(columns[f.name], type=f.type)
            if f.name in columns
            else pa.nulls(n, type=f.type)
            for f in REQUEST_SCHEMA
        ]
        table = pa.Table.from_arrays(arrays, schema=REQUEST_SCHEMA)
        return cls(sort_stable(table, "arrival_time"), source, origin_unix)
