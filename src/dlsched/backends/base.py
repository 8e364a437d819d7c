"""The back-end interface: where the live service's jobs really run.

A back end is asynchronous and eventually consistent, in the manner of a cloud provider API:

- :meth:`Backend.launch` asks for a job process and returns at once. It is idempotent by
  ``request_id``: launching a request the back end already knows (running, or exited and not
  yet forgotten) does nothing, so a driver that crashed between deciding and launching can
  simply launch again.
- :meth:`Backend.observe` returns what the back end currently knows of every request it holds.
  A request just launched may still show as ``STARTING`` (or be absent for a moment); an exited
  one stays ``EXITED`` until the driver calls :meth:`Backend.forget` after storing the outcome.
- :meth:`Backend.terminate` asks a request to stop: a graceful signal now (the job checkpoints
  and exits 75) and a forced kill once ``grace_s`` has passed. Idempotent; terminating an
  unknown or exited request does nothing.
- Failures are never raised from these calls; they are polled with :meth:`Backend.errors` as
  typed :class:`BackendError` records (a launch that failed also shows as ``EXITED`` with no
  exit code).
- :meth:`Backend.recover` is called once, after a driver restart, with the requests the driver
  believes are live: the back end adopts the ones still running (or exited while the driver was
  down) and cleans up any other process it started for this driver (orphans).
- :meth:`Backend.probe` says what became of an attempt another driver (a service whose lease
  was taken over) started: still alive, exited (with its code, read back from where its
  wrapper left it), or gone for good. It answers ``GONE`` only when the attempt can no longer
  start either: its process is absent and its launch deadline (``PriorAttempt.launch_by``) has
  passed; otherwise ``UNKNOWN``. A driver re-runs a taken-over job only after ``EXITED`` or
  ``GONE``.
- A driver never calls :meth:`Backend.launch` for a request after its ``launch_by``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

EXIT_PREEMPTED = 75
"""The exit code of a job that checkpointed on request and can be resumed (EX_TEMPFAIL)."""

SANDBOX_BUSY = "sandbox_busy"
"""Error kind of a launch refused because every sandbox user is another tenant's: the job
waits for one (see :mod:`dlsched.backends.sandbox`)."""

RESUMABLE_ERRORS = frozenset({"node_lost", "node_unavailable", "requeued", SANDBOX_BUSY})
"""Error kinds that say the job's node failed it, not the job: the driver queues it again (it
resumes from its checkpoint) instead of failing it."""


class ProcState(StrEnum):
    """What the back end knows of one request."""

    STARTING = "STARTING"
    RUNNING = "RUNNING"
    EXITED = "EXITED"


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """Everything a back end needs to run one attempt of a job.

    ``gpu_ids`` maps node name to the GPU indices on that node (the placement); ``env`` holds
    extra environment variables. ``expected_duration_s`` is the submitter's estimate (a fake back
    end runs the job for that long). ``tenant`` is the tenant that submitted the job (None: the
    admin, or a service without tenants); a sandboxing back end never runs two tenants' jobs
    as the same user at once."""

    request_id: str
    job_id: str
    command: tuple[str, ...]
    gpu_ids: Mapping[str, tuple[int, ...]]
    batch_size: int | None = None
    expected_duration_s: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    tenant: str | None = None
    launch_by: float | None = None
    """The latest time (the driver's clock) at which this attempt may start (None: any)."""

    @property
    def num_gpus(self) -> int:
        return sum(len(g) for g in self.gpu_ids.values())


@dataclass(frozen=True, slots=True)
class Observation:
    """The state of one request. ``exit_code`` is set once ``EXITED`` (None: killed by a
    signal or never started); ``pid``/``start_time`` identify the process (local back end);
    ``status`` is the job's last reported status (progress, throughput), if any."""

    request_id: str
    state: ProcState
    exit_code: int | None = None
    pid: int | None = None
    start_time: float | None = None
    status: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class BackendError:
    """A failure the back end met while serving ``request_id`` (``kind`` is a short tag such
    as ``launch_failed``; ``message`` says what happened)."""

    request_id: str
    kind: str
    message: str
    time: float


@dataclass(frozen=True, slots=True)
class KnownRequest:
    """A request the driver believes is live, with the process identity it recorded (if any)."""

    request: LaunchRequest
    pid: int | None = None
    start_time: float | None = None


LAUNCH_MARGIN_S = 1.0
"""How long after an attempt's launch deadline :meth:`Backend.probe` still answers ``UNKNOWN``
for an absent process: clocks and the driver's own last step lag by less than this."""


class AttemptFate(StrEnum):
    """What :meth:`Backend.probe` found of an earlier attempt."""

    ALIVE = "ALIVE"
    """Its process (job, actor) still runs: wait."""
    EXITED = "EXITED"
    """It ended; :attr:`AttemptCheck.exit_code` is its own exit code (None if unreadable)."""
    GONE = "GONE"
    """No process, no exit code, and it can no longer be launched: it will never run."""
    UNKNOWN = "UNKNOWN"
    """Not known yet (its deadline has not passed, or the back end cannot be asked now)."""


@dataclass(frozen=True, slots=True)
class PriorAttempt:
    """An attempt started by another driver ``owner`` (its back-end instance), whose back end
    keeps its files under ``owner_home`` (None: unknown), with the process identity and launch
    deadline the store recorded."""

    request: LaunchRequest
    owner: str
    owner_home: str | None
    pid: int | None
    pid_start: float | None
    launch_by: float | None


@dataclass(frozen=True, slots=True)
class AttemptCheck:
    """The answer of :meth:`Backend.probe`."""

    fate: AttemptFate
    exit_code: int | None = None


def deadline_passed(attempt: PriorAttempt, now: float) -> bool:
    """Whether ``attempt`` can no longer be launched at ``now`` (its deadline and
    :data:`LAUNCH_MARGIN_S` are past; never for an attempt without a deadline)."""
    return attempt.launch_by is not None and now > attempt.launch_by + LAUNCH_MARGIN_S


class Backend(ABC):
    """Runs job processes for one driver (see the module docstring for the contract)."""

    name: str = "backend"

    @abstractmethod
    def launch(self, request: LaunchRequest) -> None:
        """Start ``request`` unless it is already known (idempotent, asynchronous)."""

    @abstractmethod
    def terminate(self, request_id: str, grace_s: float) -> None:
        """Graceful stop now, forced kill after ``grace_s`` seconds (idempotent)."""

    @abstractmethod
    def observe(self) -> dict[str, Observation]:
        """Every known request by id, with its current state."""

    @abstractmethod
    def forget(self, request_id: str) -> None:
        """Drop an exited request (the driver stored its outcome)."""

    @abstractmethod
    def errors(self) -> list[BackendError]:
        """Failures since the last call (each reported once)."""

    @abstractmethod
    def recover(self, known: Mapping[str, KnownRequest]) -> None:
        """After a driver restart: adopt the live or exited requests of ``known`` and clean up
        every other process this driver started before (see the module docstring)."""

    @abstractmethod
    def probe(self, attempt: PriorAttempt) -> AttemptCheck:
        """What became of ``attempt``, started by another driver (see the module docstring):
        never ``GONE`` while it might still run or start."""

    @property
    def location(self) -> str | None:
        """Where this back end leaves its attempts' files for another driver's :meth:`probe`
        (None: nowhere another driver can read)."""
        return None

    def unavailable_nodes(self) -> frozenset[str]:
        """Nodes that take no new job now (lost, drained, down); the driver keeps them out of
        its plans until they are back. Default: none."""
        return frozenset()

    def close(self) -> None:  # noqa: B027
        """Release resources. Job processes keep running (a restarted driver adopts them)."""
