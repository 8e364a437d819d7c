"""The duration-estimator interface, shared by the simulator (QSSF) and ``dlsched predict``.

An estimator is bound to one trace (``bind``), then queried online in submit order:
``estimate(row, now)`` predicts the run time (seconds, > 0) of trace row ``row`` using only what
was known at ``now`` — the job's own metadata and the jobs that finished before ``now``, which the
caller reports through ``observe(row, duration, now)`` as they finish (a rolling update).

Contract: ``estimate`` never reads the job's own true duration, except for estimators that are
oracles by definition (the noisy oracle says so in its name). Estimators are deterministic for a
given seed and order of calls.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from dlsched.trace.schema import Trace


class DurationEstimator(ABC):
    """Predicts job run times online; see the module docstring for the protocol."""

    name: ClassVar[str]

    @abstractmethod
    def bind(self, trace: Trace) -> None:
        """Attach to ``trace`` (read its metadata columns). Called once before any query."""

    @abstractmethod
    def estimate(self, row: int, now: float) -> float:
        """Predicted run time in seconds (> 0) of trace row ``row``, as known at ``now``."""

    def observe(self, row: int, duration: float, now: float) -> None:  # noqa: B027
        """Row ``row`` finished at ``now`` after running ``duration`` seconds. Default: ignore
        (estimators that learn from history override it)."""
