"""Power managers by name (see :mod:`dlsched.registry`)."""

from __future__ import annotations

from functools import cache

from dlsched.power.manager import PowerManager
from dlsched.registry import build, discover, lookup


@cache
def power_managers() -> dict[str, type[PowerManager]]:
    """All power manager classes by name."""
    return discover("dlsched.power.managers", PowerManager, "dlsched.power_managers")  # type: ignore[type-abstract]


def create_power_manager(name: str, options: dict[str, str] | None = None) -> PowerManager:
    """A manager instance from its name and text options; a clear error for unknown names."""
    return build(lookup(power_managers(), name, "power manager"), options or {})
