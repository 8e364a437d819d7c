"""Elastic policies by name: every module of :mod:`dlsched.elastic.policies` that defines an
:class:`~dlsched.elastic.policy.ElasticPolicy` subclass with a ``name`` (see
:mod:`dlsched.registry`)."""

from __future__ import annotations

from functools import cache

from dlsched.elastic.policy import ElasticPolicy
from dlsched.registry import build, discover, lookup


@cache
def elastic_policies() -> dict[str, type[ElasticPolicy]]:
    """All elastic policy classes by name."""
    return discover("dlsched.elastic.policies", ElasticPolicy, "dlsched.elastic_policies")  # type: ignore[type-abstract]


def create_elastic_policy(name: str, options: dict[str, str] | None = None) -> ElasticPolicy:
    """An elastic policy from its name and text options; a clear error for unknown names."""
    return build(lookup(elastic_policies(), name, "elastic policy"), options or {})
