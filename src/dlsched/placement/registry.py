"""Placers by name (see :mod:`dlsched.registry`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from dlsched.placement.base import Placer
from dlsched.registry import discover, lookup


@cache
def placers() -> dict[str, type[Placer]]:
    """All placer classes by name."""
    return discover("dlsched.placement", Placer, "dlsched.placers")  # type: ignore[type-abstract]


def create_placer(name: str, seed: int = 0, options: Mapping[str, str] | None = None) -> Placer:
    """A placer instance; seeded placers receive ``seed``. ``options`` not known to the placer
    raise ``ValueError`` naming the first."""
    return lookup(placers(), name, "placement")(seed=seed, options=options)
