"""Fair-sharing preemption's targets, as Kueue's preemptor finds them with fair sharing on
(Kueue's ``fairPreemptions`` and ``pkg/scheduler/preemption/fairsharing``).

Candidates are the admitted workloads of the preemptor's queue that ``withinClusterQueue``
allows and those of every other queue of the tree that borrows in a flavor-resource needing
preemption and that ``reclaimWithinCohort`` allows; all must use such a flavor-resource. With
the incoming workload's usage added to its queue, queues are visited by dominant resource
share (DRS): from the root, the child (queue or cohort) with the highest share, into cohorts,
until a queue; a queue not borrowing (other than the preemptor's) and a cohort not borrowing
(off the preemptor's path) are pruned, and so is a queue with no candidate left. Ties between
queues go to the one whose next candidate comes first in candidate order.

- A workload of the preemptor's own queue is always taken (``InClusterQueue``).
- While the preemptor's queue uses at most its nominal quota in the flavor-resources needing
  preemption, another queue's candidate is taken too (``InCohortReclamation``; Kueue's
  ``FairSharingPreemptWithinNominal``, on by default since 0.17).
- Otherwise the first strategy decides, comparing the DRS of the two children of the queues'
  least common ancestor on each side (the preemptor's side with the incoming usage):
  ``LessThanOrEqualToFinalShare`` (preemptor's ≤ the target side's after removing the
  candidate) or ``LessThanInitialShare`` (preemptor's < the target side's now). A candidate
  that passes is taken (``InCohortFairSharing``) and the queue is chosen again; one that does
  not is kept for the second strategy.
- If the workload does not fit yet and a second strategy is configured (it can only be
  ``LessThanInitialShare``), each queue of those kept candidates, in the same order, gives
  its first kept candidate if the strategy passes, and is then dropped.

After each target the incoming workload is checked to fit (with borrowing). Targets are then
minimised in reverse. Shares compare as Kueue compares them: a zero weight that borrows is
above every other share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from dlsched.tenancy.classic_preemption import candidate_order, uses_any
from dlsched.tenancy.model import (
    ANY,
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    LESS_THAN_INITIAL,
    LESS_THAN_OR_EQUAL_FINAL,
    NEVER,
)
from dlsched.tenancy.quota import EPS, QuotaTree

if TYPE_CHECKING:
    from dlsched.tenancy.admission import Admission, Workload

Share = tuple[float, float, bool]
"""A node's dominant resource share: (unweighted ratio, weight, borrowing)."""


def drs(quota: QuotaTree, node: int) -> Share:
    """Kueue's dominant resource share of ``node``: per resource, what it uses beyond its
    subtree quota (all flavors) over what its parent could lend of it at most (the parent's
    potential, summed over flavors), the largest ratio (x1000); 0 for a root."""
    parent = quota.parent[node]
    weight = quota.weight[node]
    if parent is None:
        return (0.0, weight, False)
    borrowed: dict[str, float] = {}
    usage, subtree = quota.usage[node], quota.subtree[node]
    for fr, q in subtree.items():
        over = usage.get(fr, 0.0) - q
        if over > EPS:
            resource = quota.fr_names[fr][1]
            borrowed[resource] = borrowed.get(resource, 0.0) + over
    if not borrowed:
        return (0.0, weight, False)
    root = quota.root[node]
    lendable: dict[str, float] = {}
    for fr in quota.subtree[root]:
        resource = quota.fr_names[fr][1]
        if resource in borrowed:
            lendable[resource] = lendable.get(resource, 0.0) + quota.potential(parent, fr)
    ratio = 0.0
    for resource, amount in borrowed.items():
        lend = lendable.get(resource, 0.0)
        if lend > EPS:
            ratio = max(ratio, amount * 1000.0 / lend)
    return (ratio, weight, True)


def _weighted(share: Share) -> float:
    ratio, weight, _ = share
    if ratio == 0:
        return 0.0
    return math.inf if weight == 0 else ratio / weight


def compare(a: Share, b: Share) -> int:
    """-1, 0 or 1 as share ``a`` is below, equal to or above ``b`` (Kueue's ``CompareDRS``)."""
    a_zero, b_zero = a[1] == 0 and a[0] != 0, b[1] == 0 and b[0] != 0
    if a_zero and b_zero:
        x, y = a[0], b[0]
    elif a_zero:
        return 1
    elif b_zero:
        return -1
    else:
        x, y = _weighted(a), _weighted(b)
    return (x > y) - (x < y)


class _Ordering:
    """Kueue's ``TargetClusterQueueOrdering``: which queue gives the next candidate."""

    def __init__(self, adm: Admission, cq: int, candidates: Sequence[Workload]) -> None:
        self.quota = adm.quota
        self.cq = cq
        self.n_cqs = len(adm.cqs)
        self.path = set(self.quota.chain[cq][1:])
        self.queue: dict[int, list[Workload]] = {}
        for w in candidates:
            self.queue.setdefault(w.cq, []).append(w)
        self.pruned: set[int] = set()

    def next(self) -> int | None:
        """The next queue to take from, or None when all are pruned."""
        parent = self.quota.parent[self.cq]
        if parent is None:
            return self.cq if self.cq not in self.pruned and self.queue.get(self.cq) else None
        root = self.quota.root[self.cq]
        while root not in self.pruned:
            found = self._target(root)
            if found is not None:
                return found
        return None

    def _target(self, cohort: int) -> int | None:
        quota = self.quota
        best_cq: int | None = None
        best_cq_share: Share = (-1.0, 1.0, False)
        best_co: int | None = None
        best_co_share: Share = (-1.0, 1.0, False)
        for child in quota.children[cohort]:
            if child in self.pruned:
                continue
            share = drs(quota, child)
            if child < self.n_cqs:
                if (not share[2] and child != self.cq) or not self.queue.get(child):
                    self.pruned.add(child)
                    continue
                order = compare(share, best_cq_share)
                if order > 0:
                    best_cq, best_cq_share = child, share
                elif (
                    order == 0
                    and best_cq is not None
                    and _before(self.queue[child][0], self.queue[best_cq][0], self.cq)
                ):
                    best_cq = child
            elif not share[2] and child not in self.path:
                self.pruned.add(child)
            elif compare(share, best_co_share) >= 0:
                best_co, best_co_share = child, share
        if best_co is None and best_cq is None:
            self.pruned.add(cohort)
            return None
        if best_co is not None and compare(best_co_share, best_cq_share) >= 0:
            return self._target(best_co)
        return best_cq

    def pop(self, y: int) -> Workload:
        return self.queue[y].pop(0)

    def shares(self, y: int) -> tuple[int, int]:
        """The children of the least common ancestor of ``y`` and the preemptor's queue, on
        the preemptor's side and on ``y``'s."""
        chain = self.quota.chain
        lca = next(a for a in chain[y][1:] if a in self.path)
        return _below(chain[self.cq], lca), _below(chain[y], lca)


def _below(chain: list[int], lca: int) -> int:
    return chain[chain.index(lca) - 1]


def _before(a: Workload, b: Workload, cq: int) -> bool:
    return (a.cq == cq, *candidate_order(a)) < (b.cq == cq, *candidate_order(b))


def fair_targets(
    adm: Admission,
    wl: Workload,
    request: Mapping[int, float],
    need: frozenset[int],
    strategies: Sequence[str],
) -> list[tuple[Workload, str]]:
    """The workloads to preempt so that ``wl`` fits with ``request``, each with Kueue's
    reason, or none (module docstring). The quota is unchanged after."""
    quota = adm.quota
    cq = wl.cq
    pol = adm.cqs[cq].preemption
    candidates: list[Workload] = []
    if pol.within_cluster_queue != NEVER:
        candidates += [
            w for w in adm.admitted[cq] if uses_any(w, need) and adm.within_allows(wl, w)
        ]
    if quota.parent[cq] is not None and pol.reclaim_within_cohort != NEVER:
        anyone = pol.reclaim_within_cohort == ANY
        for other in adm.tree_queues(cq):
            if other == cq or not any(quota.borrowing(other, fr) for fr in need):
                continue
            candidates += [
                w
                for w in adm.admitted[other]
                if uses_any(w, need) and (anyone or w.priority < wl.priority)
            ]
    if not candidates:
        return []
    candidates.sort(key=lambda w: (w.cq == cq, *candidate_order(w)))

    def fits() -> bool:
        quota.remove(cq, request)
        ok = quota.fits(cq, request, True)
        quota.add(cq, request)
        return ok

    targets: list[tuple[Workload, str]] = []

    def take(w: Workload, reason: str) -> bool:
        quota.remove(w.cq, w.assignment or {})
        targets.append((w, reason))
        return fits()

    quota.add(cq, request)
    nominal, usage = quota.nominal[cq], quota.usage[cq]
    within = all(usage.get(fr, 0.0) <= nominal.get(fr, 0.0) + EPS for fr in need)
    done = False
    retry: list[Workload] = []
    ordering = _Ordering(adm, cq, candidates)
    first = strategies[0]
    while not done:
        y = ordering.next()
        if y is None:
            break
        if y == cq:
            done = take(ordering.pop(y), IN_CLUSTER_QUEUE)
            continue
        if within:
            done = take(ordering.pop(y), IN_COHORT_RECLAMATION)
            continue
        mine, theirs = ordering.shares(y)
        preemptor_share, target_share = drs(quota, mine), drs(quota, theirs)
        if math.isinf(_weighted(preemptor_share)) and not math.isinf(_weighted(target_share)):
            retry += ordering.queue[y]
            ordering.queue[y] = []
            continue
        while ordering.queue.get(y):
            w = ordering.pop(y)
            if first == LESS_THAN_OR_EQUAL_FINAL:
                quota.remove(w.cq, w.assignment or {})
                after = drs(quota, theirs)
                quota.add(w.cq, w.assignment or {})
                passed = compare(preemptor_share, after) <= 0
            else:
                assert first == LESS_THAN_INITIAL
                passed = compare(preemptor_share, target_share) < 0
            if passed:
                done = take(w, IN_COHORT_FAIR_SHARING)
                break
            retry.append(w)
    if not done and len(strategies) > 1:
        ordering = _Ordering(adm, cq, retry)
        while not done:
            y = ordering.next()
            if y is None:
                break
            mine, theirs = ordering.shares(y)
            passed = compare(drs(quota, mine), drs(quota, theirs)) < 0
            w = ordering.pop(y)
            if passed:
                done = take(w, IN_COHORT_FAIR_SHARING)
            ordering.pruned.add(y)
    quota.remove(cq, request)
    if done:
        kept = [targets[-1]]
        for w, reason in reversed(targets[:-1]):
            quota.add(w.cq, w.assignment or {})
            if quota.fits(cq, request, True):
                continue
            quota.remove(w.cq, w.assignment or {})
            kept.append((w, reason))
        targets = kept[::-1]
    for w, _ in targets:
        quota.add(w.cq, w.assignment or {})
    return targets if done else []
