"""Every policy a run may name, with the job kinds it schedules, listed without importing the
allocation policies.

Ordering policies (:mod:`dlsched.policy`: FIFO, SJF, Tiresias, ...) are light and found by
module (:func:`dlsched.policy.registry.policies`). The allocation policies of elastic and
parameter-server jobs import numpy, scipy's optimizers and scikit-learn, a second or more of a
command's start-up, so they are declared here (:data:`ELASTIC_POLICIES`, :data:`PS_POLICIES`:
name, class and description) and each is imported only when a run uses it. ``dlsched list
policies`` and the name checks of every run therefore import none of them, and a run of rigid
jobs nothing of :mod:`dlsched.elastic` or :mod:`dlsched.ps`. A new elastic policy is a module of
:mod:`dlsched.elastic.policies` plus its line in :data:`ELASTIC_POLICIES`
(tests/test_plugins.py fails, naming it, when either is missing or the two disagree).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from dlsched.policy.registry import policies
from dlsched.registry import Declared, Plugins

if TYPE_CHECKING:
    from dlsched.elastic.policy import ElasticPolicy

ELASTIC_POLICIES: tuple[Declared, ...] = (
    Declared(
        "elasticflow",
        "dlsched.elastic.policies.elasticflow",
        "ElasticFlow",
        "deadline-aware: admission by minimum share, marginal-return scaling, buddy placement",
    ),
    Declared(
        "gavel",
        "dlsched.elastic.policies.gavel",
        "Gavel",
        "heterogeneity-aware LP (max-min fairness or min-JCT) over GPU types, 6-min rounds",
    ),
    Declared(
        "ones",
        "dlsched.elastic.policies.ones",
        "Ones",
        "ONES evolutionary search: GPU-slot chromosomes, Beta progress predictor",
    ),
    Declared(
        "optimus",
        "dlsched.elastic.policies.optimus",
        "Optimus",
        "marginal-gain GPUs at a fixed batch (Optimus loss-curve and PS speed models)",
    ),
    Declared(
        "pollux",
        "dlsched.elastic.policies.pollux",
        "Pollux",
        "goodput-optimal GPUs and batch per job; p=-1 mean of speedups, restart-aware",
    ),
    Declared(
        "sia",
        "dlsched.elastic.policies.sia",
        "Sia",
        "heterogeneity-aware goodput per GPU type from one-GPU profiles; an ILP per round over "
        "(job, GPU type, count), restart-aware",
    ),
    Declared(
        "themis",
        "dlsched.elastic.policies.themis",
        "Themis",
        "finish-time fairness: leases, free GPUs auctioned to the worst rho",
    ),
)
"""The built-in elastic policies (:mod:`dlsched.elastic.policies`), by name."""

PS_POLICIES: tuple[Declared, ...] = (
    Declared(
        "optimus",
        "dlsched.ps.policy_optimus",
        "OptimusStyle",
        "Optimus-style marginal gain over workers and PS (PS speed model)",
    ),
    Declared(
        "smd",
        "dlsched.ps.policy_smd",
        "SmdPolicy",
        "SMD sum-of-ratios knapsack decomposition over workers, PS and machines",
    ),
)
"""The allocation policies of parameter-server jobs (:mod:`dlsched.ps.policies`), by name;
each ``attr`` is a :class:`~dlsched.ps.policy_base.PsPolicy` built without arguments."""


@cache
def elastic_policies() -> Plugins[ElasticPolicy]:
    """The elastic policies by name: :data:`ELASTIC_POLICIES`, then the classes installed
    distributions list under the entry-point group ``dlsched.elastic_policies``; each class is
    imported when it is looked up (:class:`~dlsched.registry.Plugins`)."""
    return Plugins(
        ELASTIC_POLICIES,
        "dlsched.elastic.policy:ElasticPolicy",
        "dlsched.elastic_policies",
        "elastic policy",
    )


def ordering_kinds(needs_run_time: bool, needs_estimate: bool) -> str:
    """The job kinds an ordering policy schedules: all, unless it orders jobs by a run time
    (or its estimate), which only rigid jobs have."""
    return "rigid" if needs_run_time or needs_estimate else "rigid, elastic, ps"


def policy_catalog() -> list[tuple[str, str, str]]:
    """Every policy a run may name: ``(name, job kinds it schedules, description)``, ordering
    policies first, then elastic, then parameter-server ones, each group by name. Imports no
    allocation policy (module docstring); an installed elastic plugin is loaded to be listed."""
    out: list[tuple[str, str, str]] = []
    for name, cls in sorted(policies().items()):
        out.append((name, ordering_kinds(cls.needs_run_time, cls.needs_estimate), cls.description))
    elastic = elastic_policies()
    for name in sorted(elastic):
        out.append((name, "elastic", elastic.description(name)))
    for declared in sorted(PS_POLICIES, key=lambda d: d.name):
        out.append((declared.name, "ps", declared.description))
    return out
