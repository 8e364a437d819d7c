"""Cluster state over time, recorded at change points and sampled on a regular grid.

The simulator reports each pool's state after every event. Records falling in the same sampling
bucket overwrite each other, so memory grows with the number of sampled steps that saw a change,
not with events. The value at grid time ``k·step`` is the state after the last event at or before
it (piecewise-constant, forward filled).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

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
        """Samples at every step from ``start`` to ``end`` (inclusive), for every pool."""
        if end < start:
            return TIMELINE_SCHEMA.empty_table()
        first = math.floor(start / self.step)
        last = math.ceil(end / self.step)
        marks = np.arange(first, last + 1, dtype=np.int64)
        parts = []
        for p, name in enumerate(self.pool_names):
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
        if not parts:
            return TIMELINE_SCHEMA.empty_table()
        return pa.concat_tables(parts)
