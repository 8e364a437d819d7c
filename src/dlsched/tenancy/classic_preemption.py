"""Classic preemption's targets, as Kueue's candidate generator finds them (Kueue's
``pkg/scheduler/preemption``, classical: not fair sharing).

A workload of ClusterQueue ``q`` asks ``request`` (flavor-resource → amount) and needs
preemption in the flavor-resources ``need`` (those that do not fit now). Candidates are
admitted workloads that use some flavor-resource of ``need``:

- **Same queue** (``withinClusterQueue``): reason ``InClusterQueue``.
- **Other queues of the cohort tree** (``reclaimWithinCohort``), only of queues, and of cohorts
  between them and ``q``'s ancestor, that use more than their (subtree) quota in some
  flavor-resource of ``need``. Going up ``q``'s ancestors, a candidate under an ancestor is
  reclaimed with a *hierarchical advantage* when the request fits within the quota of ``q`` or
  of a node of ``q``'s chain below that ancestor: then it may be preempted whether or not
  ``q`` borrows (reason ``InCohortReclamation``). Without that advantage a candidate is
  preempted only without borrowing (``InCohortReclamation``), unless ``borrowWithinCohort``
  allows borrowing while preempting it: a priority below the preemptor's and, with
  ``maxPriorityThreshold``, at most the threshold (``InCohortReclaimWhileBorrowing``).

Each kind is ordered as Kueue orders candidates (workloads being evicted first, then lowest
priority, then most recently admitted; ties: most recently created), and the whole list is
hierarchical candidates, then the other queues', then the queue's own. Targets are taken
greedily in that order, checking after each whether the request fits (with or without
borrowing, per attempt), then minimised in reverse; the attempts are: with borrowing only,
when there is no candidate of another queue or the queue may not borrow while preempting and
is not below its nominal quota in ``need``; without then with borrowing, when it may not
borrow while preempting and no candidate has a hierarchical advantage; else with borrowing,
then without. A candidate of another queue stops being one once that queue (or a cohort up to
where it was collected) is back within its quota.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from dlsched.tenancy.model import (
    ANY,
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    NEVER,
)
from dlsched.tenancy.quota import EPS, QuotaTree

if TYPE_CHECKING:
    from dlsched.tenancy.admission import Admission, Workload

WITHIN, HIERARCHICAL, WITHOUT_BORROWING, WHILE_BORROWING = range(4)
REASON = {
    WITHIN: IN_CLUSTER_QUEUE,
    HIERARCHICAL: IN_COHORT_RECLAMATION,
    WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


class Candidate(NamedTuple):
    """A workload that may be preempted, how (a variant above), and the node it was
    collected under (its validity is checked up to there; None: the preemptor's queue)."""

    workload: Workload
    variant: int
    lca: int | None


def candidate_order(w: Workload) -> tuple[bool, int, float, int]:
    """Kueue's candidate order among workloads of one kind: being evicted first, then lowest
    priority, then most recently admitted, then most recently created."""
    return (not w.evicting, w.priority, -w.admitted_at, -w.seq)


def uses_any(w: Workload, need: frozenset[int]) -> bool:
    """Whether admitted workload ``w`` holds some flavor-resource of ``need``."""
    held = w.assignment or {}
    return any(fr in held for fr in need)


def within_nominal(quota: QuotaTree, node: int, need: Iterable[int]) -> bool:
    """Whether ``node`` uses at most its (subtree) quota in every flavor-resource of ``need``."""
    usage, subtree = quota.usage[node], quota.subtree[node]
    return all(usage.get(fr, 0.0) <= subtree.get(fr, 0.0) + EPS for fr in need)


def fits_in_quota(
    quota: QuotaTree, node: int, request: Mapping[int, float]
) -> tuple[bool, dict[int, float]]:
    """Whether ``request`` fits within ``node``'s own (subtree) quota on top of its usage, and
    what of it is left for its parent once the node's unused guaranteed part is taken."""
    usage, subtree, guaranteed = quota.usage[node], quota.subtree[node], quota.guaranteed[node]
    fits = True
    left: dict[int, float] = {}
    for fr, amount in request.items():
        used = usage.get(fr, 0.0)
        if used + amount > subtree.get(fr, 0.0) + EPS:
            fits = False
        local = max(0.0, guaranteed.get(fr, 0.0) - used)
        left[fr] = max(0.0, amount - local)
    return fits, left


def classic_targets(
    adm: Admission, wl: Workload, request: Mapping[int, float], need: frozenset[int]
) -> list[tuple[Workload, str]]:
    """The workloads to preempt so that ``wl`` (of ``adm``) fits with ``request``, each with
    Kueue's reason, or none (module docstring). The quota is unchanged after."""
    quota = adm.quota
    cq = wl.cq
    pol = adm.cqs[cq].preemption

    def uses(w: Workload) -> bool:
        return uses_any(w, need)

    same: list[Workload] = []
    if pol.within_cluster_queue != NEVER:
        same = [w for w in adm.admitted[cq] if uses(w) and adm.within_allows(wl, w)]
        same.sort(key=candidate_order)
    own = [Candidate(w, WITHIN, None) for w in same]
    forbidden = pol.borrow_within_cohort == NEVER
    threshold = pol.max_priority_threshold

    def variant(w: Workload, advantage: bool) -> int:
        if advantage:
            return HIERARCHICAL
        if forbidden or w.priority >= wl.priority:
            return WITHOUT_BORROWING
        if threshold is not None and w.priority > threshold:
            return WITHOUT_BORROWING
        return WHILE_BORROWING

    others: Callable[[], Iterator[Candidate]]
    parent = quota.parent[cq]
    if parent is None or pol.reclaim_within_cohort == NEVER:
        hierarchical = any_other = False

        def others() -> Iterator[Candidate]:
            return iter(())

    elif adm.flat_tree(cq):
        # One cohort of queues: every other queue's candidate has the advantage exactly when
        # the request fits the queue's nominal quota. They stream in order (lazily).
        advantage = fits_in_quota(quota, cq, request)[0]

        def others() -> Iterator[Candidate]:
            for w in adm.reclaimable(wl, need):
                if uses(w):
                    yield Candidate(w, variant(w, advantage), parent)

        first = next(others(), None)
        any_other = first is not None
        hierarchical = any_other and advantage
    else:
        found = _gathered(adm, wl, request, need, uses, variant)
        any_other = bool(found[0] or found[1])
        hierarchical = bool(found[0])
        merged = [*found[0], *found[1]]

        def others() -> Iterator[Candidate]:
            return iter(merged)

    if not any_other or (forbidden and not _under_nominal(quota, cq, need)):
        attempts: tuple[bool, ...] = (True,)
    elif forbidden and not hierarchical:
        attempts = (False, True)
    else:
        attempts = (True, False)
    for borrow in attempts:
        if adm.evicting:
            # Workloads being evicted come first whatever their kind (Kueue's order).
            listed = [*others(), *own]
            candidates: Iterable[Candidate] = sorted(listed, key=lambda c: not c.workload.evicting)
        else:
            candidates = _chained(others(), own)
        targets = _take(quota, wl, request, need, candidates, borrow)
        if targets:
            return [(c.workload, REASON[c.variant]) for c in targets]
    return []


def _chained(first: Iterator[Candidate], then: list[Candidate]) -> Iterator[Candidate]:
    yield from first
    yield from then


def _under_nominal(quota: QuotaTree, cq: int, need: Iterable[int]) -> bool:
    """Whether the queue uses strictly less than its nominal quota in every fr of ``need``."""
    usage, nominal = quota.usage[cq], quota.nominal[cq]
    return all(usage.get(fr, 0.0) < nominal.get(fr, 0.0) - EPS for fr in need)


def _valid(quota: QuotaTree, cq: int, c: Candidate, need: frozenset[int], borrow: bool) -> bool:
    """Whether ``c`` is still a candidate (Kueue's ``candidateIsValid``)."""
    y = c.workload.cq
    if y == cq:
        return True
    if borrow and c.variant == WITHOUT_BORROWING:
        return False
    if within_nominal(quota, y, need):
        return False
    for node in quota.chain[y][1:]:
        if node == c.lca:
            break
        if within_nominal(quota, node, need):
            return False
    return True


def _take(
    quota: QuotaTree,
    wl: Workload,
    request: Mapping[int, float],
    need: frozenset[int],
    candidates: Iterable[Candidate],
    borrow: bool,
) -> list[Candidate]:
    """Remove candidates in order until ``request`` fits, then add back in reverse those it
    fits without; the targets left, or none if it never fits. Quota unchanged after."""
    cq = wl.cq
    removed: list[Candidate] = []
    fits = False
    for c in candidates:
        if not _valid(quota, cq, c, need, borrow):
            continue
        quota.remove(c.workload.cq, c.workload.assignment or {})
        removed.append(c)
        if quota.fits(cq, request, borrow):
            fits = True
            break
    if fits:
        kept = [removed[-1]]
        for c in reversed(removed[:-1]):
            quota.add(c.workload.cq, c.workload.assignment or {})
            if quota.fits(cq, request, borrow):
                continue
            quota.remove(c.workload.cq, c.workload.assignment or {})
            kept.append(c)
        kept.reverse()
        removed = kept
    for c in removed:
        quota.add(c.workload.cq, c.workload.assignment or {})
    return removed if fits else []


def _gathered(
    adm: Admission,
    wl: Workload,
    request: Mapping[int, float],
    need: frozenset[int],
    uses: Callable[[Workload], bool],
    variant: Callable[[Workload, bool], int],
) -> tuple[list[Candidate], list[Candidate]]:
    """Other queues' candidates in a cohort tree of several levels: (with a hierarchical
    advantage, without), each in candidate order. Going up from the queue, each ancestor's
    subtree (less the part already searched) is searched with the advantage found so far."""
    quota = adm.quota
    cq = wl.cq
    pol = adm.cqs[cq].preemption
    n_cqs = len(adm.cqs)
    any_priority = pol.reclaim_within_cohort == ANY
    hierarchical: list[Candidate] = []
    plain: list[Candidate] = []

    def collect(node: int, lca: int, skip: int | None, advantage: bool) -> None:
        out = hierarchical if advantage else plain
        for child in quota.children[node]:
            if child >= n_cqs:
                if child != skip and not within_nominal(quota, child, need):
                    collect(child, lca, skip, advantage)
            elif child != cq and not within_nominal(quota, child, need):
                for w in adm.admitted[child]:
                    if uses(w) and (any_priority or w.priority < wl.priority):
                        out.append(Candidate(w, variant(w, advantage), lca))

    advantage, left = fits_in_quota(quota, cq, request)
    previous: int | None = None
    for node in quota.chain[cq][1:]:
        collect(node, node, previous, advantage)
        fits, left = fits_in_quota(quota, node, left)
        advantage = advantage or fits
        previous = node
    hierarchical.sort(key=lambda c: candidate_order(c.workload))
    plain.sort(key=lambda c: candidate_order(c.workload))
    return hierarchical, plain
