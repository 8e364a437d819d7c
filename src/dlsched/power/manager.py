"""The node power manager interface of the simulator.

A manager decides, every ``interval_s`` of simulated time, which idle nodes to power off. It
never wakes nodes itself: the simulator wakes powered-off nodes of a partition as soon as its
queued jobs need them (:mod:`dlsched.sim.power_states`), and tells the manager. Managers only
ever see the cluster through a :class:`PowerSnapshot`, so they cannot break an invariant: the
simulator powers off only the nodes it offered as ``eligible``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class PowerSnapshot:
    """The cluster as a power manager sees it at one decision.

    ``step`` counts decisions from 0 (one every ``interval_s`` from the first submission).
    ``busy_nodes``: powered nodes holding at least one job; ``powered_nodes``: nodes on or
    booting (failed ones excluded); ``total_nodes``: nodes not failed. ``eligible`` lists the
    nodes that may be powered off now — on, idle, not failed, in a partition with no queued
    job — in the order the simulator prefers to power them off (highest index first, drawn
    from the partition with the most idle powered nodes). ``idle_since[k]`` is when
    ``eligible[k]`` last became idle."""

    now: float
    step: int
    busy_nodes: int
    powered_nodes: int
    total_nodes: int
    eligible: Sequence[int]
    idle_since: Sequence[float]


class PowerManager(ABC):
    """A plugin that powers off idle nodes (see the module docstring). Subclasses are
    dataclasses whose init fields are their text-settable options; ``name`` registers them."""

    name: ClassVar[str]
    description: ClassVar[str] = ""

    @property
    @abstractmethod
    def interval_s(self) -> float:
        """Simulated seconds between two decisions."""

    def bind(self, start_s: float, origin_unix: float | None, seed: int) -> None:  # noqa: B027
        """Called once before the run: the first decision is at ``start_s`` (simulated
        seconds); ``origin_unix`` is the wall-clock time of simulated time 0 when known."""

    @abstractmethod
    def decide(self, snapshot: PowerSnapshot) -> Sequence[int]:
        """Nodes to power off now, each taken from ``snapshot.eligible``."""

    def on_wake(self, now: float, nodes: int) -> None:  # noqa: B027
        """``nodes`` powered-off nodes were woken at ``now`` because queued jobs needed them."""

    def report(self) -> dict[str, object]:
        """Figures about the manager's own work for the run summary (JSON-ready)."""
        return {}
