"""Per-job records of a run and the schema of ``jobs.parquet``."""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import pyarrow as pa

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
    def demand(self) -> object: ...


class JobRecords:
    """Column buffers indexed by trace row; rows never admitted stay "set_aside" with a reason."""

    def __init__(self, n: int) -> None:
        nan = math.nan
        self.pool = np.full(n, -1, dtype=np.int32)
        self.gpus = np.zeros(n, dtype=np.int32)
        self.milli = np.full(n, 1000, dtype=np.int32)
        self.submit = np.full(n, nan)
        self.start = np.full(n, nan)
        self.end = np.full(n, nan)
        self.run_time = np.full(n, nan)
        self.preemptions = np.zeros(n, dtype=np.int32)
        self.restarts = np.zeros(n, dtype=np.int32)
        self.gpu_s = np.zeros(n)
        self.lost_gpu_s = np.zeros(n)
        self.finished = np.zeros(n, dtype=bool)
        self.reasons: dict[int, str] = {}

    def set_aside(self, row: int, reason: str, gpus: int, submit: float) -> None:
        self.reasons[row] = reason
        self.gpus[row] = gpus
        self.submit[row] = submit

    def finish(self, job: FinishedJob) -> None:
        r = job.row
        self.pool[r] = job.pool
        self.gpus[r] = job.gpus
        self.milli[r] = getattr(job.demand, "milli", 1000)
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
        status = np.where(self.finished, FINISHED, SET_ASIDE).astype(object)
        reasons = [self.reasons.get(i) for i in range(n)] if self.reasons else [None] * n
        return pa.table(
            {
                "job_id": pa.array(job_ids, pa.string()),
                "partition": pa.array(names[self.pool], pa.string()),
                "status": pa.array(status, pa.string()),
                "reason": pa.array(reasons, pa.string()),
                "gpus": self.gpus,
                "gpu_milli": self.milli,
                "submit_s": self.submit,
                "first_start_s": self.start,
                "end_s": self.end,
                "queue_s": self.start - self.submit,
                "jct_s": self.end - self.submit,
                "run_time_s": self.run_time,
                "preemptions": self.preemptions,
                "restarts": self.restarts,
                "gpu_seconds": self.gpu_s,
                "lost_gpu_seconds": self.lost_gpu_s,
            },
            schema=JOBS_SCHEMA,
        )
