"""Run-time estimates for live jobs that carry none (QSSF needs one for every job).

The same fallback chain as the Helios history estimator, restated for a live service (only
finished jobs are known): the mean run time of the user's completed jobs of the same name, else
of anyone's jobs of that name, else of the user's jobs, else of all jobs, else a default.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

DEFAULT_ESTIMATE_S = 3600.0
"""The estimate when nothing has finished yet (one hour)."""


class DurationHistory:
    """Running means of completed jobs' run times, by (user, name), name, user and overall."""

    def __init__(self, finished: Iterable[tuple[str, str, float]] = ()) -> None:
        self._sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
        for name, user, duration in finished:
            self.add(name, user, duration)

    def add(self, name: str, user: str, duration: float) -> None:
        """A job ``name`` of ``user`` completed after ``duration`` seconds."""
        for key in (("un", f"{user}\0{name}"), ("n", name), ("u", user), ("*", "")):
            acc = self._sums[key]
            acc[0] += duration
            acc[1] += 1

    def estimate(self, name: str, user: str) -> float:
        """The estimate for a new job (see the module docstring)."""
        for key in (("un", f"{user}\0{name}"), ("n", name), ("u", user), ("*", "")):
            acc = self._sums.get(key)
            if acc is not None and acc[1] > 0 and acc[0] > 0:
                return acc[0] / acc[1]
        return DEFAULT_ESTIMATE_S
