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
from itertools import groupby
from typing import Any

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
    per-queue summary (for each queue's ``nominal_gpus``)."""
    names = stage.names
    nominal = [float(tenants[name]["nominal_gpus"]) for name in names]
    root = stage.admission.quota.root
    trees: dict[int, list[int]] = {}
    for cq in range(len(names)):
        trees.setdefault(root[cq], []).append(cq)
    used = [0.0] * len(names)
    borrowed = [0.0] * len(names)
    last: list[tuple[float, float, float] | None] = [None] * len(names)
    rows: dict[str, list[Any]] = {field.name: [] for field in SCHEMA}

    def emit(time: float, queues: list[int]) -> None:
        lent = _lent(queues, used, borrowed, nominal)
        for cq, given in zip(queues, lent, strict=True):
            values = (used[cq], borrowed[cq], given)
            if values == last[cq]:
                continue
            last[cq] = values
            row = (time, names[cq], used[cq], nominal[cq], borrowed[cq], given)
            for key, value in zip(SCHEMA.names, row, strict=True):
                rows[key].append(value)

    for time, changes in groupby(stage.changes, key=lambda change: change[0]):
        touched: set[int] = set()
        for _, cq, in_use, over in changes:
            used[cq], borrowed[cq] = in_use, over
            touched.add(root[cq])
        # The first time gives every queue its first row; later ones only the changed trees.
        for tree in sorted(touched) if rows["time"] else trees:
            emit(time, trees[tree])
    return pa.table(rows, schema=SCHEMA)


def _lent(
    queues: list[int], used: list[float], borrowed: list[float], nominal: list[float]
) -> list[float]:
    """Each queue's share of its tree's borrowing, by unused nominal quota."""
    total = sum(borrowed[cq] for cq in queues)
    unused = [max(0.0, nominal[cq] - (used[cq] - borrowed[cq])) for cq in queues]
    spare = sum(unused)
    return [total * u / spare if spare > 0 else 0.0 for u in unused]
