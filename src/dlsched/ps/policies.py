"""The allocation policies of parameter-server jobs by name (FIFO, Tiresias and the other
ordering policies schedule PS jobs too, at their requested shapes: :mod:`dlsched.sim.groups`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from dlsched.ps.policy_base import PsPolicy
from dlsched.ps.policy_optimus import OptimusStyle
from dlsched.ps.policy_smd import SmdPolicy

POLICY_FACTORIES: Mapping[str, Callable[[], PsPolicy]] = MappingProxyType(
    {"smd": SmdPolicy, "optimus": OptimusStyle}
)
POLICY_NAMES: tuple[str, ...] = tuple(POLICY_FACTORIES)


def make_policy(name: str) -> PsPolicy:
    """A fresh policy ``name`` (one of :data:`POLICY_NAMES`); ValueError names the known ones."""
    if name not in POLICY_FACTORIES:
        raise ValueError(f"unknown PS policy {name!r}; known: {', '.join(POLICY_NAMES)}")
    return POLICY_FACTORIES[name]()
