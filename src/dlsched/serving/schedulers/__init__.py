"""Replica schedulers by name: what joins each iteration of a serving replica.

The built-ins (:data:`REPLICA_SCHEDULERS`) are declared by name, module and description and
imported when looked up; installed distributions add schedulers under the entry-point group
``dlsched.replica_schedulers`` (each entry naming a concrete
:class:`~dlsched.serving.schedulers.base.ReplicaScheduler` subclass with a ``name``), as
policies are added under ``dlsched.policies``. The contract a scheduler fulfils is in
:mod:`dlsched.serving.schedulers.base`. ``chunked`` is an alias of ``sarathi``
(:data:`ALIASES`): the chunked-prefill scheduler before was Sarathi-Serve's stall-free batching
with a fixed token budget.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from dlsched.registry import Declared, Plugins

if TYPE_CHECKING:
    from dlsched.serving.schedulers.base import ReplicaScheduler

REPLICA_SCHEDULERS: tuple[Declared, ...] = (
    Declared(
        "vllm",
        "dlsched.serving.schedulers.vllm",
        "VllmScheduler",
        "vLLM V1: one token budget, running requests first, chunked prefill, recompute",
    ),
    Declared(
        "sarathi",
        "dlsched.serving.schedulers.sarathi",
        "SarathiScheduler",
        "Sarathi-Serve stall-free batching: decodes, then prefill chunks under a TBT budget",
    ),
    Declared(
        "orca",
        "dlsched.serving.schedulers.orca",
        "OrcaScheduler",
        "Orca iteration-level scheduling: whole prefills beside decodes, max batch size",
    ),
    Declared(
        "static",
        "dlsched.serving.schedulers.static",
        "StaticScheduler",
        "request-level batching: a padded batch runs until its longest output",
    ),
)
"""The built-in replica schedulers, by name."""

ALIASES = {"chunked": "sarathi"}
"""Other names of built-in schedulers (resolved by
:class:`~dlsched.serving.config.ReplicaConfig`)."""

SCHEDULERS = tuple(d.name for d in REPLICA_SCHEDULERS)
"""The built-in scheduler names, the default (``vllm``) first."""


@cache
def replica_schedulers() -> Plugins[ReplicaScheduler]:
    """The replica schedulers by name: :data:`REPLICA_SCHEDULERS`, then the classes installed
    distributions list under ``dlsched.replica_schedulers``."""
    return Plugins(
        REPLICA_SCHEDULERS,
        "dlsched.serving.schedulers.base:ReplicaScheduler",
        "dlsched.replica_schedulers",
        "replica scheduler",
    )


def resolve(name: str) -> str:
    """The scheduler ``name`` stands for (an alias resolved); ValueError naming the available
    ones when there is none of that name."""
    name = ALIASES.get(name, name)
    found = replica_schedulers()
    if name not in found:
        known = ", ".join([*found, *ALIASES])
        raise ValueError(f"unknown scheduler {name!r}; available: {known}")
    return name
