"""Admission of workloads into ClusterQueues: quota, borrowing, reclaim and preemption.

A :class:`Workload` asks for amounts of resource kinds (GPUs, CPUs, memory in MiB, one pod) at
a priority. :meth:`Admission.schedule` admits pending workloads with Kueue's documented
semantics (docs/tenants.md):

- **Flavor assignment** (:mod:`dlsched.tenancy.flavor_assignment`) as Kueue's flavor
  assigner: per resource group, flavors in order, each resource with a preemption mode and a
  borrowing level, ``whenCanBorrow``/``whenCanPreempt`` deciding whether to try the next;
  a flavor is open to a workload only if its GPU type and its pods' node selector, affinity
  and tolerations allow it (:mod:`dlsched.tenancy.node_match`).
- **Queueing.** Each ClusterQueue orders its workloads by priority, then creation time.
  ``StrictFIFO``: only the head may be admitted; ``BestEffortFIFO``: a head that cannot be
  admitted does not block the others. Each round takes one candidate per ClusterQueue; the
  candidates are admitted in order: those that fit without borrowing first, then by priority,
  then by creation time (with fair sharing: lowest share value first).
- **Classic preemption** (:mod:`dlsched.tenancy.classic_preemption`) and **fair-sharing
  preemption** (:mod:`dlsched.tenancy.fair_preemption`, when fair sharing is on) find the
  targets as Kueue's preemptor does; :meth:`Admission.preemption_targets` answers for a given
  flavor assignment (the conformance suite, tests/data/kueue/conformance, runs Kueue's own
  preemption test cases through it).

Evictions carry Kueue's reason (``InClusterQueue``, ``InCohortReclamation``,
``InCohortReclaimWhileBorrowing``, ``InCohortFairSharing``) and its coarse cause: ``priority``
(same ClusterQueue), ``reclaim`` (another ClusterQueue's borrowed quota, classic) or
``fair_share`` (another ClusterQueue, fair sharing).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from heapq import heapify, heappop, heappush
from typing import Any, NamedTuple

from dlsched.cluster.spec import gpu_type_matches
from dlsched.tenancy.classic_preemption import classic_targets
from dlsched.tenancy.fair_preemption import fair_targets
from dlsched.tenancy.flavor_assignment import FITS, Choice, Oracle, choose, lowest_fitting
from dlsched.tenancy.model import (
    ANY,
    CPU,
    GPU,
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    LOWER_OR_NEWER_EQUAL,
    LOWER_PRIORITY,
    MEMORY,
    NEVER,
    PODS,
    STRICT_FIFO,
    ClusterQueue,
    Tenancy,
    resource_kind,
)
from dlsched.tenancy.node_match import HARD_EFFECTS, PodConstraints, pods_fit
from dlsched.tenancy.quota import EPS, QuotaTree

FIT, PREEMPTS, NO_FIT = 0, 1, 2
PRIORITY, RECLAIM, FAIR_SHARE = "priority", "reclaim", "fair_share"
CAUSES = (PRIORITY, RECLAIM, FAIR_SHARE)
CAUSE_OF_REASON = {
    IN_CLUSTER_QUEUE: PRIORITY,
    IN_COHORT_RECLAMATION: RECLAIM,
    IN_COHORT_RECLAIM_WHILE_BORROWING: RECLAIM,
    IN_COHORT_FAIR_SHARING: FAIR_SHARE,
}
"""The coarse cause of each of Kueue's preemption reasons (what the summary counts)."""
KINDS = (GPU, CPU, MEMORY, PODS)


@dataclass(eq=False, slots=True)
class Workload:
    """One job's admission state. ``requests`` maps resource kinds (``gpu``, ``cpu``,
    ``memory`` in MiB, ``pods``) to amounts; ``key`` is what the caller tracks (a job).
    ``seq`` is unique among the workloads of one :class:`Admission` (it breaks ties of
    priority and creation time). Workloads of one ClusterQueue with equal ``shape``
    (hashable; by default derived from the requests and GPU type) must have equal requests
    and GPU type: they share checks. A workload belongs to one :class:`Admission` and keeps
    its priority (``level``, if given, must be :meth:`Admission.level` of its queue and
    priority)."""

    key: Any
    cq: int
    priority: int
    created: float
    seq: int
    requests: Mapping[str, float]
    gpu_type: str | None = None
    shape: Any = None
    options: FlavorOptions | None = None
    fast: _Fast | None = None
    level: dict[Workload, None] | None = None
    assignment: dict[int, float] | None = None
    flavors: tuple[str, ...] = ()
    admitted_at: float = float("nan")
    borrows: bool = False
    needs: list[tuple[_Group, list[tuple[str, float]]]] | None = None
    evicting: bool = False
    pods: tuple[PodConstraints, ...] = ()

    def shape_key(self) -> Any:
        """``shape``, derived from the requests, GPU type and pod constraints when not given."""
        if self.shape is None:
            self.shape = (tuple(sorted(self.requests.items())), self.gpu_type, self.pods)
        return self.shape


class _Parked(NamedTuple):
    """A queue waiting in a bucket, keyed as its head would be sorted among candidates.
    ``before`` is the least any earlier head of the queue asks (infinite for its first head):
    the head is its queue's candidate exactly when the root has its amount free but not
    ``before``."""

    borrows: bool
    neg_priority: int
    created: float
    seq: int
    version: int
    cq: int
    head: Workload
    before: float


class Eviction(NamedTuple):
    """An admitted workload evicted to admit another, and why: Kueue's reason
    (:data:`dlsched.tenancy.model.PREEMPTION_REASONS`)."""

    workload: Workload
    reason: str

    @property
    def cause(self) -> str:
        """The reason's coarse cause: ``priority``, ``reclaim`` or ``fair_share``."""
        return CAUSE_OF_REASON[self.reason]


class DryRun(NamedTuple):
    """What admission would do with a workload now, were it its queue's head (changing
    nothing): whether it is admitted, on which flavors, borrowing or not, which admitted
    workloads it evicts, why not when it is not, and how many waiting workloads of its queue
    come before it."""

    admitted: bool
    flavors: tuple[str, ...]
    borrows: bool
    evictions: tuple[Eviction, ...]
    reason: str | None
    ahead: int


class Admitted(NamedTuple):
    """A workload admitted at this instant, and the evictions it needed."""

    workload: Workload
    evictions: tuple[Eviction, ...]


class _Flavor(NamedTuple):
    name: str
    gpu_type: str | None
    frs: Mapping[str, int]


FlavorOptions = list[list[tuple["_Flavor", tuple[tuple[int, float], ...]]]]
"""Per resource group a workload asks something of, the flavors it may take, in order, each
with the (flavor-resource number, amount) pairs it would charge there."""


class _Group(NamedTuple):
    kinds: tuple[str, ...]
    flavors: tuple[_Flavor, ...]


class _Assignment(NamedTuple):
    """A flavor assignment; ``request`` (flavor-resource number → amount) is shared between
    workloads and never changed."""

    mode: int
    request: dict[int, float]
    borrows: bool
    flavors: tuple[str, ...]


_Candidate = tuple[Workload, _Assignment, Sequence[Eviction]]
"""A queue's candidate in a round: its workload, flavor assignment and the evictions needed."""


@dataclass(frozen=True, slots=True, eq=False)
class _Fast:
    """The assignments of a workload that asks one amount of one flavor-resource in a queue
    whose tree has no lending or borrowing limits (most): it fits exactly when its tree's root
    (of quota ``capacity``) has ``amount`` free, and borrows when its queue's usage would pass
    ``nominal``. ``usages`` are the usage maps of the queue and its ancestors (the queue
    first, the root last), read for those checks. ``otherwise`` is its assignment when
    it does not fit: by preempting if the queue may preempt and the tree could ever hold it
    (borrowing when ``amount`` alone passes ``nominal``), else no fit. A slotted class, not a
    named tuple: its fields are read on every admission and release, and slots read faster."""

    root: int
    fr: int
    amount: float
    nominal: float
    capacity: float
    own: _Assignment
    borrowing: _Assignment
    usages: tuple[dict[int, float], ...]
    otherwise: _Assignment

    def fitting(self) -> _Assignment:
        """Its assignment when it fits now: ``borrowing`` when its queue's usage would pass
        ``nominal``, else ``own``."""
        if self.usages[0][self.fr] + self.amount > self.nominal + EPS:
            return self.borrowing
        return self.own

    def assign(self) -> _Assignment:
        """Its assignment now: :meth:`fitting` when its root has ``amount`` free, else
        ``otherwise``."""
        if self.amount <= self.capacity - self.usages[-1][self.fr] + EPS:
            return self.fitting()
        return self.otherwise


def _recent_first(w: Workload) -> tuple[int, float, int]:
    """Classic preemption's order among workloads of one kind (same queue, or other queues):
    lowest priority, then most recently admitted, then most recently created."""
    return (w.priority, -w.admitted_at, -w.seq)


def queue_order(w: Workload) -> tuple[int, float, int]:
    """A ClusterQueue's order of its pending workloads: highest priority, then oldest."""
    return (-w.priority, w.created, w.seq)


def _newest_first(level: dict[Workload, None]) -> Iterator[Workload]:
    """The workloads of ``level`` (one priority, in admission order, times never decreasing)
    in :func:`_recent_first` order: reversed, with each instant's run sorted by creation."""
    run: list[Workload] = []
    for w in reversed(level):
        if run and w.admitted_at != run[0].admitted_at:
            run.sort(key=_recent_first)
            yield from run
            run = []
        run.append(w)
    run.sort(key=_recent_first)
    yield from run


def flavor_gpu_type(labels: Mapping[str, str], gpu_types: Iterable[str]) -> str | None:
    """The cluster GPU type a flavor's node labels select (a label value naming one, compared
    case-insensitively), or None when they name none."""
    types = {t.casefold(): t for t in gpu_types}
    for value in labels.values():
        if value.casefold() in types:
            return types[value.casefold()]
    return None


class Admission:
    """The admission state of one run: pending and admitted workloads per ClusterQueue and the
    quota tree (module docstring).

    Queues whose heads cannot be admitted are parked until a change could admit one (see
    ``__init__``), and workloads that arrive in a tree with nothing pending and all fit are
    admitted without rounds (:meth:`_settle`); with :attr:`recheck_all` set when it is made (a
    reference for tests) neither happens and every waiting queue of a tree is checked again
    after every change of the tree's quota, as Kueue requeues inadmissible workloads on each
    cohort change. Both give the same admissions."""

    recheck_all = False

    def __init__(self, tenancy: Tenancy, gpu_types: Iterable[str] = ()) -> None:
        self.tenancy = tenancy
        self.quota = QuotaTree(tenancy)
        self.cqs: list[ClusterQueue] = list(tenancy.cluster_queues.values())
        types = list(gpu_types)
        self._groups = [self._cq_groups(cq, types) for cq in self.cqs]
        self._kinds = [{k for g in groups for k in g.kinds} for groups in self._groups]
        self.pending: list[dict[tuple[Any, ...], list[tuple[int, float, int, Workload]]]] = [
            {} for _ in self.cqs
        ]
        # Waiting workloads per queue: those in its heaps and those submitted since the
        # last round (``_new``, in submission order; not under ``_recheck``).
        self.pending_count = [0] * len(self.cqs)
        self._new: dict[Workload, None] = {}
        self.admitted: list[dict[Workload, None]] = [{} for _ in self.cqs]
        self._tree: dict[int, list[int]] = {}
        for i in range(len(self.cqs)):
            self._tree.setdefault(self.quota.root[i], []).append(i)
        # Workloads in the heaps of each tree's queues, by root.
        self._queued = [0] * len(self.quota.names)
        self._dirty: set[int] = set()
        # Parked queues (classic admission): a queue whose heads could not be admitted waits
        # until its tree has released at least their deficit (quota freed can raise what a
        # queue may take by no more than the amount freed), or, when it could reclaim, until
        # a queue of its tree borrows. Heap per tree of (released threshold, version, queue).
        self._released = dict.fromkeys(self._tree, 0.0)
        self._parked: dict[int, list[tuple[float, int, int]]] = {r: [] for r in self._tree}
        self._hungry: dict[int, set[int]] = {r: set() for r in self._tree}
        # A settled queue that may reclaim only workloads of lower priority than its heads
        # waits, per tree, for an admission of lower priority: (-max head priority, version,
        # queue), highest priorities first.
        self._watch: dict[int, list[tuple[int, int, int]]] = {r: [] for r in self._tree}
        self._watching = False
        # In a tree without lending or borrowing limits every queue may take exactly what its
        # root has free. A parked queue there that cannot preempt and whose heads each ask one
        # amount of the same flavor-resource waits with each head in a bucket per (tree,
        # flavor-resource, amount), ordered as candidates are: each round streams the heads
        # that are their queue's candidate into the candidates in that order, as long as the
        # root has their amount free, without checking the others (:meth:`_stream_next`).
        # Trees whose free quota grew since the last round are ``_ready``.
        nodes = range(len(self.quota.names))
        self._simple = {
            r: not any(
                self.quota.lend_limit[n] or self.quota.borrow_limit[n]
                for n in nodes
                if self.quota.root[n] == r
            )
            for r in self._tree
        }
        self._buckets: dict[tuple[int, int], dict[float, list[_Parked]]] = {}
        # Per bucket queue, the version it was parked at, its entries with what each head
        # asks, and its heads: whether a release of its own changes them
        # (:meth:`_parked_as_before`).
        self._in_buckets: dict[
            int, tuple[int, list[tuple[_Parked, int, float]], list[Workload]]
        ] = {}
        self._ready: set[tuple[int, int]] = set()
        self._version = [0] * len(self.cqs)
        self._preempts = [
            cq.preemption.within_cluster_queue != NEVER
            or cq.preemption.reclaim_within_cohort != NEVER
            for cq in self.cqs
        ]
        self.fair = tenancy.fair_sharing.enabled
        # Every waiting queue of a tree is checked again after each change of its quota: fair
        # sharing's order and targets change with every share, and the reference does so.
        self._recheck = self.fair or self.recheck_all
        # Under fair sharing, the queues of each tree with pending workloads.
        self._waiting_in_tree: dict[int, set[int]] = {r: set() for r in self._tree}
        self._strict = [cq.queueing_strategy == STRICT_FIFO for cq in self.cqs]
        self._needs: dict[tuple[int, Any], list[tuple[_Group, list[tuple[str, float]]]]] = {}
        self._option_cache: dict[tuple[int, Any], FlavorOptions] = {}
        self._fast_cache: dict[tuple[int, Any], _Fast | None] = {}
        self._tainted = {
            name
            for name, flavor in tenancy.flavors.items()
            if any(t.effect in HARD_EFFECTS for t in flavor.node_taints)
        }
        self._flavor_type = {
            fl.name: fl.gpu_type for groups in self._groups for g in groups for fl in g.flavors
        }
        self.typed = any(t is not None for t in self._flavor_type.values())
        # Admitted workloads per tree and priority, in admission order: while admission times
        # never decrease (``_ordered``), the most recently admitted come last, so classic
        # preemption's candidates of other queues stream in their order (:meth:`_reclaimable`)
        # instead of being gathered from every queue of the tree and sorted.
        self._levels: dict[int, dict[int, dict[Workload, None]]] = {r: {} for r in self._tree}
        self._latest = float("-inf")
        self._ordered = True
        parent, n_cqs = self.quota.parent, len(self.cqs)
        self._flat = [
            (up := parent[i]) is not None
            and parent[up] is None
            and all(c < n_cqs for c in self.quota.children[up])
            for i in range(n_cqs)
        ]
        self._deep = {
            r: r >= n_cqs and any(c >= n_cqs for c in self.quota.children[r]) for r in self._tree
        }
        # Admitted workloads set up as being evicted (:meth:`admit_with`): they come first
        # among preemption candidates. A run evicts at once, so it has none.
        self.evicting = 0

    def level(self, cq: int, priority: int) -> dict[Workload, None]:
        """The admitted workloads of ``cq``'s tree at ``priority``, in admission order: the
        :attr:`Workload.level` of a workload of ``cq`` at ``priority``."""
        levels = self._levels[self.quota.root[cq]]
        found = levels.get(priority)
        if found is None:
            found = levels[priority] = {}
        return found

    def gpu_type_of(self, wl: Workload) -> str | None:
        """The GPU type the flavors of an admitted workload select (None: any type)."""
        if not self.typed:
            return None
        for name in wl.flavors:
            gpu_type = self._flavor_type.get(name)
            if gpu_type is not None:
                return gpu_type
        return None

    def _cq_groups(self, cq: ClusterQueue, gpu_types: list[str]) -> list[_Group]:
        groups: list[_Group] = []
        for group in cq.resource_groups:
            kinds = tuple(resource_kind(r) for r in group.covered)
            flavors: list[_Flavor] = []
            for fq in group.flavors:
                frs = {resource_kind(r): self.quota.frs[(fq.flavor, r)] for r in fq.resources}
                labels = self.tenancy.flavors[fq.flavor].node_labels
                flavors.append(_Flavor(fq.flavor, flavor_gpu_type(labels, gpu_types), frs))
            groups.append(_Group(kinds, tuple(flavors)))
        return groups

    def _needed(self, wl: Workload) -> list[tuple[_Group, list[tuple[str, float]]]]:
        """The resource groups of ``wl``'s queue it asks something of, each with its (kind,
        amount) requests there; shared by workloads of one shape."""
        if wl.needs is not None:
            return wl.needs
        key = (wl.cq, wl.shape_key())
        found = self._needs.get(key)
        if found is None:
            found = self._needs[key] = [
                (group, needed)
                for group in self._groups[wl.cq]
                if (needed := [(k, a) for k in group.kinds if (a := wl.requests.get(k, 0.0)) > 0])
            ]
        wl.needs = found
        return found

    def flavor_options(self, wl: Workload) -> FlavorOptions:
        """Per resource group ``wl`` asks something of, the flavors its GPU type allows, in
        order, each with the (flavor-resource, amount) pairs it would charge."""
        if wl.options is not None:
            return wl.options
        key = (wl.cq, wl.shape_key())
        found = self._option_cache.get(key)
        if found is None:
            found = self._option_cache[key] = [
                [
                    (fl, tuple((fl.frs[k], a) for k, a in needed))
                    for fl in group.flavors
                    if self._may_use(wl, fl)
                ]
                for group, needed in self._needed(wl)
            ]
            self._fast_cache[key] = self._fast_of(wl.cq, found)
        wl.options = found
        wl.fast = self._fast_cache[key]
        return found

    def _may_use(self, wl: Workload, fl: _Flavor) -> bool:
        """Whether ``wl`` may take flavor ``fl``: its GPU type, its pods' node selector,
        affinity and tolerations against the flavor's labels and taints
        (:mod:`dlsched.tenancy.node_match`)."""
        gpu_type = wl.gpu_type
        if gpu_type and fl.gpu_type and not gpu_type_matches(gpu_type, fl.gpu_type):
            return False
        if wl.pods or fl.name in self._tainted:
            return pods_fit(self.tenancy.flavors[fl.name], wl.pods)
        return True

    def _fast_of(self, cq: int, options: FlavorOptions) -> _Fast | None:
        """The :class:`_Fast` of a workload of ``cq`` with flavor ``options``, if it has one."""
        if not self.quota.plain[cq] or len(options) != 1 or len(options[0]) != 1:
            return None
        flavor, pairs = options[0][0]
        if len(pairs) != 1:
            return None
        fr, amount = pairs[0]
        names = (flavor.name,)
        root = self.quota.root[cq]
        nominal = self.quota.nominal[cq].get(fr, 0.0)
        pol = self.cqs[cq].preemption
        # As Kueue's flavor assigner: preemption is looked for when the request fits the
        # nominal quota or the queue may borrow while preempting; in a deeper tree also when
        # a cohort below the root holds it, which changes with usage: no fast path then.
        eligible = (
            amount <= nominal + EPS
            or pol.borrow_within_cohort != NEVER
            or (self.fair and pol.reclaim_within_cohort != NEVER)
        )
        if not eligible and self.quota.parent[cq] is not None and not self._flat[cq]:
            return None
        if self._preempts[cq] and eligible and amount <= self.quota.potential(cq, fr) + EPS:
            otherwise = _Assignment(PREEMPTS, {fr: amount}, amount > nominal + EPS, names)
        else:
            otherwise = _Assignment(NO_FIT, {}, False, ())
        return _Fast(
            root,
            fr,
            amount,
            self.quota.nominal[cq].get(fr, 0.0),
            self.quota.subtree[root].get(fr, 0.0),
            _Assignment(FIT, {fr: amount}, False, names),
            _Assignment(FIT, {fr: amount}, True, names),
            self.quota.chain_usage[cq],
            otherwise,
        )

    # ---- workloads in and out ------------------------------------------------------------------
    def never_admitted(self, wl: Workload) -> str | None:
        """Why ``wl`` can never be admitted in its ClusterQueue (None if it can)."""
        cq = self.cqs[wl.cq]
        kinds = self._kinds[wl.cq]
        for kind, amount in wl.requests.items():
            if amount > 0 and kind not in kinds and kind != PODS:
                return f"ClusterQueue {cq.name!r} has no quota for {kind}"
        for group, needed in self._needed(wl):
            usable = [fl for fl in group.flavors if self._may_use(wl, fl)]
            if not usable:
                names = ", ".join(fl.name for fl in group.flavors)
                return (
                    f"no flavor of ClusterQueue {cq.name!r} ({names}) fits its pods: GPU "
                    "type, node selector or affinity against the flavor's labels, or a taint "
                    "they do not tolerate"
                )
            if not any(
                all(a <= self.quota.potential(wl.cq, fl.frs[k]) + EPS for k, a in needed)
                for fl in usable
            ):
                asked = ", ".join(f"{a:g} {k}" for k, a in needed)
                return f"asks {asked}, more than ClusterQueue {cq.name!r} can ever get"
        return None

    def submit(self, wl: Workload) -> None:
        """``wl`` waits for admission (new, or back after an eviction)."""
        cq = wl.cq
        count = self.pending_count[cq]
        self.pending_count[cq] = count + 1
        if not self._recheck:
            # Queued (or admitted at once) by the next :meth:`schedule` (:meth:`_settle`).
            self._new[wl] = None
            return
        if not count and self.fair:
            self._waiting_in_tree[self.quota.root[cq]].add(cq)
        self._enqueue(wl)

    def _enqueue(self, wl: Workload) -> None:
        """Put submitted ``wl`` (counted in :attr:`pending_count`) in its queue's heap."""
        cq = wl.cq
        buckets = self.pending[cq]
        shape = wl.shape if wl.shape is not None else wl.shape_key()
        entry = (-wl.priority, wl.created, wl.seq, wl)
        heap = buckets.get(shape)
        if heap is None:
            buckets[shape] = [entry]
        else:
            heappush(heap, entry)
        self._queued[self.quota.root[cq]] += 1
        self._dirty.add(cq)

    def release(self, wl: Workload) -> None:
        """An admitted workload ended or was evicted: its quota is free again."""
        freed, level = wl.assignment, wl.level
        assert freed is not None and level is not None
        cq = wl.cq
        fast = wl.fast
        if fast is not None:
            amount = fast.amount
            self.quota.discharge(cq, fast.fr, amount)
            root = fast.root
        else:
            self.quota.remove(cq, freed)
            amount = sum(freed.values())
            root = self.quota.root[cq]
        del self.admitted[cq][wl]
        del level[wl]
        wl.assignment = None
        released = self._released[root] = self._released[root] + amount
        if self._recheck:
            self._dirty.update(self._waiting(root))
            return
        parked = self._parked[root]
        while parked and parked[0][0] <= released:
            _, version, waiting = heappop(parked)
            if version == self._version[waiting]:
                self._dirty.add(waiting)
        if self.pending_count[cq] and not self._parked_as_before(cq):
            # Its own usage fell: it may now be able to reclaim.
            self._dirty.add(cq)
        if self._buckets and self._simple[root]:
            for fr in freed:
                if self._buckets.get((root, fr)):
                    self._ready.add((root, fr))

    def admit_now(self, wl: Workload, now: float) -> bool:
        """Admit ``wl`` (not pending) if it fits without preemption; for setting up a state."""
        a = self._assign(wl)
        if a.mode != FIT:
            return False
        self.at(now)
        self._take(wl, a, now, a.borrows)
        if self.pending_count[wl.cq]:
            # Its heads may now preempt ``wl``, and whether they borrow changed.
            self._dirty.add(wl.cq)
        return True

    # ---- the cycle -------------------------------------------------------------------------------
    def schedule(self, now: float) -> list[Admitted]:
        """Admit what can be admitted at ``now`` (module docstring); evicted workloads are no
        longer admitted nor pending (the caller requeues them with :meth:`submit` once they
        stopped)."""
        out: list[Admitted] = []
        self.at(now)
        if self._new:
            self._settle(now, out)
        while self._dirty or self._ready:
            dirty, self._dirty = self._dirty, set()
            ready = self._ready
            if ready:
                self._ready = set()
            candidates, preempting = self._candidates(dirty)
            streams = [(key, self._free(*key)) for key in sorted(ready)] if ready else []
            if not candidates and not streams:
                break
            if len(candidates) <= 1:
                pass
            elif self.fair:
                candidates.sort(
                    key=lambda c: (
                        self.quota.share(c[0].cq, c[1].request),
                        -c[0].priority,
                        c[0].created,
                        c[0].seq,
                    )
                )
            else:
                candidates.sort(
                    key=lambda c: (c[1].borrows, -c[0].priority, c[0].created, c[0].seq)
                )
            if streams or preempting:
                self._round(candidates, streams, now, out)
            else:
                self._plain_round(candidates, now, out)
        return out

    def _settle(self, now: float, out: list[Admitted]) -> None:
        """Admit at once the workloads submitted since the last round of each tree that has no
        other pending workload when they all fit its root's free quota together, as each asks
        one amount of one flavor-resource of a tree without limits (:class:`_Fast`); queue
        the others. Rounds would admit exactly those: they are the tree's only candidates,
        each fits at its turn whatever the order (the root is the only check), so none waits
        or preempts; each queue takes its own in heap order, so each borrows exactly as it
        would in the rounds."""
        new, self._new = self._new, {}
        trees: dict[int, list[Workload]] = {}
        for wl in new:
            if wl.options is None:
                self.flavor_options(wl)
            fast = wl.fast
            root = fast.root if fast is not None else self.quota.root[wl.cq]
            found = trees.get(root)
            if found is None:
                trees[root] = [wl]
            else:
                found.append(wl)
        pending = self.pending_count
        for root, wls in trees.items():
            if self._queued[root] or not self._fit_together(wls):
                for wl in wls:
                    self._enqueue(wl)
                continue
            if len(wls) > 1:
                wls.sort(key=queue_order)
            for wl in wls:
                assert wl.fast is not None
                assignment = wl.fast.fitting()
                self._take(wl, assignment, now, assignment.borrows)
                pending[wl.cq] -= 1
                out.append(Admitted(wl, ()))

    @staticmethod
    def _fit_together(wls: list[Workload]) -> bool:
        """Whether ``wls`` (of one tree) each have a fast path and all fit its root's free
        quota at once (without the tolerance a single check allows, so that they fit in any
        order)."""
        taken: dict[int, float] = {}
        for wl in wls:
            fast = wl.fast
            if fast is None:
                return False
            fr = fast.fr
            used = taken.get(fr)
            if used is None:
                used = fast.usages[-1][fr]
            used = taken[fr] = used + fast.amount
            if used > fast.capacity:
                return False
        return True

    def at(self, now: float) -> None:
        """Admissions happen at ``now``: once times go back, admission order is no longer
        the order of admission times."""
        if now < self._latest:
            self._ordered = False
        self._latest = now

    def _candidates(self, dirty: set[int]) -> tuple[list[_Candidate], bool]:
        """Each of the ``dirty`` queues' candidate (in queue order, those that have one), and
        whether some candidate preempts."""
        version, pending, queued = self._version, self.pending_count, self.pending
        candidates: list[_Candidate] = []
        preempting = False
        for cq in sorted(dirty) if len(dirty) > 1 else dirty:
            # Checked here: whatever bucket entry it had is void.
            version[cq] += 1
            if not pending[cq]:
                continue
            buckets = queued[cq]
            if len(buckets) == 1:
                # The common case, as :meth:`_candidate` and :meth:`_assign` would find it.
                (heap,) = buckets.values()
                wl = heap[0][3]
                fast = wl.fast
                if fast is not None:
                    assignment = fast.assign()
                    if assignment.mode == FIT:
                        candidates.append((wl, assignment, ()))
                        continue
            found = self._candidate(cq)
            if found is not None:
                candidates.append(found)
                preempting = preempting or bool(found[2])
        return candidates, preempting

    def _plain_round(
        self,
        candidates: list[_Candidate],
        now: float,
        out: list[Admitted],
    ) -> None:
        """:meth:`_round` for a round that streams nothing and preempts nothing: admit the
        sorted candidates in order while they fit."""
        quota = self.quota
        dirty = self._dirty
        changed = False
        for wl, assignment, _ in candidates:
            cq = wl.cq
            if changed:
                # Until the first admission the quota is as the candidates saw it.
                fast = wl.fast
                if fast is not None:
                    ok = fast.amount <= fast.capacity - fast.usages[-1][fast.fr] + EPS
                else:
                    ok = quota.fits(cq, assignment.request)
                if not ok:
                    dirty.add(cq)
                    continue
            left = self._pop(wl)
            self._take(wl, assignment, now, assignment.borrows)
            changed = True
            if left:
                # Its next head is a candidate of the next round.
                dirty.add(cq)
            out.append(Admitted(wl, ()))

    def _round(
        self,
        candidates: list[_Candidate],
        streams: list[tuple[tuple[int, int], float]],
        now: float,
        out: list[Admitted],
    ) -> None:
        """Admit a round's sorted candidates in order while they fit, merging in the bucket
        queues of ``streams`` where they sort."""
        # Until the first admission of a round the quota is as the candidates saw it, and
        # until the first eviction each queue's own usage is (one candidate per queue).
        changed = evicted = False
        at = 0
        # The sort key of the last candidate or bucket head taken up: a bucket head sorting
        # before it had its turn (an eviction may free quota for it later in the round).
        floor: tuple[Any, ...] = ()
        deferred: list[tuple[tuple[int, int], float, _Parked]] = []
        while True:
            streamed = self._stream_next(streams, deferred, floor) if streams else None
            if streamed is not None and (
                at == len(candidates) or self._before(streamed[1], candidates[at])
            ):
                bucket, entry = streamed
                heappop(bucket)
                floor = entry[:4]
                wl = entry.head
                flavor, pairs = (wl.options or self.flavor_options(wl))[0][0]
                assignment = _Assignment(FIT, dict(pairs), entry.borrows, (flavor.name,))
                self._pop(wl)
                self._take(wl, assignment, now, None if evicted else entry.borrows)
                changed = True
                # One candidate per queue and round: its other heads' entries are void.
                self._version[wl.cq] += 1
                if self.pending_count[wl.cq]:
                    self._dirty.add(wl.cq)
                out.append(Admitted(wl, ()))
                continue
            if at == len(candidates):
                for key, amount, entry in deferred:
                    heappush(self._buckets.setdefault(key, {}).setdefault(amount, []), entry)
                if changed:
                    # A bucket queue skipped at its turn is a candidate again next round,
                    # with what is free then (as a skipped candidate is re-checked).
                    self._ready.update(key for key, _ in streams)
                return
            wl, assignment, targets = candidates[at]
            at += 1
            if streams:
                floor = (assignment.borrows, -wl.priority, wl.created, wl.seq)
            if targets:
                if any(t.workload.assignment is None for t in targets):
                    self._dirty.add(wl.cq)
                    continue
                for t in targets:
                    self.quota.remove(t.workload.cq, t.workload.assignment or {})
                ok = self.quota.fits(wl.cq, assignment.request)
                for t in targets:
                    self.quota.add(t.workload.cq, t.workload.assignment or {})
                if not ok:
                    self._dirty.add(wl.cq)
                    continue
                for t in targets:
                    self.release(t.workload)
                evicted = True
            elif changed and not self.quota.fits(wl.cq, assignment.request):
                self._dirty.add(wl.cq)
                continue
            self._pop(wl)
            self._take(wl, assignment, now, None if evicted else assignment.borrows)
            changed = True
            if self.pending_count[wl.cq]:
                # Its next head is a candidate of the next round.
                self._dirty.add(wl.cq)
            out.append(Admitted(wl, tuple(targets) if targets else ()))

    @staticmethod
    def _before(entry: _Parked, candidate: _Candidate) -> bool:
        """Whether a bucket queue's head sorts before ``candidate``."""
        wl, assignment, _ = candidate
        return entry[:4] < (assignment.borrows, -wl.priority, wl.created, wl.seq)

    def _free(self, root: int, fr: int) -> float:
        """What the root of a tree without limits has free of ``fr`` (what each of its
        queues may take)."""
        return self.quota.subtree[root].get(fr, 0.0) - self.quota.usage[root].get(fr, 0.0)

    def _valid(self, entry: _Parked) -> bool:
        """Whether a bucket entry still stands for its queue's parked head."""
        return entry.version == self._version[entry.cq] and entry.head.assignment is None

    def _stream_next(
        self,
        streams: list[tuple[tuple[int, int], float]],
        deferred: list[tuple[tuple[int, int], float, _Parked]],
        floor: tuple[Any, ...],
    ) -> tuple[list[_Parked], _Parked] | None:
        """The bucket head that sorts first among those that are their queue's candidate this
        round (its first head whose amount the root had free when the round began), sort
        after ``floor`` and whose amount the root has free now, with its bucket; None when
        there is none. Those are exactly the bucket queues' candidates that fit at their turn:
        quota an eviction frees during the round serves only those whose turn is still to
        come. Stale entries are dropped; valid heads that are not their queue's candidate, or
        whose turn passed, go to ``deferred`` until the round ends."""
        while True:
            best: tuple[list[_Parked], _Parked, float, tuple[int, int], float] | None = None
            for key, free_then in streams:
                buckets = self._buckets.get(key)
                if not buckets:
                    continue
                limit = min(free_then, self._free(*key)) + EPS
                for amount, bucket in list(buckets.items()):
                    if amount > limit:
                        continue
                    while bucket:
                        top = bucket[0]
                        if not self._valid(top):
                            heappop(bucket)
                        elif top[:4] < floor:
                            deferred.append((key, amount, heappop(bucket)))
                        else:
                            break
                    if not bucket:
                        del buckets[amount]
                        continue
                    if best is None or bucket[0][:4] < best[1][:4]:
                        best = (bucket, bucket[0], free_then, key, amount)
            if best is None:
                return None
            bucket, entry, free_then, key, amount = best
            if entry.before > free_then + EPS:
                return bucket, entry
            deferred.append((key, amount, heappop(bucket)))

    def withdraw(self, wl: Workload) -> bool:
        """``wl`` leaves without being admitted (its job was cancelled while it waited);
        False if it was not waiting."""
        if wl in self._new:
            del self._new[wl]
            self.pending_count[wl.cq] -= 1
            return True
        heap = self.pending[wl.cq].get(wl.shape, [])
        at = next((i for i, entry in enumerate(heap) if entry[3] is wl), None)
        if at is None:
            return False
        heap[at] = heap[-1]
        heap.pop()
        heapify(heap)
        self._dirty.add(wl.cq)
        self._left(wl, heap)
        return True

    def _pop(self, wl: Workload) -> int:
        """Take ``wl``, the head of its heap, out of the pending workloads; how many of its
        queue's workloads are still pending."""
        cq = wl.cq
        heap = self.pending[cq][wl.shape]
        assert heap[0][3] is wl
        heappop(heap)
        return self._left(wl, heap)

    def _left(self, wl: Workload, heap: list[Any]) -> int:
        """Bookkeeping after ``wl`` left its ``heap`` of pending workloads; how many of its
        queue's workloads are still pending."""
        cq = wl.cq
        if not heap:
            del self.pending[cq][wl.shape]
        left = self.pending_count[cq] = self.pending_count[cq] - 1
        root = self.quota.root[cq]
        self._queued[root] -= 1
        if not left and self.fair:
            self._waiting_in_tree[root].discard(cq)
        return left

    def _waiting(self, root: int) -> Iterable[int]:
        """The queues of tree ``root`` with pending workloads."""
        if self.fair:
            return self._waiting_in_tree[root]
        pending = self.pending_count
        return [cq for cq in self._tree[root] if pending[cq]]

    def _take(self, wl: Workload, a: _Assignment, now: float, borrows: bool | None) -> None:
        """Admit ``wl`` with assignment ``a``; ``borrows``: whether it borrows, when known (the
        assignment's, if the queue's usage has not changed since), None to find out."""
        cq = wl.cq
        root = self.quota.root[cq]
        fast = wl.fast
        if fast is not None:
            self.quota.charge(cq, fast.fr, fast.amount)
        else:
            self.quota.add(cq, a.request)
        wl.assignment = a.request
        wl.flavors = a.flavors
        if borrows is None:
            borrows = any(self.quota.borrowing(cq, fr) for fr in a.request)
        wl.borrows = borrows
        wl.admitted_at = now
        self.admitted[cq][wl] = None
        level = wl.level
        if level is None:
            level = wl.level = self.level(cq, wl.priority)
        level[wl] = None
        if self._recheck:
            # Fair sharing: a share grew, which may let others preempt by it.
            self._dirty.update(self._waiting(root))
        elif borrows or (self._deep[root] and self._cohort_over(cq, a.request)):
            # In a deeper tree an admission within its queue's quota can still take a cohort
            # past its own, which makes that cohort's borrowers reclaimable.
            hungry = self._hungry[root]
            if hungry:
                self._dirty |= hungry
                hungry.clear()
        if self._watching:
            watch = self._watch[root]
            while watch and -watch[0][0] > wl.priority:
                _, version, waiting = heappop(watch)
                if version == self._version[waiting]:
                    self._dirty.add(waiting)

    def _cohort_over(self, cq: int, request: Mapping[int, float]) -> bool:
        """Whether a cohort of ``cq``'s chain uses more than its subtree quota in some
        flavor-resource of ``request``."""
        quota = self.quota
        for node in quota.chain[cq][1:]:
            usage, subtree = quota.usage[node], quota.subtree[node]
            if any(usage.get(fr, 0.0) > subtree.get(fr, 0.0) + EPS for fr in request):
                return True
        return False

    def _park(self, cq: int, heads: list[Workload]) -> None:
        """No head of ``cq`` can be admitted now: wait for enough released quota, or for a
        borrower to reclaim from (see ``__init__``)."""
        if self._recheck or not heads:
            return
        root = self.quota.root[cq]
        self._version[cq] += 1
        settled = self._cannot_preempt(cq, heads)
        pol = self.cqs[cq].preemption
        if (
            settled
            and pol.reclaim_within_cohort == LOWER_PRIORITY
            and self.quota.parent[cq] is not None
            and self._may_reclaim(cq, heads)
        ):
            # Settled for want of lower-priority workloads to reclaim: a queue of its tree
            # admitting one may change that.
            self._watch_for_lower(root, cq, max(wl.priority for wl in heads))
        if settled and self._simple[root]:
            needs = self._single_needs(heads)
            if needs is not None:
                usage, nominal = self.quota.usage[cq], self.quota.nominal[cq]
                entries = []
                smallest = float("inf")
                for wl, (fr, amount) in zip(heads, needs, strict=True):
                    if amount >= smallest:
                        # An earlier head asks no more: whenever this one would fit, that
                        # one is the queue's candidate.
                        continue
                    bucket = self._buckets.setdefault((root, fr), {}).setdefault(amount, [])
                    borrows = usage.get(fr, 0.0) + amount > nominal.get(fr, 0.0) + EPS
                    entry = _Parked(
                        borrows,
                        -wl.priority,
                        wl.created,
                        wl.seq,
                        self._version[cq],
                        cq,
                        wl,
                        smallest,
                    )
                    smallest = amount
                    heappush(bucket, entry)
                    entries.append((entry, fr, amount))
                self._in_buckets[cq] = (self._version[cq], entries, heads)
                return
        # Released quota together with what preempting frees may admit a head of a queue that
        # can preempt, whatever its deficit: such a queue waits for any release.
        deficit = min(self._deficit(wl) for wl in heads) if settled else 0.0
        heappush(self._parked[root], (self._released[root] + deficit - EPS, self._version[cq], cq))
        if not settled and self._may_reclaim(cq, heads):
            self._hungry[root].add(cq)

    def _parked_as_before(self, cq: int) -> bool:
        """Whether bucket queue ``cq``, after a release of its own, would be parked again
        with the entries it has (so that checking it again can be skipped): it has not been
        checked since it was parked, each head borrows exactly when its entry says, and it
        still cannot preempt. A head that now fits is then streamed from its bucket, as
        after anyone's release."""
        found = self._in_buckets.get(cq)
        if found is None or found[0] != self._version[cq]:
            return False
        usage, nominal = self.quota.usage[cq], self.quota.nominal[cq]
        for entry, fr, amount in found[1]:
            if (usage.get(fr, 0.0) + amount > nominal.get(fr, 0.0) + EPS) != entry.borrows:
                return False
        return self._cannot_preempt(cq, found[2])

    def _may_reclaim(self, cq: int, heads: Sequence[Workload]) -> bool:
        """Whether reclaiming from borrowing queues could admit a head of ``cq`` (by its
        policies and nominal quota, whatever the others hold now)."""
        pol = self.cqs[cq].preemption
        # In a deeper tree a cohort's quota can give a head a hierarchical advantage.
        return pol.reclaim_within_cohort != NEVER and (
            pol.borrow_within_cohort != NEVER
            or not self._flat[cq]
            or any(self._within_nominal(wl) for wl in heads)
        )

    def _watch_for_lower(self, root: int, cq: int, priority: int) -> None:
        """Wake parked ``cq`` when its tree admits a workload of priority below ``priority``.
        Entries of queues checked since are void; they are dropped once the heap holds twice
        as many entries as the tree has queues."""
        watch = self._watch[root]
        if len(watch) >= 2 * len(self._tree[root]):
            version = self._version
            watch[:] = [e for e in watch if e[1] == version[e[2]]]
            heapify(watch)
        heappush(watch, (-priority, self._version[cq], cq))
        self._watching = True

    def _cannot_preempt(self, cq: int, heads: Sequence[Workload]) -> bool:
        """Whether none of ``heads`` (of ``cq``) can be admitted by preempting now (classic
        preemption; never under fair sharing). That is, both:

        - ``withinClusterQueue`` lets no head preempt any admitted workload of ``cq``;
        - reclaim cannot help: ``reclaimWithinCohort`` is ``Never``; or it is
          ``LowerPriority`` and no other queue of the tree holds a workload of lower priority
          than the highest head; or the queue may not borrow while preempting and, for every
          head, some resource group has no flavor within the queue's nominal quota, in a
          tree of one cohort (:meth:`_targets` then finds no candidates).

        Of these, only other queues' admissions can change while ``cq`` waits (its own
        admissions, releases and new heads mark it dirty): see :meth:`_watch_for_lower`."""
        if self.fair:
            return False
        pol = self.cqs[cq].preemption
        if pol.within_cluster_queue != NEVER and self._victims_within(cq, heads):
            return False
        if pol.reclaim_within_cohort == NEVER:
            return True
        if pol.reclaim_within_cohort == LOWER_PRIORITY and not self._lower_elsewhere(
            cq, max(wl.priority for wl in heads)
        ):
            return True
        if pol.borrow_within_cohort != NEVER or not self._flat[cq]:
            # In a deeper tree a cohort's quota can give the head a hierarchical advantage.
            return False
        usage, nominal = self.quota.usage[cq], self.quota.nominal[cq]

        def within(pairs: tuple[tuple[int, float], ...]) -> bool:
            return all(
                usage.get(fr, 0.0) < nominal.get(fr, 0.0)
                and usage.get(fr, 0.0) + a <= nominal.get(fr, 0.0) + EPS
                for fr, a in pairs
            )

        for wl in heads:
            fast = wl.fast
            if fast is not None:
                used = usage.get(fast.fr, 0.0)
                if used < fast.nominal and used + fast.amount <= fast.nominal + EPS:
                    return False
            elif all(any(within(pairs) for _, pairs in group) for group in self.flavor_options(wl)):
                return False
        return True

    def _victims_within(self, cq: int, heads: Sequence[Workload]) -> bool:
        """Whether ``withinClusterQueue`` lets some head preempt some workload of ``cq``."""
        admitted = self.admitted[cq]
        if not admitted:
            return False
        if self.cqs[cq].preemption.within_cluster_queue == LOWER_PRIORITY:
            return min(w.priority for w in admitted) < max(wl.priority for wl in heads)
        return any(self.within_allows(wl, w) for w in admitted for wl in heads)

    def _lower_elsewhere(self, cq: int, priority: int) -> bool:
        """Whether another queue of ``cq``'s tree has an admitted workload of lower priority
        than ``priority``."""
        levels = self._levels[self.quota.root[cq]]
        lower = sum(len(level) for p, level in levels.items() if p < priority)
        return lower > 0 and lower > sum(1 for w in self.admitted[cq] if w.priority < priority)

    def _single_needs(self, heads: list[Workload]) -> list[tuple[int, float]] | None:
        """Each head's (flavor-resource, amount) when every head asks one amount of the same
        one flavor-resource (one resource group with one flavor); else None."""
        found: list[tuple[int, float]] = []
        for wl in heads:
            options = wl.options if wl.options is not None else self.flavor_options(wl)
            if len(options) != 1 or len(options[0]) != 1 or len(options[0][0][1]) != 1:
                return None
            found.append(options[0][0][1][0])
            if found[-1][0] != found[0][0]:
                return None
        return found

    def _within_nominal(self, wl: Workload) -> bool:
        """Whether ``wl`` would fit its queue's nominal quota in some flavor of each group (what
        classic reclaim needs)."""
        quota = self.quota
        usage, nominal = quota.usage[wl.cq], quota.nominal[wl.cq]
        for group, needed in self._needed(wl):
            if not any(
                all(
                    usage.get(fl.frs[k], 0.0) + a <= nominal.get(fl.frs[k], 0.0) + EPS
                    for k, a in needed
                )
                for fl in group.flavors
            ):
                return False
        return True

    def _deficit(self, wl: Workload) -> float:
        """How much more quota ``wl`` needs than its queue may take now (its best flavors)."""
        available = self.quota.available
        total = 0.0
        for options in self.flavor_options(wl):
            best = float("inf")
            for _, pairs in options:
                lack = sum(max(0.0, a - available(wl.cq, fr)) for fr, a in pairs)
                best = min(best, lack)
            total += best
        return total

    def _candidate(self, cq: int) -> _Candidate | None:
        buckets = self.pending[cq]
        if len(buckets) == 1:
            heads = [heap[0] for heap in buckets.values()]
        else:
            heads = sorted(heap[0] for heap in buckets.values())
        strict = self._strict[cq]
        tried: list[Workload] = []
        for entry in heads:
            wl = entry[3]
            a = self._assign(wl)
            if a.mode == FIT:
                return wl, a, ()
            if a.mode == PREEMPTS and not self._cannot_preempt(cq, (wl,)):
                targets = self._targets(wl, a)
                if targets:
                    return wl, a, targets
            tried.append(wl)
            if strict:
                break
        self._park(cq, tried)
        return None

    def _assign(self, wl: Workload) -> _Assignment:
        """Flavor assignment (module docstring): the mode is the worst over resource groups."""
        fast = wl.fast
        if fast is not None:
            return fast.assign()
        request: dict[int, float] = {}
        mode, borrows = FIT, False
        flavors: list[str] = []
        for options in wl.options if wl.options is not None else self.flavor_options(wl):
            choice = choose(self, wl, [(fl.name, pairs) for fl, pairs in options])
            if choice is None:
                return _Assignment(NO_FIT, {}, False, ())
            if choice.mode.mode != FITS:
                mode = PREEMPTS
            borrows = borrows or choice.mode.borrowing > 0
            flavors.append(choice.flavor)
            request.update((fr, amount) for fr, amount, _ in choice.resources)
        return _Assignment(mode, request, borrows, tuple(flavors))

    # ---- for Kueue's cycle (dlsched.tenancy.cycle) ---------------------------------------------
    def assignment(self, wl: Workload) -> _Assignment:
        """``wl``'s flavor assignment against the quota now (mode ``FIT``, ``PREEMPTS`` or
        ``NO_FIT``, the flavor-resources it charges, whether it borrows, its flavors), as
        Kueue's flavor assigner gives it: a request that needs preemption is ``PREEMPTS``
        even where no policy allows any (Kueue's cycle tells those apart, the fixpoint's
        fast path need not), and a resource its ClusterQueue has no quota for is ``NO_FIT``."""
        covered = self._kinds[wl.cq]
        if any(a > 0 and k not in covered and k != PODS for k, a in wl.requests.items()):
            return _Assignment(NO_FIT, {}, False, ())
        fast = wl.fast
        if fast is not None:
            found = fast.assign()
            if found.mode == FIT:
                return found
            wl.fast = None
            try:
                return self._assign(wl)
            finally:
                wl.fast = fast
        return self._assign(wl)

    def borrowing_level(self, wl: Workload, request: Mapping[int, float]) -> int:
        """How high in its cohort tree ``wl`` borrows to take ``request`` now (0: within its
        queue's nominal quota; Kueue's ``FindHeightOfLowestSubtreeThatFits``, the
        ``Borrowing`` by which its cycle orders entries)."""
        cq = wl.cq
        levels = [lowest_fitting(self.quota, cq, fr, v)[0] for fr, v in request.items()]
        return max(levels, default=0)

    def evictions_for(self, wl: Workload, a: _Assignment) -> list[Eviction]:
        """The preemption targets of ``wl`` under assignment ``a`` (none: no candidates)."""
        if self._cannot_preempt(wl.cq, (wl,)):
            return []
        return self._targets(wl, a)

    def reserve(
        self, wl: Workload, request: dict[int, float], flavors: tuple[str, ...], now: float
    ) -> None:
        """Admit pending ``wl`` (not in this Admission's own queues) charging ``request``."""
        self._take(wl, _Assignment(FIT, request, False, flavors), now, None)

    def namespace_matches(self, cq: int, namespace: str) -> bool:
        """Whether ClusterQueue ``cq``'s ``namespaceSelector`` admits workloads of
        ``namespace`` (by the labels the manifests give it; a nil selector admits none)."""
        selector = self.cqs[cq].namespace_selector
        if selector is None:
            return False
        return selector.matches(self.tenancy.namespaces.get(namespace, {}))

    # ---- preemption --------------------------------------------------------------------------
    def dry_run(self, wl: Workload) -> DryRun:
        """Would ``wl`` (not submitted) be admitted now, at its queue's head (Kueue's
        ``kueuectl simulate`` question)? Changes nothing."""
        cq = wl.cq
        ahead = sum(
            1
            for heap in self.pending[cq].values()
            for entry in heap
            if queue_order(entry[3]) < queue_order(wl)
        ) + sum(1 for w in self._new if w.cq == cq and queue_order(w) < queue_order(wl))
        reason = self.never_admitted(wl)
        if reason is not None:
            return DryRun(False, (), False, (), reason, ahead)
        a = self._assign(wl)
        if a.mode == FIT:
            return DryRun(True, a.flavors, a.borrows, (), None, ahead)
        name = self.cqs[cq].name
        if a.mode == PREEMPTS:
            targets = () if self._cannot_preempt(cq, (wl,)) else tuple(self._targets(wl, a))
            if targets:
                return DryRun(True, a.flavors, a.borrows, targets, None, ahead)
            why = (
                f"quota: ClusterQueue {name!r} has not enough free now, and no workload its "
                "preemption policies allow it to evict frees enough"
            )
            return DryRun(False, a.flavors, a.borrows, (), why, ahead)
        why = (
            f"quota: it needs {self._deficit(wl):g} more than ClusterQueue {name!r} may take "
            "now (its unused quota and what its cohort lends), and preemption is not looked "
            "for beyond the nominal quota without borrowWithinCohort"
        )
        return DryRun(False, (), False, (), why, ahead)

    def assign_flavors(self, wl: Workload, oracle: Oracle | None = None) -> list[Choice | None]:
        """Per resource group ``wl`` asks something of, the flavor Kueue's flavor assigner
        chooses with each resource's mode (:mod:`dlsched.tenancy.flavor_assignment`), None
        where none fits; ``oracle`` stands in for simulated preemption (a test's stub). For a
        dry run and the conformance suite; changes nothing."""
        return [
            choose(self, wl, [(fl.name, pairs) for fl, pairs in options], oracle)
            for options in self.flavor_options(wl)
        ]

    def within_allows(self, wl: Workload, other: Workload) -> bool:
        """Whether ``withinClusterQueue`` of ``wl``'s queue lets it preempt ``other`` (as Kueue:
        ``LowerOrNewerEqualPriority`` takes an equal priority only if created strictly later)."""
        policy = self.cqs[wl.cq].preemption.within_cluster_queue
        if policy == LOWER_PRIORITY:
            return other.priority < wl.priority
        if policy == LOWER_OR_NEWER_EQUAL:
            return other.priority < wl.priority or (
                other.priority == wl.priority and other.created > wl.created
            )
        return False

    def flat_tree(self, cq: int) -> bool:
        """Whether ``cq``'s parent is its tree's root and holds only ClusterQueues."""
        return self._flat[cq]

    def _targets(self, wl: Workload, a: _Assignment) -> list[Eviction]:
        """Classic preemption's targets (Kueue's ``getTargets``), or fair sharing's."""
        cq = wl.cq
        quota = self.quota
        req = a.request
        need = frozenset(fr for fr, v in req.items() if v > quota.available(cq, fr) + EPS)
        return self.targets_for(wl, req, need)

    def targets_for(
        self, wl: Workload, request: Mapping[int, float], need: frozenset[int]
    ) -> list[Eviction]:
        """The evictions that let ``wl`` take ``request`` (flavor-resource → amount), which
        needs preemption in the flavor-resources ``need``: classic preemption
        (:mod:`dlsched.tenancy.classic_preemption`) or fair sharing's; none when no set of
        evictions admits it. Changes nothing."""
        if self.fair:
            strategies = self.tenancy.fair_sharing.strategies
            found = fair_targets(self, wl, request, need, strategies)
        else:
            found = classic_targets(self, wl, request, need)
        return [Eviction(w, reason) for w, reason in found]

    def tree_queues(self, cq: int) -> list[int]:
        """The ClusterQueues of ``cq``'s cohort tree."""
        return self._tree[self.quota.root[cq]]

    def preemption_targets(
        self, wl: Workload, assignment: Mapping[str, tuple[str, bool]]
    ) -> list[Eviction]:
        """What Kueue's preemptor returns for ``wl`` (not admitted) given a flavor assignment:
        per resource kind it asks, ``(flavor, needs preemption)``. For a dry run and the
        conformance suite; changes nothing."""
        request, need = self._fixed_request(wl, {k: f for k, (f, _) in assignment.items()})
        preempt = {k for k, (_, p) in assignment.items() if p}
        frs = frozenset(fr for (k, fr) in need if k in preempt)
        return self.targets_for(wl, request, frs)

    def admit_with(self, wl: Workload, flavors: Mapping[str, str], now: float) -> None:
        """Admit ``wl`` (not pending) on the given flavor of each resource kind it asks,
        whether or not it fits: for setting up a state (tests, a snapshot)."""
        request, _ = self._fixed_request(wl, flavors)
        self.at(now)
        self._take(
            wl, _Assignment(FIT, request, False, tuple(dict.fromkeys(flavors.values()))), now, None
        )
        if wl.evicting:
            self.evicting += 1

    def _fixed_request(
        self, wl: Workload, flavors: Mapping[str, str]
    ) -> tuple[dict[int, float], list[tuple[str, int]]]:
        """``wl``'s requests charged to the given flavor of each kind: (fr → amount, and the
        (kind, fr) pairs)."""
        request: dict[int, float] = {}
        pairs: list[tuple[str, int]] = []
        for kind, amount in wl.requests.items():
            if amount <= 0:
                continue
            flavor = flavors.get(kind)
            if flavor is None:
                raise ValueError(f"no flavor given for {kind}")
            fr = self._fr_of_kind(wl.cq, flavor, kind)
            request[fr] = request.get(fr, 0.0) + amount
            pairs.append((kind, fr))
        return request, pairs

    def _fr_of_kind(self, cq: int, flavor: str, kind: str) -> int:
        for group in self._groups[cq]:
            for fl in group.flavors:
                if fl.name == flavor and kind in fl.frs:
                    return fl.frs[kind]
        for (name, resource), fr in self.quota.frs.items():
            if name == flavor and resource_kind(resource) == kind:
                return fr
        raise ValueError(f"flavor {flavor!r} has no quota for {kind} in the cohort tree")

    def reclaimable(self, wl: Workload, need: Iterable[int]) -> Iterator[Workload]:
        """The admitted workloads of the other queues of ``wl``'s tree that borrow some
        flavor-resource of ``need``, of a priority ``reclaimWithinCohort`` lets ``wl`` preempt,
        lowest priority first, then most recently admitted, then most recently created. Lazy:
        classic preemption usually needs the first few. Quota may be removed between items
        (never added beyond what it was), so a queue found not borrowing stays skipped. Once
        admission times went back (a live service's clock), admission order is not their
        order: then the candidates are sorted."""
        cq = wl.cq
        any_priority = self.cqs[cq].preemption.reclaim_within_cohort == ANY
        levels = self._levels[self.quota.root[cq]]
        allowed = [p for p in sorted(levels) if any_priority or p < wl.priority]
        borrowing: dict[int, bool] = {cq: False}
        need = tuple(need)

        def borrows(y: int) -> bool:
            found = borrowing.get(y)
            if found is None:
                found = borrowing[y] = self._still_borrowing(y, need)
            return found

        if self._ordered:
            for priority in allowed:
                for w in _newest_first(levels[priority]):
                    if borrows(w.cq):
                        yield w
        else:
            yield from sorted(
                (w for p in allowed for w in levels[p] if borrows(w.cq)), key=_recent_first
            )

    def _still_borrowing(self, y: int, need: Iterable[int]) -> bool:
        return any(self.quota.borrowing(y, fr) for fr in need)

    def _minimise(
        self, wl: Workload, req: Mapping[int, float], removed: list[Workload], borrow: bool
    ) -> list[Workload]:
        quota = self.quota
        kept = [removed[-1]]
        for c in reversed(removed[:-1]):
            quota.add(c.cq, c.assignment or {})
            if quota.fits(wl.cq, req, borrow):
                continue
            quota.remove(c.cq, c.assignment or {})
            kept.append(c)
        kept.reverse()
        return kept
