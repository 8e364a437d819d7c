"""Which policy a service runs, and its controller: one
:class:`~dlsched.service.control.controller.Controller` for every policy, planning with an ordering
policy's scheduler and placer or an elastic policy's rounds
(:mod:`dlsched.service.control.planning`).

A ``--policy`` name resolves to an elastic policy when it is written ``elastic:NAME`` or when
only the elastic registry has it (``ones``, ``pollux``, ``optimus``, ``gavel``, ``themis``);
``fifo`` and ``tiresias`` exist in both and mean the rigid ones unless prefixed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from dlsched.backends.base import Backend
from dlsched.cluster.spec import ClusterSpec
from dlsched.elastic.policy import ElasticPolicy
from dlsched.elastic.registry import create_elastic_policy, elastic_policies
from dlsched.policy.base import Policy
from dlsched.policy.registry import create_policy, policies
from dlsched.service.control.controller import (
    DEFAULT_GRACE_S,
    DEFAULT_LEASE_S,
    DEFAULT_PLACEMENT,
    Controller,
)
from dlsched.service.control.live_admission import LiveAdmission
from dlsched.service.store.database import Store

ELASTIC_PREFIX = "elastic:"


def elastic_name(policy: str) -> str | None:
    """The elastic policy ``policy`` names (module docstring), or None for a rigid one."""
    if policy.startswith(ELASTIC_PREFIX):
        return policy[len(ELASTIC_PREFIX) :]
    if policy in elastic_policies() and policy not in policies():
        return policy
    return None


def create_service_policy(policy: str, options: dict[str, str]) -> Policy | ElasticPolicy:
    """The policy ``policy`` names (module docstring) with its text ``options``; unknown names
    and options raise ValueError before anything starts."""
    elastic = elastic_name(policy)
    if elastic is None:
        return create_policy(policy, options)
    return create_elastic_policy(elastic, options)


def build_controller(
    policy: Policy | ElasticPolicy,
    store: Store,
    backend: Backend,
    cluster: ClusterSpec,
    placement: str = DEFAULT_PLACEMENT,
    clock: Callable[[], float] = time.time,
    grace_s: float = DEFAULT_GRACE_S,
    round_s: float | None = None,
    service_id: str | None = None,
    lease_s: float = DEFAULT_LEASE_S,
    admission: LiveAdmission | None = None,
    placement_options: Mapping[str, str] | None = None,
) -> Controller:
    """The controller that runs ``policy``: an elastic one deciding every ``round_s`` seconds
    (default: the policy's interval), an ordering one with the ``placement`` placer and its text
    ``placement_options``;
    ``service_id`` (default: the store's instance id) owns the attempts it starts;
    ``admission`` admits jobs against queue quotas before the policy sees them (refused with an
    elastic policy, which allocates beyond the requested sizes that quotas charge)."""
    elastic = isinstance(policy, ElasticPolicy)
    if elastic and admission is not None:
        raise ValueError(
            f"--queues: policy {policy.name!r} allocates GPUs beyond what jobs ask, which quotas "
            "cannot charge; with queues use an ordering policy (fifo, sjf, srtf, qssf, tiresias)"
        )
    return Controller(
        store,
        backend,
        cluster,
        policy,
        placement=placement,
        clock=clock,
        grace_s=grace_s,
        service_id=service_id,
        lease_s=lease_s,
        interval_s=round_s if elastic else None,
        admission=admission,
        placement_options=placement_options,
    )
