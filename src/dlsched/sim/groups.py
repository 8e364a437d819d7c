"""Which policy schedules which jobs of a run: policy groups, one per policy.

A run's ``policy`` schedules every job kind it can; ``kind_policies`` gives a kind its own
(e.g. Tiresias for rigid jobs, Pollux for elastic jobs and SMD for parameter-server jobs, in one
run). An ordering policy (FIFO, SJF, SRTF, QSSF, Tiresias) may schedule every kind: an elastic
job then runs at its requested GPUs and batch, a parameter-server job at its requested workers
and PS. Policies that order by run time (SJF, SRTF, QSSF) refuse jobs without one. Allocation
policies schedule only their own kind (:data:`ALLOCATION_KINDS`). A combination that cannot be
honoured is refused before the run starts, naming the policy and the kind.

Several groups share the cluster by rank: ordering groups rank above allocation groups, and
among allocation groups parameter-server before elastic. A group never preempts another's jobs.
A preemptive ordering group admits into the pool's capacity less what other groups hold; an
allocation group may use what is free plus what its own jobs hold, less the GPUs waiting jobs of
ordering groups need (so rigid jobs are not starved by elastic jobs that could shrink).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from dlsched.cluster.state import ClusterState
from dlsched.perf.model import ELASTIC, KIND_NAMES, PS, RIGID
from dlsched.placement.base import Placer
from dlsched.policy.base import Policy
from dlsched.policy.catalog import PS_POLICIES, elastic_policies
from dlsched.policy.catalog import policy_catalog as policy_catalog  # dlsched's API
from dlsched.policy.registry import create_policy, policies
from dlsched.registry import build, lookup
from dlsched.scheduler.allocation import AllocationScheduler, AnyScheduler
from dlsched.scheduler.cycle import KindPlacer, Scheduler

if TYPE_CHECKING:
    from dlsched.perf.elastic_progress import ElasticModel
    from dlsched.perf.perfbook import PerfBook
    from dlsched.ps.machines import Machine
    from dlsched.ps.policy_base import PsPolicy

# The elastic and parameter-server sides (their policies and adapters, which bring numpy and
# scipy's optimizers) are imported only by a run with jobs of that kind: a rigid run imports
# nothing of dlsched.elastic or dlsched.ps.
PS_POLICY_NAMES: tuple[str, ...] = tuple(d.name for d in PS_POLICIES)
"""The allocation policies of parameter-server jobs (:mod:`dlsched.ps.policies`)."""


def make_ps_policy(name: str) -> PsPolicy:
    """A fresh parameter-server policy ``name`` (:func:`dlsched.ps.policies.make_policy`)."""
    from dlsched.ps.policies import make_policy

    return make_policy(name)


ALLOCATION_KINDS = {ELASTIC: "elastic", PS: "ps"}
DEFAULT_PLACEMENT = "consolidate"
RANK_ORDER = (RIGID, PS, ELASTIC)


class PolicyChoiceError(ValueError):
    """A policy cannot schedule a job kind of the run, or a kind policy names no kind in it."""


@dataclass
class Group:
    """One policy and the jobs it schedules. ``priority`` orders its cycles among the events
    of one instant (allocation groups decide before ordering groups place)."""

    policy: str
    kinds: tuple[int, ...]
    scheduler: AnyScheduler
    ordering: bool
    priority: int


def allocation_policy_names(kind: int) -> tuple[str, ...]:
    """Allocation policies that schedule ``kind``."""
    if kind == ELASTIC:
        return tuple(sorted(elastic_policies()))
    if kind == PS:
        return tuple(sorted(PS_POLICY_NAMES))
    return ()


def policy_for(kind: int, policy: str, kind_policies: Mapping[str, str]) -> str:
    return kind_policies.get(KIND_NAMES[kind], policy)


def options_for(kind: int, default_policy: bool, options: Mapping[str, str]) -> dict[str, str]:
    """The options of ``kind``'s policy: keys ``KIND.NAME`` for a kind policy, plain keys for
    the run's ``policy``."""
    prefix = f"{KIND_NAMES[kind]}."
    if default_policy:
        return {k: v for k, v in options.items() if "." not in k}
    return {k[len(prefix) :]: v for k, v in options.items() if k.startswith(prefix)}


def check_choice(
    kinds: Iterable[int], policy: str, kind_policies: Mapping[str, str], options: Mapping[str, str]
) -> None:
    """Refuse (:class:`PolicyChoiceError`) a policy that cannot schedule a kind the run has,
    a kind policy or option naming a kind the run lacks, or an unknown kind name."""
    present = set(kinds)
    for name in kind_policies:
        if name not in KIND_NAMES:
            raise PolicyChoiceError(
                f"--kind-policy {name}=...: unknown job kind; kinds: {', '.join(KIND_NAMES)}"
            )
        if KIND_NAMES.index(name) not in present:
            raise PolicyChoiceError(
                f"--kind-policy {name}={kind_policies[name]}: the trace has no {name} jobs"
            )
    for key in options:
        if "." in key:
            prefix = key.split(".", 1)[0]
            if prefix not in kind_policies:
                raise PolicyChoiceError(
                    f"--policy-opt {key}: no --kind-policy {prefix}=... in this run"
                )
    ordering = policies()
    for kind in sorted(present):
        name = policy_for(kind, policy, kind_policies)
        if name in ordering:
            cls = ordering[name]
            if kind != RIGID and (cls.needs_run_time or cls.needs_estimate):
                raise PolicyChoiceError(
                    f"policy {name!r} orders jobs by their run time, which {KIND_NAMES[kind]} "
                    f"jobs do not have; give them another with --kind-policy "
                    f"{KIND_NAMES[kind]}=POLICY (e.g. fifo, tiresias, "
                    f"{', '.join(allocation_policy_names(kind))})"
                )
            continue
        if name in allocation_policy_names(kind):
            continue
        able = sorted(
            {n for n, c in ordering.items() if kind == RIGID or not c.needs_run_time}
            - {n for n, c in ordering.items() if kind != RIGID and c.needs_estimate}
            | set(allocation_policy_names(kind))
        )
        known = set(ordering) | set(allocation_policy_names(ELASTIC))
        known |= set(allocation_policy_names(PS))
        what = "unknown policy" if name not in known else "policy"
        raise PolicyChoiceError(
            f"{what} {name!r} cannot schedule {KIND_NAMES[kind]} jobs"
            + ("" if kind_policies or kind == RIGID else " (the trace has some)")
            + f"; policies that can: {', '.join(able)}"
        )


def check_placement(groups: Iterable[Group], placement: str) -> None:
    """Refuse a ``placement`` other than the default when no group of the run places jobs with
    it (allocation policies place their jobs themselves)."""
    if placement != DEFAULT_PLACEMENT and not any(g.ordering for g in groups):
        names = ", ".join(sorted({g.policy for g in groups}))
        raise PolicyChoiceError(
            f"--placement {placement}: policy {names} places its jobs itself; drop --placement"
        )


def _ordering_scheduler(policy: Policy, placer: Placer, state: ClusterState) -> Scheduler:
    """The scheduler of an ordering policy: the co-location cycle for a policy that packs."""
    from dlsched.policy.colocation import CoLocatingPolicy

    if isinstance(policy, CoLocatingPolicy):
        from dlsched.perf.interference import lucid_interference
        from dlsched.scheduler.colocation import CoLocationScheduler

        return CoLocationScheduler(policy, placer, state, lucid_interference())
    return Scheduler(policy, placer, state)


def build_groups(
    kinds: Iterable[int],
    policy: str,
    kind_policies: Mapping[str, str],
    options: Mapping[str, str],
    state: ClusterState,
    placer: Placer,
    seed: int,
    elastic: tuple[ElasticModel, PerfBook] | None,
    machines: tuple[Machine, ...] | None,
) -> tuple[list[Group], dict[int, int]]:
    """The run's groups (in rank order) and each kind's group index; refuses what
    :func:`check_choice` refuses."""
    present = sorted(set(kinds), key=RANK_ORDER.index)
    check_choice(present, policy, kind_policies, options)
    ordering = policies()
    groups: list[Group] = []
    by_name: dict[str, int] = {}
    group_of: dict[int, int] = {}
    for kind in present:
        name = policy_for(kind, policy, kind_policies)
        default = KIND_NAMES[kind] not in kind_policies
        if name in ordering:
            if name in by_name:
                g = groups[by_name[name]]
                g.kinds = (*g.kinds, kind)
                group_of[kind] = by_name[name]
                continue
            pol = create_policy(name, options_for(kind, default, options))
            sched = _ordering_scheduler(pol, placer, state)
            groups.append(Group(name, (kind,), sched, True, 0))
            by_name[name] = len(groups) - 1
            group_of[kind] = len(groups) - 1
            continue
        opts = options_for(kind, default, options)
        if kind == ELASTIC:
            from dlsched.sim.elastic_adapter import ElasticAdapter

            assert elastic is not None
            cls = lookup(elastic_policies(), name, "elastic policy")
            make = partial(build, cls, opts)
            build(cls, opts)  # refuse bad options before the run, not at the first round
            adapter = ElasticAdapter(make, state, elastic[0], elastic[1], seed)
            groups.append(Group(name, (kind,), AllocationScheduler(adapter, state), False, 0))
        else:
            from dlsched.sim.ps_adapter import PsAdapter

            assert machines is not None
            if opts:
                raise PolicyChoiceError(f"policy {name!r} for ps jobs takes no options")
            adapter_ps = PsAdapter(make_ps_policy(name), state, machines)
            groups.append(Group(name, (kind,), AllocationScheduler(adapter_ps, state), False, 0))
        group_of[kind] = len(groups) - 1
    check_placement(groups, placer.name)
    ordered = [g for g in groups if g.ordering] + [g for g in groups if not g.ordering]
    remap = {id(g): i for i, g in enumerate(ordered)}
    group_of = {k: remap[id(groups[i])] for k, i in group_of.items()}
    for i, g in enumerate(ordered):
        g.priority = (20 if g.ordering else 10) + i
        if g.ordering and PS in g.kinds and machines is not None:
            from dlsched.sim.ps_adapter import PsPlacer

            placers: dict[int, KindPlacer] = {PS: PsPlacer(machines)}
            assert isinstance(g.scheduler, Scheduler)
            g.scheduler.kind_placers = placers
    return ordered, group_of
