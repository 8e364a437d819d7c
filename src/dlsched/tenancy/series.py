"""Quota over time: ``tenants.parquet`` of a run with queues.

Rows of two levels, each a step series (a value holds until the next row of the same name and
level), in time order:

- ``level = "ClusterQueue"``: one row per ClusterQueue whenever its GPU quota changes —
  ``used`` (GPUs its admitted jobs hold), ``nominal`` (its nominal GPU quota), ``borrowed``
  (GPUs held beyond nominal), ``cohort`` (the root of its cohort tree, null without a cohort)
  and ``lent`` null (see below). Every queue has a row at the first change of the run.
- ``level = "Cohort"``: one row per cohort tree (named by its root cohort) whenever its
  queues' totals change — ``used``, ``nominal`` and ``borrowed`` summed over its ClusterQueues,
  and ``lent``: GPUs of the queues' unused nominal quota that others of the tree hold,
  ``min(borrowed, nominal - used + borrowed)``.

A queue's ``lent`` at an instant is its tree's ``lent`` split in proportion to the queues'
unused nominal quota (:func:`queue_steps` computes it). It is not written per queue because
every change of a tree's borrowing changes it for every queue of the tree, which would make
the file grow with queues × changes instead of with changes. A run without queues has no
such file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dlsched.tenancy.grouping import group_order
from dlsched.tenancy.stage import AdmissionStage

QUEUE, COHORT = "ClusterQueue", "Cohort"
SCHEMA = pa.schema(
    [
        ("time", pa.float64()),
        ("level", pa.string()),
        ("queue", pa.string()),
        ("cohort", pa.string()),
        ("used", pa.float64()),
        ("nominal", pa.float64()),
        ("borrowed", pa.float64()),
        ("lent", pa.float64()),
    ]
)


def _last_per_step(group: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Mask of the entries (sorted by group, then in time order) that are the last of their
    (group, time)."""
    last = np.ones(len(group), dtype=bool)
    last[:-1] = (group[1:] != group[:-1]) | (times[1:] != times[:-1])
    return last


def _changed(group: np.ndarray, *values: np.ndarray) -> np.ndarray:
    """Mask of the entries (sorted by group) that start their group or differ from the entry
    before in some value."""
    keep = np.ones(len(group), dtype=bool)
    keep[1:] = group[1:] != group[:-1]
    for v in values:
        keep[1:] |= v[1:] != v[:-1]
    return keep


def quota_series(stage: AdmissionStage, tenants: dict[str, dict[str, Any]]) -> pa.Table:
    """The rows of the module docstring for ``stage``'s run; ``tenants`` is the run's
    per-queue summary (for each queue's ``nominal_gpus``). Time and work grow with the number
    of quota changes, not with queues × changes."""
    names = stage.names
    n = len(names)
    change = stage.change_array()
    if not len(change):
        return SCHEMA.empty_table()
    quota = stage.admission.quota
    # Every queue starts at zero at the first change, so that each has a first row.
    start = np.zeros((n, 4))
    start[:, 0], start[:, 1] = change[0, 0], np.arange(n)
    change = np.concatenate([start, change])
    t, cq, used, borrowed = change[:, 0], change[:, 1].astype(np.int64), change[:, 2], change[:, 3]
    nominal = np.array([float(tenants[name]["nominal_gpus"]) for name in names])
    root = np.array(quota.root[:n])
    # Each queue's cohort tree (its root's index), -1 for a queue without a cohort.
    cohort_of = np.array([r if quota.parent[i] is not None else -1 for i, r in enumerate(root)])

    order = group_order(cq, n)
    q_cq, q_t, q_u, q_b = cq[order], t[order], used[order], borrowed[order]
    # Each change's difference to the queue's value before, summed per tree in time order.
    du, db = np.diff(q_u, prepend=0.0), np.diff(q_b, prepend=0.0)
    first = _changed(q_cq)
    du[first], db[first] = q_u[first], q_b[first]
    last = _last_per_step(q_cq, q_t)
    q_cq, q_t, q_u, q_b = q_cq[last], q_t[last], q_u[last], q_b[last]
    keep = _changed(q_cq, q_u, q_b)
    # Rows as arrays; names as indices into quota.names (ClusterQueues, then cohorts).
    time, name, cohort = [q_t[keep]], [q_cq[keep]], [cohort_of[q_cq[keep]]]
    rows_used, rows_nominal, rows_borrowed = [q_u[keep]], [nominal[q_cq[keep]]], [q_b[keep]]
    rows_lent = [np.full(int(keep.sum()), np.nan)]

    delta_u, delta_b = np.empty(len(order)), np.empty(len(order))
    delta_u[order], delta_b[order] = du, db
    pooled = np.flatnonzero(cohort_of[cq] >= 0)
    if len(pooled):
        tree = root[cq[pooled]]
        by_tree = pooled[group_order(tree, len(quota.names))]
        c_tree = root[cq[by_tree]]
        c_t = t[by_tree]
        starts = _changed(c_tree)
        c_u = _group_cumsum(delta_u[by_tree], starts)
        c_b = _group_cumsum(delta_b[by_tree], starts)
        last = _last_per_step(c_tree, c_t)
        c_tree, c_t, c_u, c_b = c_tree[last], c_t[last], c_u[last], c_b[last]
        # Sums of float steps: snap the rounding residue so unchanged totals compare equal.
        c_u, c_b = np.round(c_u, 9), np.round(c_b, 9)
        keep = _changed(c_tree, c_u, c_b)
        tree_nominal = np.bincount(root, weights=nominal, minlength=len(quota.names))
        c_n = tree_nominal[c_tree[keep]]
        c_u, c_b = c_u[keep], c_b[keep]
        time.append(c_t[keep])
        name.append(c_tree[keep])
        cohort.append(c_tree[keep])
        rows_used.append(c_u)
        rows_nominal.append(c_n)
        rows_borrowed.append(c_b)
        rows_lent.append(np.minimum(c_b, np.maximum(0.0, c_n - c_u + c_b)))
    all_t = np.concatenate(time)
    rank = np.argsort(all_t, kind="stable")
    name_at = np.concatenate(name)[rank]
    cohort_at = np.concatenate(cohort)[rank]
    lent = np.concatenate(rows_lent)[rank]
    is_queue = np.isnan(lent)
    names_arr = pa.array(quota.names, pa.string())
    return pa.table(
        {
            "time": all_t[rank],
            "level": pa.array([QUEUE, COHORT], pa.string()).take((~is_queue).astype(np.int8)),
            "queue": names_arr.take(pa.array(name_at)),
            "cohort": names_arr.take(pa.array(np.maximum(cohort_at, 0), mask=cohort_at < 0)),
            "used": np.concatenate(rows_used)[rank],
            "nominal": np.concatenate(rows_nominal)[rank],
            "borrowed": np.concatenate(rows_borrowed)[rank],
            "lent": pa.array(np.where(is_queue, 0.0, lent), mask=is_queue),
        },
        schema=SCHEMA,
    )


def _group_cumsum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Running sums of ``values`` restarting at every ``starts`` entry."""
    total = np.cumsum(values)
    start_at = np.maximum.accumulate(np.where(starts, np.arange(len(values)), 0))
    sums: np.ndarray = total - (total - values)[start_at]
    return sums


def queue_steps(series: pa.Table, queue: str, end: float) -> dict[str, np.ndarray]:
    """ClusterQueue ``queue``'s step series from ``tenants.parquet``, its last value held to
    ``end``: arrays ``time``, ``used``, ``borrowed``, ``lent`` of equal length (for
    ``where="post"``). ``lent`` is its tree's lent split in proportion to unused nominal
    quota at every change of either (0 for a queue without a cohort)."""

    def rows(level: str, name: str) -> pa.Table:
        return series.filter(
            pc.and_(pc.equal(series.column("level"), level), pc.equal(series.column("queue"), name))
        )

    mine = rows(QUEUE, queue)
    q_t = mine.column("time").to_numpy()
    q_u = mine.column("used").to_numpy()
    q_b = mine.column("borrowed").to_numpy()
    q_n = mine.column("nominal").to_numpy()
    cohort = mine.column("cohort")[0].as_py() if len(mine) else None
    if cohort is None:
        times, u, b, lent = q_t, q_u, q_b, np.zeros(len(q_t))
    else:
        tree = rows(COHORT, cohort)
        c_t = tree.column("time").to_numpy()
        times = np.union1d(q_t, c_t)
        qi = np.searchsorted(q_t, times, side="right") - 1
        ci = np.searchsorted(c_t, times, side="right") - 1
        u = np.where(qi >= 0, q_u[qi], 0.0)
        b = np.where(qi >= 0, q_b[qi], 0.0)
        nominal = q_n[0]
        unused = nominal - (u - b)
        c = {k: tree.column(k).to_numpy()[ci] for k in ("used", "nominal", "borrowed", "lent")}
        spare = c["nominal"] - c["used"] + c["borrowed"]
        with np.errstate(invalid="ignore", divide="ignore"):
            lent = np.where((ci >= 0) & (spare > 0), c["lent"] * unused / spare, 0.0)
    out = {"time": np.append(times, end)}
    for key, values in (("used", u), ("borrowed", b), ("lent", lent)):
        out[key] = np.append(values, values[-1] if len(values) else 0.0)
    return out
