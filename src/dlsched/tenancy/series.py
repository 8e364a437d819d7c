"""Quota over time per ClusterQueue: ``tenants.parquet`` of a run with queues.

One row per ClusterQueue whenever its GPU quota changes: ``time`` (s), ``queue``, ``used``
(GPUs its admitted jobs hold), ``nominal`` (its nominal GPU quota), ``borrowed`` (GPUs held
beyond nominal) and ``lent`` (its cohort tree's borrowing at that time split in proportion to
each queue's unused nominal quota: the rule of the summary's ``lent_gpus_avg`` applied at
each instant). Every queue has a row at the first admission (zero when it admitted nothing
then); a value holds until the queue's next row (a step series), so the rows grow with
admissions and finishes, not with the span of the run. A run without queues has no such file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from dlsched.tenancy.stage import AdmissionStage

SCHEMA = pa.schema(
    [
        ("time", pa.float64()),
        ("queue", pa.string()),
        ("used", pa.float64()),
        ("nominal", pa.float64()),
        ("borrowed", pa.float64()),
        ("lent", pa.float64()),
    ]
)


def quota_series(stage: AdmissionStage, tenants: Mapping[str, Mapping[str, Any]]) -> pa.Table:
    """The time series of the module docstring for ``stage``'s run; ``tenants`` is the run's
    per-queue summary (for each queue's ``nominal_gpus``). Rows are in time order, queues in
    manifest order within a time."""
    names = stage.names
    n = len(names)
    if not stage.changes:
        return SCHEMA.empty_table()
    change = np.array(stage.changes, dtype=[("t", "f8"), ("cq", "i8"), ("u", "f8"), ("b", "f8")])
    times, step = np.unique(change["t"], return_inverse=True)
    # The state after each time: the last change of each queue at that time, carried forward.
    cell = step * n + change["cq"]
    last = len(cell) - 1 - np.unique(cell[::-1], return_index=True)[1]
    rows = len(times)
    at = np.full((rows, n), -1, dtype=np.int64)
    at[step[last], change["cq"][last]] = last
    seen = np.where(at >= 0, np.arange(rows)[:, None], -1)
    carried = np.maximum.accumulate(seen, axis=0)
    source = np.where(carried >= 0, at[np.maximum(carried, 0), np.arange(n)], -1)
    used = np.where(source >= 0, change["u"][source], 0.0)
    borrowed = np.where(source >= 0, change["b"][source], 0.0)
    nominal = np.array([float(tenants[name]["nominal_gpus"]) for name in names])
    lent = np.zeros((rows, n))
    root = np.array(stage.admission.quota.root[:n])
    for tree in np.unique(root):
        queues = np.flatnonzero(root == tree)
        unused = np.maximum(0.0, nominal[queues] - (used[:, queues] - borrowed[:, queues]))
        total = borrowed[:, queues].sum(axis=1, keepdims=True)
        spare = unused.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            lent[:, queues] = np.where(spare > 0, total * unused / spare, 0.0)
    new = np.ones((rows, n), dtype=bool)
    new[1:] = (used[1:] != used[:-1]) | (borrowed[1:] != borrowed[:-1]) | (lent[1:] != lent[:-1])
    r, q = np.nonzero(new)
    return pa.table(
        {
            "time": times[r],
            "queue": pa.array(np.array(names, dtype=object)[q], pa.string()),
            "used": used[r, q],
            "nominal": nominal[q],
            "borrowed": borrowed[r, q],
            "lent": lent[r, q],
        },
        schema=SCHEMA,
    )
