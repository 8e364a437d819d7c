"""The reactive baseline: power off any node that has been idle for ``idle_timeout_s``; the
simulator wakes nodes on demand. No forecast, no spare buffer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dlsched.power.manager import PowerManager, PowerSnapshot


@dataclass
class Reactive(PowerManager):
    """Checks every ``check_s`` seconds; a node idle for ``idle_timeout_s`` or longer (and
    offered as eligible) is powered off."""

    name = "reactive"
    description = "power off nodes idle longer than a timeout, wake on demand"
    idle_timeout_s: float = 1800.0
    check_s: float = 60.0

    def __post_init__(self) -> None:
        if self.idle_timeout_s < 0 or self.check_s <= 0:
            raise ValueError(
                "idle_timeout_s must be >= 0 and check_s > 0, got "
                f"{self.idle_timeout_s} and {self.check_s}"
            )

    @property
    def interval_s(self) -> float:
        return self.check_s

    def decide(self, snapshot: PowerSnapshot) -> Sequence[int]:
        limit = snapshot.now - self.idle_timeout_s
        return [
            node
            for node, since in zip(snapshot.eligible, snapshot.idle_since, strict=True)
            if since <= limit
        ]
