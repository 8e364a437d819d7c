"""What policies may see of a job: a read-only view (no copies, no mutation)."""

from __future__ import annotations

from typing import Protocol

from dlsched.cluster.state import Demand, Placement, Split


class JobView(Protocol):
    """A job as the scheduler sees it. ``duration`` is the oracle run time at the requested
    allocation (None when unknown); ``estimate`` is a predictor's estimate, when one was made;
    ``deadline`` the trace's deadline, if any."""

    @property
    def job_id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def submit_time(self) -> float: ...
    @property
    def gpus(self) -> int: ...
    @property
    def demand(self) -> Demand: ...
    @property
    def duration(self) -> float | None: ...
    @property
    def estimate(self) -> float | None: ...
    @property
    def deadline(self) -> float | None:
        """When the job should have finished (absolute seconds on the submit clock); None for a
        best-effort job."""
        ...

    @property
    def pool(self) -> int: ...
    @property
    def running(self) -> bool: ...
    @property
    def placement(self) -> Placement | None: ...
    @property
    def kind(self) -> int:
        """The job kind (:data:`dlsched.perf.model.KIND_NAMES`); 0 for a rigid job."""
        ...

    @property
    def split(self) -> Split | None:
        """CPUs and memory per placement entry when not in proportion to GPUs (else None)."""
        ...

    def attained_service(self, now: float) -> float:
        """GPU-seconds held so far, including the current run."""
        ...

    def remaining_time(self, now: float) -> float:
        """Oracle time still needed at the current (or requested) rate; inf if unknown."""
        ...
