"""Policies by name. Every module of ``dlsched.policy`` that defines a :class:`Policy` subclass
with a ``name`` is found; see :mod:`dlsched.registry`."""

from __future__ import annotations

from functools import cache

from dlsched.policy.base import Policy
from dlsched.registry import build, discover, lookup


@cache
def policies() -> dict[str, type[Policy]]:
    """All policy classes by name."""
    return discover("dlsched.policy", Policy, "dlsched.policies")  # type: ignore[type-abstract]


def create_policy(name: str, options: dict[str, str] | None = None) -> Policy:
    """A policy instance from its name and text options; a clear error for unknown names."""
    return build(lookup(policies(), name, "policy"), options or {})
