"""Cluster state over time, recorded at change points and sampled on a regular grid.

The simulator reports each pool's state after every event. Records falling in the same sampling
bucket overwrite each other, so memory grows with the number of sampled steps that saw a change,
not with events. The value at grid time ``k·step`` is the state after the last event at or before
it (piecewise-constant, forward filled).

The table has a row for every grid time from start to end while that costs at most
:data:`DENSE_FLOOR` rows in all, or at most :data:`DENSE_FACTOR` rows per recorded change
beyond them. A run whose
span dwarfs its activity (two jobs a billion seconds apart) gets only the grid times at which a
pool's state changed, plus the first and the last: each row then holds from its time until the
next row of its pool. Such a table says so in its schema metadata (``dlsched.timeline`` =
``changes``; ``grid`` otherwise), and its size, like the simulator's memory, follows the number
of events, never the span of time.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

DENSE_FLOOR = 2_000_000
"""Grid rows a timeline always may have, whatever its number of changes (about 150 MB; a
year of minutes in four partitions): every real trace keeps the full grid."""
DENSE_FACTOR = 8
"""Grid rows allowed per recorded change beyond :data:`DENSE_FLOOR`."""
FORM_KEY = b"dlsched.timeline"

TIMELINE_SCHEMA = pa.schema(
    [
        pa.field("time_s", pa.float64()),
        pa.field("partition", pa.string()),
        pa.field("total_gpus", pa.int32()),
        pa.field("up_gpus", pa.int32()),
        pa.field("busy_gpus", pa.float64()),
        pa.field("idle_gpus", pa.float64()),
        pa.field("running_jobs", pa.int32()),
        pa.field("pending_jobs", pa.int32()),
        pa.field("pending_gpus", pa.int64()),
    ]
)


class TimelineRecorder:
    """Per-pool change records; see the module docstring."""

    def __init__(self, pool_names: tuple[str, ...], total_gpus: list[int], step_s: float) -> None:
        if step_s <= 0:
            raise ValueError(f"timeline step must be positive, got {step_s}")
        self.step = step_s
        self.pool_names = pool_names
        self.total_gpus = total_gpus
        n = len(pool_names)
        self._bucket: list[list[int]] = [[] for _ in range(n)]
        self._rows: list[list[tuple[float, int, int, int, int]]] = [[] for _ in range(n)]

    def record(
        self, pool: int, now: float, busy: float, up: int, running: int, pend: int, pend_gpus: int
    ) -> None:
        bucket = math.ceil(now / self.step)
        buckets = self._bucket[pool]
        row = (busy, up, running, pend, pend_gpus)
        if buckets and buckets[-1] == bucket:
            self._rows[pool][-1] = row
        else:
            buckets.append(bucket)
            self._rows[pool].append(row)

    def to_table(self, start: float, end: float) -> pa.Table:
        """Samples at every step from ``start`` to ``end`` (inclusive), for every pool; or,
        when that grid would be far larger than the changes recorded, only the steps at which
        a pool's state changed (see the module docstring)."""
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            return _with_form(TIMELINE_SCHEMA.empty_table(), "grid")
        first = math.floor(start / self.step)
        last = math.ceil(end / self.step)
        changes = sum(len(b) for b in self._bucket)
        pools = max(1, len(self.pool_names))
        dense = (last - first + 1) * pools <= DENSE_FLOOR + DENSE_FACTOR * changes
        parts = []
        for p, name in enumerate(self.pool_names):
            if dense:
                marks = np.arange(first, last + 1, dtype=np.int64)
            else:
                inside = [b for b in self._bucket[p] if first < b < last]
                marks = np.asarray([first, *inside, last], dtype=np.int64)
            total = self.total_gpus[p]
            buckets = np.asarray(self._bucket[p], dtype=np.int64)
            rows = np.asarray(self._rows[p], dtype=np.float64).reshape(-1, 5)
            initial = np.array([[0.0, total, 0, 0, 0]])
            values = np.vstack([initial, rows])
            idx = np.searchsorted(buckets, marks, side="right")
            sampled = values[idx]
            busy = sampled[:, 0]
            up = sampled[:, 1]
            parts.append(
                pa.table(
                    {
                        "time_s": marks * self.step,
                        "partition": pa.array([name] * len(marks), pa.string()),
                        "total_gpus": np.full(len(marks), total, dtype=np.int32),
                        "up_gpus": up.astype(np.int32),
                        "busy_gpus": busy,
                        "idle_gpus": up - busy,
                        "running_jobs": sampled[:, 2].astype(np.int32),
                        "pending_jobs": sampled[:, 3].astype(np.int32),
                        "pending_gpus": sampled[:, 4].astype(np.int64),
                    },
                    schema=TIMELINE_SCHEMA,
                )
            )
        form = "grid" if dense else "changes"
        if not parts:
            return _with_form(TIMELINE_SCHEMA.empty_table(), form)
        return _with_form(pa.concat_tables(parts), form)


def _with_form(table: pa.Table, form: str) -> pa.Table:
    return table.replace_schema_metadata({FORM_KEY: form.encode()})
