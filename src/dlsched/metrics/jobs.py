"""Per-job records of a run and the schema of ``jobs.parquet``. Times a job never had (a
set-aside job's start and end) are nulls."""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import pyarrow as pa

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
    """Column buffers indexed by trace row; rows never admitted stay "set_aside" with a reason."""

    def __init__(self, n: int) -> None:
        # Plain lists: item assignment costs far less than on numpy arrays, once per job.
        nan = math.nan
        self.pool = [-1] * n
        self.gpus = [0] * n
        self.milli = [1000] * n
        self.submit = [nan] * n
        self.start = [nan] * n
        self.end = [nan] * n
        self.run_time = [nan] * n
        self.preemptions = [0] * n
        self.restarts = [0] * n
        self.gpu_s = [0.0] * n
        self.lost_gpu_s = [0.0] * n
        self.finished = [False] * n
        self.reasons: dict[int, str] = {}

    def set_aside(self, row: int, reason: str, gpus: int, submit: float) -> None:
        self.reasons[row] = reason
        self.gpus[row] = gpus
        self.submit[row] = submit

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

    def to_table(self, job_ids: list[str], pool_names: tuple[str, ...]) -> pa.Table:
        n = len(job_ids)
        names = np.array([*pool_names, None], dtype=object)
        finished = np.array(self.finished, dtype=bool)
        status = np.where(finished, FINISHED, SET_ASIDE).astype(object)
        reasons = [self.reasons.get(i) for i in range(n)] if self.reasons else [None] * n
        submit = np.array(self.submit, dtype=np.float64)
        start = np.array(self.start, dtype=np.float64)
        end = np.array(self.end, dtype=np.float64)
        return pa.table(
            {
                "job_id": pa.array(job_ids, pa.string()),
                "partition": pa.array(names[np.array(self.pool, dtype=np.int64)], pa.string()),
                "status": pa.array(status, pa.string()),
                "reason": pa.array(reasons, pa.string()),
                "gpus": pa.array(self.gpus, pa.int32()),
                "gpu_milli": pa.array(self.milli, pa.int32()),
                "submit_s": submit,
                "first_start_s": pa.array(start, from_pandas=True),
                "end_s": pa.array(end, from_pandas=True),
                "queue_s": pa.array(start - submit, from_pandas=True),
                "jct_s": pa.array(end - submit, from_pandas=True),
                "run_time_s": pa.array(self.run_time, pa.float64(), from_pandas=True),
                "preemptions": pa.array(self.preemptions, pa.int32()),
                "restarts": pa.array(self.restarts, pa.int32()),
                "gpu_seconds": pa.array(self.gpu_s, pa.float64()),
                "lost_gpu_seconds": pa.array(self.lost_gpu_s, pa.float64()),
            },
            schema=JOBS_SCHEMA,
        )
