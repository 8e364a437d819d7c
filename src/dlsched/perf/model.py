"""Progress models: how fast a job advances on an allocation, one model per job kind.

A job carries ``work`` (a replayed trace job: its run time in seconds at the allocation it asked
for; an elastic job: statistically efficient progress to its last epoch; a parameter-server job:
training samples). The simulator integrates the model's rate over time. A rate holds until the
job's ``boundary`` (an elastic job's next epoch end, or the finish), where the model is asked
again; it is also asked again whenever the job's allocation changes, and for the jobs
:meth:`ProgressModel.affected` names when another job starts or stops (co-located
parameter-server jobs share their machines' links).

Contract: :meth:`ProgressModel.begin` and :meth:`ProgressModel.cross` set ``job.rate`` (> 0,
deterministic) and ``job.boundary`` (``done < boundary <= work``); they never touch the cluster
state or the clock.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from dlsched.sim.job import SimJob

RIGID, ELASTIC, PS = 0, 1, 2
KIND_NAMES = ("rigid", "elastic", "ps")
"""Job kinds by index: replayed trace jobs, elastic (application-described) jobs and
parameter-server jobs."""


def kind_index(name: str) -> int:
    """The index of a job kind name; ValueError naming the known ones."""
    try:
        return KIND_NAMES.index(name)
    except ValueError:
        known = ", ".join(KIND_NAMES)
        raise ValueError(f"unknown job kind {name!r}; expected one of {known}") from None


class ProgressModel(ABC):
    """Rates of the jobs of one kind (module docstring)."""

    kind: ClassVar[int]

    @abstractmethod
    def begin(self, job: SimJob, now: float) -> None:
        """``job`` just got its placement and config (a start, resume or resize; ``job.done``
        is its progress so far): set its rate and boundary."""

    def cross(self, job: SimJob, now: float) -> None:  # noqa: B027 (optional hook)
        """``job`` reached its boundary at ``now`` (its progress banked): advance the kind's own
        state and, unless the job is done (``done >= work``), set the next rate and boundary."""

    def moved(self, job: SimJob, now: float) -> None:  # noqa: B027 (optional hook)
        """``job``'s GPUs changed at ``now``: it started, moved or stopped."""

    def stopped(self, job: SimJob, now: float) -> None:  # noqa: B027 (optional hook)
        """``job`` left its GPUs at ``now`` (progress already banked)."""

    def restored(self, job: SimJob, done: float) -> None:  # noqa: B027 (optional hook)
        """``job`` lost its progress beyond ``done`` (a failure rolled it back to a checkpoint)."""

    def affected(self, nodes: Iterable[int]) -> Iterable[SimJob]:
        """Running jobs of this kind whose rate may change because jobs started, stopped or
        moved on ``nodes`` (the driver recomputes them with :meth:`rerate`)."""
        return ()

    def rerate(self, job: SimJob) -> None:
        """Recompute a running ``job``'s rate after a change around it (see :meth:`affected`)."""
        raise AssertionError(f"{type(self).__name__} rates depend on no other job")

    def bank(self, job: SimJob, now: float) -> None:  # noqa: B027 (optional hook)
        """The driver is about to fold ``job``'s progress since its last rate change into
        ``job.done`` (so the model can fold its own counters first)."""


class ReplayModel(ProgressModel):
    """Trace replay: rate 1 at the requested allocation, so a job runs for its trace duration
    wherever it is placed (placement-insensitive, as in the Helios and Philly replays)."""

    kind = RIGID

    def begin(self, job: SimJob, now: float) -> None:
        job.rate = 1.0
        job.boundary = job.work
