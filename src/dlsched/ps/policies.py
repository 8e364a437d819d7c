"""The allocation policies of parameter-server jobs by name (FIFO, Tiresias and the other
ordering policies schedule PS jobs too, at their requested shapes: :mod:`dlsched.sim.groups`).

They are declared in :data:`dlsched.policy.catalog.PS_POLICIES`; a policy's module (SMD's
brings scipy's optimizers) is imported when the policy is made."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlsched.policy.catalog import PS_POLICIES
from dlsched.registry import load

if TYPE_CHECKING:
    from dlsched.ps.policy_base import PsPolicy

POLICY_NAMES: tuple[str, ...] = tuple(d.name for d in PS_POLICIES)


def make_policy(name: str) -> PsPolicy:
    """A fresh policy ``name`` (one of :data:`POLICY_NAMES`); ValueError names the known ones."""
    for declared in PS_POLICIES:
        if declared.name == name:
            policy: PsPolicy = load(f"{declared.module}:{declared.attr}")()
            return policy
    raise ValueError(f"unknown PS policy {name!r}; known: {', '.join(POLICY_NAMES)}")
