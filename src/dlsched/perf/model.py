"""Performance-model interface: how fast a job progresses on an allocation.

A job carries ``work`` (for a replayed trace: its run time in seconds at the allocation it asked
for). ``rate(job, placement)`` is work per second on ``placement``; the simulator integrates it
and re-plans the finish whenever the allocation changes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from dlsched.cluster.state import ClusterState, Placement
from dlsched.scheduler.view import JobView


class PerfModel(ABC):
    """Maps a job and an allocation to a progress rate (work units per second, > 0)."""

    name: ClassVar[str]

    @abstractmethod
    def rate(self, job: JobView, placement: Placement, state: ClusterState) -> float:
        """Work per second for ``job`` on ``placement``. Must be positive and deterministic."""


class ReplayModel(PerfModel):
    """Trace replay: rate 1 at the requested allocation, so a job runs for its trace duration
    wherever it is placed (placement-insensitive, as in the Helios and Philly replays)."""

    name = "replay"

    def rate(self, job: JobView, placement: Placement, state: ClusterState) -> float:
        return 1.0
