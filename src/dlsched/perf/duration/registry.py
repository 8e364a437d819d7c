"""Duration estimators by name (see :mod:`dlsched.registry`)."""

from __future__ import annotations

from functools import cache

from dlsched.perf.duration.base import DurationEstimator
from dlsched.registry import discover, lookup


@cache
def estimators() -> dict[str, type[DurationEstimator]]:
    """All estimator classes by name."""
    return discover("dlsched.perf.duration", DurationEstimator)  # type: ignore[type-abstract]


def create_estimator(name: str, seed: int = 0) -> DurationEstimator:
    """An estimator instance by name; every estimator takes a ``seed``."""
    return lookup(estimators(), name, "estimator")(seed=seed)  # type: ignore[call-arg]
