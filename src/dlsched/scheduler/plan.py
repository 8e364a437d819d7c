"""Decisions as data: what one scheduling cycle wants done. A plan never mutates anything.

A plan is the one kind of decision of dlsched: the simulator applies it to its cluster state on
a simulated clock and the live service hands it to a back end. Every job kind (rigid, elastic,
parameter-server) is started, preempted and resized through it. Plans and their entries are
named tuples: immutable, and cheap to build on the simulator's hot path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from dlsched.cluster.state import Placement, Split
from dlsched.scheduler.view import JobView


@dataclass(frozen=True, slots=True)
class JobConfig:
    """How a job of a resizable kind runs on its GPUs beyond the placement itself (an elastic
    job's batch split, a parameter-server job's tasks per node). Subclassed per job kind; a
    rigid job has none."""


class Start(NamedTuple):
    """Start (or resume) ``job`` on ``placement``, configured by ``config`` (None: as the job
    asked); ``split`` gives the CPUs and memory per placement entry when they are not in
    proportion to the GPUs there (see :data:`dlsched.cluster.state.Split`). With ``partner``
    the job time-shares the partner's GPUs (``placement`` is the partner's; both run slower as
    the run's interference model says, or at ``speeds``, this job's then the partner's, when
    the scheduler decided them; see :mod:`dlsched.scheduler.colocation`)."""

    job: JobView
    placement: Placement
    config: JobConfig | None = None
    split: Split | None = None
    partner: JobView | None = None
    speeds: tuple[float, float] | None = None


class Resize(NamedTuple):
    """Move a running ``job`` to ``placement`` with ``config``. A resize whose placement equals
    the job's current one changes only its configuration (e.g. the batch size): no restart."""

    job: JobView
    placement: Placement
    config: JobConfig | None = None
    split: Split | None = None


class Plan(NamedTuple):
    """The outcome of a cycle for one pool. Preemptions are applied first, then resizes (all
    resized jobs release their old resources before any takes new ones), then starts: the
    placements assume the resources given up before them are free. ``wake_at`` asks for
    another cycle at that time even if no event happens (e.g. a job crossing a priority
    threshold)."""

    starts: tuple[Start, ...] = ()
    preempts: tuple[JobView, ...] = ()
    wake_at: float | None = None
    resizes: tuple[Resize, ...] = ()
    declines: tuple[tuple[JobView, str], ...] = ()
    """Waiting jobs the policy's admission control refuses for good, with the reason: they
    leave the run unfinished (e.g. ElasticFlow declining a job whose deadline it cannot
    meet)."""

    def __bool__(self) -> bool:
        return bool(self.starts or self.preempts or self.resizes or self.declines)


EMPTY_PLAN = Plan()
