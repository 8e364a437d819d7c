"""Per-job records of a run and the schema of ``jobs.parquet``. Times a job never had (a
set-aside job's start and end) are nulls; so are ``cluster_queue`` and ``admission_wait_s``
(its first admission less its submission) in a run without queues.

Deadlines (trace schema 3): ``deadline`` is the trace's, in seconds on the ``submit_s`` clock
(null: best effort, as is a NaN). ``declined`` says that the job's policy refused it at
admission (:meth:`JobRecords.decline`); such a job is also ``set_aside``, with the policy's
reason. ``deadline_met`` is null for a job without a deadline, else True iff the job finished
and ``end_s <= deadline`` (False for a declined, set-aside or unfinished job);
``tardiness_s`` is ``max(0, end_s - deadline)`` for a finished job with a deadline, null
otherwise.

Co-location: ``colocated_s`` is the time a job time-shared its GPUs with another job and
``interference_s`` the progress it lost to that (shared time × (1 − its co-located speed)), in
seconds; both null in a run whose policy does not co-locate. A GPU two jobs time-share is charged
half to each in ``gpu_seconds``."""

from __future__ import annotations

import math
from array import array
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dlsched.cluster.state import Demand

JOBS_SCHEMA = pa.schema(
    [
        pa.field("job_id", pa.string()),
        pa.field("partition", pa.string()),
        pa.field("status", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("gpus", pa.int32()),
        pa.field("gpu_milli", pa.int32()),
        pa.field("submit_s", pa.float64()),
        pa.field("first_start_s", pa.float64()),
        pa.field("end_s", pa.float64()),
        pa.field("queue_s", pa.float64()),
        pa.field("jct_s", pa.float64()),
        pa.field("run_time_s", pa.float64()),
        pa.field("preemptions", pa.int32()),
        pa.field("restarts", pa.int32()),
        pa.field("gpu_seconds", pa.float64()),
        pa.field("lost_gpu_seconds", pa.float64()),
        pa.field("cluster_queue", pa.string()),
        pa.field("admission_wait_s", pa.float64()),
        pa.field("declined", pa.bool_()),
        pa.field("deadline", pa.float64()),
        pa.field("deadline_met", pa.bool_()),
        pa.field("tardiness_s", pa.float64()),
        pa.field("colocated_s", pa.float64()),
        pa.field("interference_s", pa.float64()),
    ]
)
FINISHED, SET_ASIDE = "finished", "set_aside"


class FinishedJob(Protocol):
    row: int
    pool: int
    gpus: int
    submit_time: float
    first_start: float
    end: float
    work: float
    duration: float | None
    preemptions: int
    restarts: int
    held_gpu_s: float
    lost_gpu_s: float

    @property
    def demand(self) -> Demand: ...


class JobRecords:
    """Column buffers indexed by trace row; rows never admitted stay "set_aside" with a reason
    (a declined one's is its policy's). A row's last record stands: a row finished after it was
    set aside or declined is finished, not declined."""

    def __init__(self, n: int) -> None:
        # Unboxed arrays: a job's figures are stored as machine numbers, so a million finished
        # jobs keep no million float objects alive (item assignment costs about what a list's
        # does; numpy's costs far more, once per job).
        nan = math.nan
        self.pool = array("q", [-1]) * n
        self.gpus = array("q", [0]) * n
        self.milli = array("q", [1000]) * n
        self.submit = array("d", [nan]) * n
        self.start = array("d", [nan]) * n
        self.end = array("d", [nan]) * n
        self.run_time = array("d", [nan]) * n
        self.preemptions = array("q", [0]) * n
        self.restarts = array("q", [0]) * n
        self.gpu_s = array("d", [0.0]) * n
        self.lost_gpu_s = array("d", [0.0]) * n
        self.finished = bytearray(n)
        self.declined = bytearray(n)
        self.admitted = array("d", [nan]) * n
        self.reasons: dict[int, str] = {}
        self.queues: tuple[list[int], list[str]] | None = None
        """With queues: each row's ClusterQueue (negative: none) and the queues' names."""

    def set_aside(self, row: int, reason: str, gpus: int, submit: float) -> None:
        """Record a job that will never run: it cannot (``reason`` says why), not declined."""
        self.reasons[row] = reason
        self.gpus[row] = gpus
        self.submit[row] = submit
        self.declined[row] = False

    def decline(self, row: int, reason: str, gpus: int, submit: float) -> None:
        """Record a job its policy's admission control refused (``reason``: why, e.g. that it
        cannot meet its deadline): set aside as :meth:`set_aside` records it, and declined. A
        declined job with a deadline counts as having missed it."""
        self.set_aside(row, reason, gpus, submit)
        self.declined[row] = True

    def finish(self, job: FinishedJob) -> None:
        """Record a finished job; its run time is its ``duration`` (the simulator sets it for
        jobs whose work is not in seconds), else its work."""
        r = job.row
        self.pool[r] = job.pool
        self.gpus[r] = job.gpus
        self.milli[r] = job.demand.milli
        self.submit[r] = job.submit_time
        self.start[r] = job.first_start
        self.end[r] = job.end
        self.run_time[r] = job.duration if job.duration is not None else job.work
        self.preemptions[r] = job.preemptions
        self.restarts[r] = job.restarts
        self.gpu_s[r] = job.held_gpu_s
        self.lost_gpu_s[r] = job.lost_gpu_s
        self.finished[r] = True
        self.declined[r] = False

    def to_table(
        self,
        job_ids: list[str],
        pool_names: tuple[str, ...],
        deadlines: pa.Array | pa.ChunkedArray | None = None,
        colocation: tuple[dict[int, float], dict[int, float]] | None = None,
    ) -> pa.Table:
        """The jobs table (:data:`JOBS_SCHEMA`), one row per trace row. ``deadlines`` is the
        trace's ``deadline`` column (one value per row; null or NaN: none); without it no job
        has a deadline. ValueError when its length is not the number of rows. ``colocation``:
        seconds shared and lost to interference by row (a row absent: 0), in a run that
        co-locates."""
        n = len(job_ids)
        names = np.array([*pool_names, None], dtype=object)
        finished = np.frombuffer(self.finished, dtype=np.uint8).astype(bool)
        status = np.where(finished, FINISHED, SET_ASIDE).astype(object)
        reasons = [self.reasons.get(i) for i in range(n)] if self.reasons else [None] * n
        submit, start, end = (_numbers(c) for c in (self.submit, self.start, self.end))
        if self.queues is None:
            cluster_queue = pa.nulls(n, pa.string())
            wait = pa.nulls(n, pa.float64())
        else:
            rows, queue_names = self.queues
            labels = np.array([*queue_names, None], dtype=object)
            at = np.asarray(rows, dtype=np.int64)
            # Negative: the row maps to no ClusterQueue (it was set aside).
            at = np.where(at >= 0, at, len(queue_names))
            cluster_queue = pa.array(labels[at], pa.string())
            wait = pa.array(_numbers(self.admitted) - submit, from_pandas=True)
        declined = np.frombuffer(self.declined, dtype=np.uint8).astype(bool) & ~finished
        deadline, met, tardiness = _deadline_columns(deadlines, n, finished, end)
        if colocation is None:
            shared: pa.Array = pa.nulls(n, pa.float64())
            lost: pa.Array = pa.nulls(n, pa.float64())
        else:
            shared, lost = (
                pa.array([by_row.get(i, 0.0) for i in range(n)], pa.float64())
                for by_row in colocation
            )
        return pa.table(
            {
                "job_id": pa.array(job_ids, pa.string()),
                "partition": pa.array(names[_numbers(self.pool)], pa.string()),
                "status": pa.array(status, pa.string()),
                "reason": pa.array(reasons, pa.string()),
                "gpus": pa.array(_numbers(self.gpus), pa.int32()),
                "gpu_milli": pa.array(_numbers(self.milli), pa.int32()),
                "submit_s": submit,
                "first_start_s": pa.array(start, from_pandas=True),
                "end_s": pa.array(end, from_pandas=True),
                "queue_s": pa.array(start - submit, from_pandas=True),
                "jct_s": pa.array(end - submit, from_pandas=True),
                "run_time_s": pa.array(_numbers(self.run_time), from_pandas=True),
                "preemptions": pa.array(_numbers(self.preemptions), pa.int32()),
                "restarts": pa.array(_numbers(self.restarts), pa.int32()),
                "gpu_seconds": pa.array(_numbers(self.gpu_s)),
                "lost_gpu_seconds": pa.array(_numbers(self.lost_gpu_s)),
                "cluster_queue": cluster_queue,
                "admission_wait_s": wait,
                "declined": pa.array(declined, pa.bool_()),
                "deadline": deadline,
                "deadline_met": met,
                "tardiness_s": tardiness,
                "colocated_s": shared,
                "interference_s": lost,
            },
            schema=JOBS_SCHEMA,
        )


def _deadline_columns(
    deadlines: pa.Array | pa.ChunkedArray | None, n: int, finished: np.ndarray, end: np.ndarray
) -> tuple[pa.Array, pa.Array, pa.Array]:
    """``deadline``, ``deadline_met`` and ``tardiness_s`` of the jobs table (module
    docstring) from the trace's deadlines and which jobs finished when."""
    if deadlines is None:
        return pa.nulls(n, pa.float64()), pa.nulls(n, pa.bool_()), pa.nulls(n, pa.float64())
    if len(deadlines) != n:
        raise ValueError(f"{len(deadlines)} deadlines for {n} jobs")
    column = deadlines.combine_chunks() if isinstance(deadlines, pa.ChunkedArray) else deadlines
    values = np.asarray(
        pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64
    )
    has = ~np.isnan(values)  # nulls read as NaN
    with np.errstate(invalid="ignore"):
        late_by = end - values
    timed = has & finished & ~np.isnan(late_by)
    met = np.where(timed, late_by <= 0, False)
    tardiness = np.where(timed, np.maximum(late_by, 0.0), np.nan)
    return (
        pa.array(np.where(has, values, np.nan), pa.float64(), from_pandas=True),
        pa.array(met, pa.bool_(), mask=~has),
        pa.array(tardiness, pa.float64(), from_pandas=True),
    )


def _numbers(column: array[float] | array[int]) -> np.ndarray:
    """A copy of a record column as a numpy array (int64 or float64)."""
    return np.frombuffer(column, dtype=np.int64 if column.typecode == "q" else np.float64).copy()
