"""Jobs time-sharing GPUs in the simulator: who shares with whom, since when, at what speed.

A co-locating policy starts a job on a running job's GPUs; :class:`Sharing` pairs the two, asks
the interference model for their speeds and has the simulator re-rate both (their finishes are
re-planned). When either stops (finish, preemption, failure), the other returns to its speed
alone. Per job it keeps the seconds spent sharing and the progress lost to interference, the
figures of ``jobs.parquet`` and the summary's ``colocation`` block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from dlsched.perf.interference import InterferenceModel, Workload
from dlsched.scheduler.view import JobView
from dlsched.sim.job import SimJob

SetSpeed = Callable[[SimJob, float, float], None]
"""The simulator's ``_set_speed(job, speed, now)``."""


@dataclass(frozen=True, slots=True)
class SharedSegment:
    """Two jobs (trace rows) time-sharing GPUs of ``placement`` over ``[begin, end)``."""

    rows: tuple[int, int]
    placement: tuple[tuple[int, tuple[int, ...]], ...]
    begin: float
    end: float


class Sharing:
    """Pairs of jobs sharing GPUs (module docstring)."""

    def __init__(
        self, interference: InterferenceModel, table: pa.Table, record_segments: bool
    ) -> None:
        self.interference = interference
        self._application: list[str | None] = table.column("application").to_pylist()
        self._batch: list[int | None] = table.column("batch_size").to_pylist()
        self._amp: list[bool | None] = table.column("amp").to_pylist()
        self._partner: dict[SimJob, SimJob] = {}
        self._since: dict[SimJob, float] = {}
        self._speed: dict[SimJob, float] = {}
        self.shared_s: dict[int, float] = {}
        """Per trace row, seconds spent time-sharing GPUs."""
        self.lost_s: dict[int, float] = {}
        """Per trace row, seconds of progress lost to interference (shared time × (1 − speed))."""
        self.pairs = 0
        self.segments: list[SharedSegment] | None = [] if record_segments else None

    def workload_of(self, job: JobView) -> Workload | None:
        """The workload of a trace job (its model, batch size and precision), if it names one."""
        assert isinstance(job, SimJob)
        row = job.row
        model, batch = self._application[row], self._batch[row]
        if model is None or batch is None:
            return None
        return Workload(model, batch, bool(self._amp[row]))

    def partner(self, job: SimJob) -> SimJob | None:
        return self._partner.get(job)

    def pair(
        self,
        job: SimJob,
        mate: SimJob,
        now: float,
        set_speed: SetSpeed,
        speeds: tuple[float, float] | None = None,
    ) -> None:
        """``job`` has started on ``mate``'s GPUs: both run at ``speeds`` (``job``'s, then
        ``mate``'s) as the scheduler decided them, else as the interference model says."""
        if job.placement != mate.placement or job in self._partner or mate in self._partner:
            raise RuntimeError(f"jobs {job.job_id!r} and {mate.job_id!r} cannot be paired")
        if speeds is None:
            speeds = self.interference.speeds(self.workload_of(job), self.workload_of(mate))
        speed_job, speed_mate = speeds
        if not (0.0 < speed_job <= 1.0 and 0.0 < speed_mate <= 1.0):
            raise ValueError(f"co-located speeds must be in (0, 1], got {speeds}")
        self._partner[job], self._partner[mate] = mate, job
        self.pairs += 1
        for j, speed in ((job, speed_job), (mate, speed_mate)):
            self._since[j] = now
            self._speed[j] = speed
            set_speed(j, speed, now)

    def unpair(self, job: SimJob, now: float) -> SimJob | None:
        """``job`` stops: its partner (returned, to be set back to full speed) if it had one."""
        if not self._partner:
            return None
        mate = self._partner.pop(job, None)
        if mate is None:
            return None
        del self._partner[mate]
        since = self._since.pop(job)
        del self._since[mate]
        span = max(0.0, now - since)
        for j in (job, mate):
            speed = self._speed.pop(j)
            self.shared_s[j.row] = self.shared_s.get(j.row, 0.0) + span
            self.lost_s[j.row] = self.lost_s.get(j.row, 0.0) + span * (1.0 - speed)
            # Each of the two is charged half of the GPUs it held while sharing them.
            j.held_gpu_s -= span * j.gpus / 2
        if self.segments is not None:
            assert job.placement is not None
            self.segments.append(SharedSegment((job.row, mate.row), job.placement, since, now))
        return mate
