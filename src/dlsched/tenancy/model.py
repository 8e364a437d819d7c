"""Tenants and their quotas as data, with Kueue's meaning (see docs/tenants.md).

A :class:`ClusterQueue` holds quota per flavor and resource (``nominal``, optional
``borrowing_limit`` and ``lending_limit``) in resource groups; it may belong to a
:class:`Cohort`, and cohorts may have parents (a cohort tree) and quota of their own. A
:class:`LocalQueue` (namespace/name) points at a ClusterQueue; a :class:`PriorityClass` gives a
workload its priority. Resources are named as in Kubernetes: any name ending in ``gpu``
(``nvidia.com/gpu``) counts a job's GPUs, ``cpu`` its CPUs, ``memory`` its memory (MiB here),
``pods`` one per workload; other resources are requested by no trace job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dlsched.tenancy.errors import TenancyError

NEVER, LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL, ANY = (
    "Never",
    "LowerPriority",
    "LowerOrNewerEqualPriority",
    "Any",
)
WITHIN_CQ_POLICIES = (NEVER, LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL)
RECLAIM_POLICIES = (NEVER, LOWER_PRIORITY, ANY)
BORROW_POLICIES = (NEVER, LOWER_PRIORITY)
STRICT_FIFO, BEST_EFFORT_FIFO = "StrictFIFO", "BestEffortFIFO"
STOP_NONE, HOLD, HOLD_AND_DRAIN = "None", "Hold", "HoldAndDrain"
"""A queue's ``stopPolicy``: admit as usual; admit nothing new; admit nothing new and evict
what it has admitted."""
BORROW, TRY_NEXT_FLAVOR, PREEMPT = "Borrow", "TryNextFlavor", "Preempt"
MAY_STOP_SEARCH = "MayStopSearch"
"""v1beta2's name for whenCanBorrow: Borrow and whenCanPreempt: Preempt."""
BORROWING_OVER_PREEMPTION, PREEMPTION_OVER_BORROWING = (
    "BorrowingOverPreemption",
    "PreemptionOverBorrowing",
)
LESS_THAN_OR_EQUAL_FINAL, LESS_THAN_INITIAL = "LessThanOrEqualToFinalShare", "LessThanInitialShare"
GPU, CPU, MEMORY, PODS = "gpu", "cpu", "memory", "pods"
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
PREEMPTION_REASONS = (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAMATION,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_FAIR_SHARING,
)
"""Why a workload was preempted, by the reason of Kueue's ``Preempted`` condition (and the
``reason`` label of ``kueue_preempted_workloads_total``)."""


def resource_kind(name: str) -> str:
    """Which of a workload's requests a Kubernetes resource name counts: ``gpu`` (any name
    ending in ``gpu``), ``cpu``, ``memory``, ``pods``, or the name itself (a resource no trace
    job asks for: its quota is charged only to workloads that ask it by that name)."""
    if name == GPU or name.endswith("/gpu"):
        return GPU
    return name


@dataclass(frozen=True)
class ResourceQuota:
    """Quota of one resource in one flavor. ``borrowing_limit``/``lending_limit`` None: no
    limit (borrow up to what the cohort has; lend all unused quota)."""

    nominal: float
    borrowing_limit: float | None = None
    lending_limit: float | None = None


@dataclass(frozen=True)
class FlavorQuotas:
    """A flavor's quotas in one resource group, by resource name (in covered order)."""

    flavor: str
    resources: Mapping[str, ResourceQuota]


@dataclass(frozen=True)
class ResourceGroup:
    """Resources that share one list of flavors: a workload takes all of them from one flavor,
    trying the flavors in order."""

    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True)
class Preemption:
    """A ClusterQueue's preemption policies (Kueue's defaults: never preempt)."""

    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True)
class Fungibility:
    """What a ClusterQueue does when a flavor fits only by borrowing or by preempting."""

    when_can_borrow: str = BORROW
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preference: str = BORROWING_OVER_PREEMPTION
    """Between two flavors both worth trying: the better preemption mode first, then less
    borrowing (``BorrowingOverPreemption``, Kueue's default), or the other way round."""


@dataclass(frozen=True)
class LabelRequirement:
    """One ``matchExpressions`` entry of a Kubernetes label selector: ``operator`` ``In``,
    ``NotIn``, ``Exists`` or ``DoesNotExist``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return labels.get(self.key) in self.values
        return labels.get(self.key) not in self.values


@dataclass(frozen=True)
class LabelSelector:
    """A Kubernetes label selector: every ``matchLabels`` pair and every requirement must
    hold. The empty selector matches every label set."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    requirements: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            r.matches(labels) for r in self.requirements
        )


@dataclass(frozen=True)
class ClusterQueue:
    """Quota and policies of one tenant queue. ``namespace_selector`` None: Kueue's nil
    selector, which matches no namespace; the empty :class:`LabelSelector` matches all."""

    name: str
    cohort: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    queueing_strategy: str = BEST_EFFORT_FIFO
    preemption: Preemption = field(default_factory=Preemption)
    fungibility: Fungibility = field(default_factory=Fungibility)
    weight: float = 1.0
    namespace_selector: LabelSelector | None = field(default_factory=LabelSelector)
    stop_policy: str = STOP_NONE


@dataclass(frozen=True)
class Cohort:
    """A node of a cohort tree: its parent cohort (None: a root) and shared quota of its own."""

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    weight: float = 1.0


@dataclass(frozen=True)
class Taint:
    """A node taint of a flavor's nodes (Kubernetes ``key=value:effect``)."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    """A pod's (or a flavor's) toleration: ``operator`` ``Equal`` (key and value) or
    ``Exists`` (key only; an empty key tolerates every taint); an empty ``effect`` tolerates
    every effect."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


@dataclass(frozen=True)
class ResourceFlavor:
    """A kind of resource, e.g. a GPU model, selected by node labels; a workload may use it
    only if its pods tolerate the flavor's ``NoSchedule``/``NoExecute`` taints (with the
    flavor's own tolerations, which Kueue adds to its pods)."""

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class LocalQueue:
    """A namespace's queue, feeding one ClusterQueue."""

    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = STOP_NONE

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class PriorityClass:
    """A WorkloadPriorityClass: a workload's priority in queueing and preemption."""

    name: str
    value: int


@dataclass(frozen=True)
class FairSharing:
    """Kueue's fair sharing (its Configuration's ``fairSharing``): off by default, in which
    case classic preemption applies."""

    enabled: bool = False
    strategies: tuple[str, ...] = (LESS_THAN_OR_EQUAL_FINAL, LESS_THAN_INITIAL)


@dataclass(frozen=True)
class PodsReady:
    """The Configuration's ``waitForPodsReady``: an admitted workload whose pods are not all
    running ``timeout`` seconds after admission is evicted (reason ``PodsReadyTimeout``) and
    requeued after ``backoff_base * 2**(n-1)`` seconds (capped at ``backoff_max``) for its
    n-th requeue; past ``backoff_limit`` requeues (None: no limit) it is deactivated.
    ``block_admission``: nothing else is admitted while an admitted workload is not ready."""

    timeout: float = 300.0
    backoff_base: float = 60.0
    backoff_max: float = 3600.0
    backoff_limit: int | None = None
    block_admission: bool = False
    requeue_by_eviction: bool = True
    """``requeuingStrategy.timestamp``: ``Eviction`` (a requeued workload is ordered by its
    eviction time) or ``Creation``."""

    def backoff(self, requeues: int) -> float:
        """Seconds before the ``requeues``-th requeue (Kueue's exponential backoff, without
        its jitter of a ten-thousandth)."""
        return float(min(self.backoff_base * 2.0 ** (requeues - 1), self.backoff_max))


@dataclass(frozen=True)
class KueueClock:
    """When admission decides (docs/tenants.md "Kueue's clock"). ``mode`` ``cycle``: Kueue's
    scheduling cycles, one head per ClusterQueue per cycle, ``cycle_period`` seconds apart
    while a cycle makes progress, preemptors admitted only once their victims have
    terminated, ``termination_grace`` seconds after their eviction; ``fixpoint``: every
    admission possible at an instant at once, evictions and the preemptor's admission at the
    same instant. ``pods_ready``: ``waitForPodsReady`` when enabled."""

    mode: str = "cycle"
    cycle_period: float = 0.0
    termination_grace: float = 0.0
    pods_ready: PodsReady | None = None


@dataclass(frozen=True)
class Tenancy:
    """Every queue object of a run, validated (:func:`dlsched.tenancy.manifests.read_manifests`
    builds one)."""

    flavors: Mapping[str, ResourceFlavor]
    cluster_queues: Mapping[str, ClusterQueue]
    cohorts: Mapping[str, Cohort]
    local_queues: Mapping[str, LocalQueue]
    priority_classes: Mapping[str, PriorityClass] = field(default_factory=dict)
    fair_sharing: FairSharing = field(default_factory=FairSharing)
    source: str = "<memory>"
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Labels of each namespace that a ``Namespace`` document gives (a namespace named by no
    document has none)."""
    clock: KueueClock = field(default_factory=KueueClock)

    def local_queue(self, ref: str) -> LocalQueue:
        """The LocalQueue ``namespace/name``, or ``name`` when one namespace has it."""
        if ref in self.local_queues:
            return self.local_queues[ref]
        if "/" not in ref:
            found = [lq for lq in self.local_queues.values() if lq.name == ref]
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                spaces = ", ".join(sorted(lq.namespace for lq in found))
                raise TenancyError(
                    f"{self.source}: LocalQueue {ref!r} exists in namespaces {spaces}; "
                    "name it as NAMESPACE/NAME"
                )
        known = ", ".join(sorted(self.local_queues)[:10]) or "none"
        raise TenancyError(f"{self.source}: no LocalQueue {ref!r}; LocalQueues: {known}")

    def priority(self, name: str | None) -> int:
        """The value of priority class ``name`` (None: 0, Kueue's default)."""
        if name is None:
            return 0
        pc = self.priority_classes.get(name)
        if pc is None:
            known = ", ".join(sorted(self.priority_classes)) or "none"
            raise TenancyError(
                f"{self.source}: no WorkloadPriorityClass {name!r}; classes: {known}"
            )
        return pc.value
