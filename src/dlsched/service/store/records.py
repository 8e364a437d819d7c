"""The live service's job record: one row of the store, and what the API shows of it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

PENDING = "PENDING"
RUNNING = "RUNNING"
PREEMPTING = "PREEMPTING"
COMPLETED = "COMPLETED"
FAILED = "FAILED"
CANCELLED = "CANCELLED"
ORPHAN_CHECK = "ORPHAN_CHECK"
"""Taken over from a service whose lease lapsed, while its attempt may still run: the new owner
(``owner``) asks its back end whether the attempt of ``orphan_of`` is dead before the job may run
again; its GPUs stay held on the previous owner's cluster until then."""
STATES = (PENDING, RUNNING, PREEMPTING, ORPHAN_CHECK, COMPLETED, FAILED, CANCELLED)
ACTIVE = (PENDING, RUNNING, PREEMPTING, ORPHAN_CHECK)
HOLDING = (RUNNING, PREEMPTING)
"""States in which a job holds GPUs (a preempting job holds them until its process exits)."""
FINAL = (COMPLETED, FAILED, CANCELLED)

GpuIds = dict[str, list[int]]


def held_gpus(gpu_ids: GpuIds | None) -> int:
    """How many GPUs ``gpu_ids`` (node → GPU indices) names."""
    return sum(len(g) for g in (gpu_ids or {}).values())


def job_id_of(seq: int) -> str:
    """The public id of the job stored as row ``seq``."""
    return f"j{seq}"


def request_id_of(seq: int, attempt: int) -> str:
    """The back-end request id of attempt ``attempt`` of job row ``seq``."""
    return f"j{seq}.{attempt}"


_JOB_ID = re.compile(r"j[1-9][0-9]{0,17}")
"""A public job id: ``j`` and the row number in ASCII digits, no leading zero, below 10**18
(so it fits the store's 64-bit integers)."""


def seq_of(job_id: str) -> int | None:
    """The row of public id ``job_id``, or None if it is not one (see :data:`_JOB_ID`: other
    digits, such as ``j١``, or a number too large to be a row are not ids)."""
    if _JOB_ID.fullmatch(job_id) is None:
        return None
    return int(job_id[1:])


@dataclass(frozen=True, slots=True)
class NewJob:
    """A validated submission. ``expected_duration_s`` is the submitter's run-time estimate
    (optional; used by duration-aware policies and by the fake back end). ``tenant`` is the
    tenant that submitted it (None: the admin, or a service without tenants); ``queue`` the
    LocalQueue it was submitted to (None: none)."""

    name: str
    user: str
    gpus: int
    command: tuple[str, ...]
    batch_size: int | None = None
    expected_duration_s: float | None = None
    tenant: str | None = None
    queue: str | None = None


@dataclass(frozen=True, slots=True)
class JobRow:
    """A job as stored. ``attempt`` counts launches; the current launch's back-end request id
    is :attr:`request_id`. ``gpus`` is the requested count; ``gpu_ids`` are the GPUs the current
    attempt holds (for an elastic job, the count its policy chose). ``run_start`` is when the
    current run began; ``attained_gpu_s`` sums, over finished runs, the GPUs the run held
    (its ``gpu_ids``) × its seconds. ``pid``/``pid_start`` identify the current process;
    ``owner`` is the id of the service that started the current attempt."""

    seq: int
    name: str
    user: str
    gpus: int
    command: tuple[str, ...]
    batch_size: int | None
    expected_duration_s: float | None
    state: str
    submit_time: float
    start_time: float | None
    run_start: float | None
    end_time: float | None
    restarts: int
    attempt: int
    gpu_ids: GpuIds | None
    pid: int | None
    pid_start: float | None
    attained_gpu_s: float
    progress: float | None
    samples_per_s: float | None
    exit_code: int | None
    reason: str | None
    cancel_requested: bool
    owner: str | None = None
    """The service whose attempt this is (None while pending)."""
    tenant: str | None = None
    """The tenant that submitted the job (None: the admin, or a service without tenants)."""
    queue: str | None = None
    """The LocalQueue the job was submitted to (None: none)."""
    orphan_of: str | None = None
    """In ORPHAN_CHECK: the service whose attempt is being checked (else None)."""
    launch_by: float | None = None
    """The latest time at which the current attempt may still be launched (None: no limit)."""

    @property
    def id(self) -> str:
        return job_id_of(self.seq)

    @property
    def request_id(self) -> str:
        """The back-end request id of the current attempt (``<job id>.<attempt>``)."""
        return request_id_of(self.seq, self.attempt)

    @property
    def gpus_now(self) -> int:
        """The GPUs the job holds now while it holds any (running or preempting), else the
        requested count."""
        held = held_gpus(self.gpu_ids)
        return held if self.state in HOLDING and held else self.gpus

    def to_api(self, priority: int | None = None) -> dict[str, Any]:
        """The contract's job record (``GET /jobs``): ``gpus`` is :attr:`gpus_now` (what an
        elastic job holds now, which its policy may have changed), ``gpus_requested`` the
        submitted count."""
        gpu_ids = self.gpu_ids or {}
        return {
            "id": self.id,
            "name": self.name,
            "user": self.user,
            "tenant": self.tenant,
            "queue": self.queue,
            "state": self.state,
            "gpus": self.gpus_now,
            "gpus_requested": self.gpus,
            "nodes": list(gpu_ids),
            "gpu_ids": gpu_ids,
            "priority": priority,
            "submit_time": self.submit_time,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "restarts": self.restarts,
            "progress": self.progress,
            "samples_per_s": self.samples_per_s,
            "command": list(self.command),
            "batch_size": self.batch_size,
            "exit_code": self.exit_code,
            "reason": self.reason,
        }
