"""Elastic policies by name: the built-ins of :mod:`dlsched.elastic.policies`, declared in
:data:`dlsched.policy.catalog.ELASTIC_POLICIES` so that each is imported only when a run names
it (an elastic run under Pollux imports nothing of Gavel's LP solver), and the classes other
distributions list under the entry-point group ``dlsched.elastic_policies`` (see
:mod:`dlsched.registry`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlsched.policy.catalog import elastic_policies
from dlsched.registry import build, lookup

if TYPE_CHECKING:
    from dlsched.elastic.policy import ElasticPolicy

__all__ = ["create_elastic_policy", "elastic_policies"]


def create_elastic_policy(name: str, options: dict[str, str] | None = None) -> ElasticPolicy:
    """An elastic policy from its name and text options; a clear error for unknown names."""
    return build(lookup(elastic_policies(), name, "elastic policy"), options or {})
