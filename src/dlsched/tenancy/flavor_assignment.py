"""Flavor assignment as Kueue's flavor assigner does it (Kueue's
``pkg/scheduler/flavorassigner``, with flavor fungibility).

For each resource group a workload asks something of, flavors are tried in order. In a flavor
each requested resource gets a *granular mode*: its preemption mode — ``fit`` (fits what the
queue may take now), ``reclaim`` or ``preempt`` (fits after preempting workloads of other queues
only, or also of its own), ``no candidates`` (would fit the queue's potential but preemption
finds no targets), ``no fit`` — and its *borrowing level*: 0 within the queue's nominal quota,
else the height of the lowest cohort of its chain whose quota holds it. Preemption is looked
for only when the request fits the queue's nominal quota, or the queue may borrow while
preempting (``borrowWithinCohort``, or fair sharing with ``reclaimWithinCohort``), or a cohort
below the root holds it. The flavor's mode is its worst resource's.

A flavor is taken at once unless its mode says to try the next: always for no fit and no
candidates; for reclaim and preempt under ``whenCanPreempt: TryNextFlavor``; for a borrowing
level above 0 under ``whenCanBorrow: TryNextFlavor``. Otherwise the best flavor seen wins: one
with candidates over one without, then (Kueue's default ``BorrowingOverPreemption``) the
better preemption mode, then the lower borrowing level.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from dlsched.tenancy.model import (
    BORROW,
    BORROWING_OVER_PREEMPTION,
    NEVER,
    PREEMPT,
    PREEMPTION_OVER_BORROWING,
)
from dlsched.tenancy.quota import EPS, QuotaTree

if TYPE_CHECKING:
    from dlsched.tenancy.admission import Admission, Workload

NO_FIT, NO_CANDIDATES, PREEMPTING, RECLAIMING, FITS = range(5)
"""Preemption modes, worst first (Kueue's order)."""


class Granular(NamedTuple):
    """A resource's or flavor's mode: preemption mode and borrowing level."""

    mode: int
    borrowing: int


BEST = Granular(FITS, 0)
Oracle = Callable[[int, float], Granular]
"""What preempting for ``amount`` of a flavor-resource would give: the preemption mode and
the borrowing level after (``NO_CANDIDATES``, ``PREEMPTING`` or ``RECLAIMING``)."""


class Choice(NamedTuple):
    """The flavor chosen in one resource group: its name, its mode, and each resource's
    (flavor-resource, amount, mode)."""

    flavor: str
    mode: Granular
    resources: tuple[tuple[int, float, Granular], ...]


def preferred(a: Granular, b: Granular, preference: str = BORROWING_OVER_PREEMPTION) -> bool:
    """Whether mode ``a`` is better than ``b`` (Kueue's ``isPreferred``): one that fits some
    way over no fit, one with candidates over one without, then by ``preference``."""
    if a.mode == NO_FIT:
        return False
    if b.mode == NO_FIT:
        return True
    if (a.mode == NO_CANDIDATES) != (b.mode == NO_CANDIDATES):
        return a.mode != NO_CANDIDATES
    if preference == PREEMPTION_OVER_BORROWING and a.borrowing != b.borrowing:
        return a.borrowing < b.borrowing
    if a.mode != b.mode:
        return a.mode > b.mode
    return a.borrowing < b.borrowing


def try_next(mode: Granular, when_can_borrow: str, when_can_preempt: str) -> bool:
    """Whether a flavor of ``mode`` leaves the search going (Kueue's ``shouldTryNextFlavor``)."""
    if mode.mode in (NO_FIT, NO_CANDIDATES):
        return True
    if mode.mode in (PREEMPTING, RECLAIMING) and when_can_preempt != PREEMPT:
        return True
    return mode.borrowing > 0 and when_can_borrow != BORROW


def lowest_fitting(quota: QuotaTree, cq: int, fr: int, amount: float) -> tuple[int, bool]:
    """(Borrowing level of ``amount`` of ``fr`` in ``cq``: 0 within its nominal quota, else the
    height of the lowest node of its chain whose quota holds it; whether that node is below
    the root). Kueue's ``FindHeightOfLowestSubtreeThatFits``."""
    usage, parent = quota.usage, quota.parent
    if (
        parent[cq] is None
        or usage[cq].get(fr, 0.0) + amount <= quota.nominal[cq].get(fr, 0.0) + EPS
    ):
        return 0, parent[cq] is not None
    left = amount - max(0.0, quota.guaranteed[cq].get(fr, 0.0) - usage[cq].get(fr, 0.0))
    chain = quota.chain[cq]
    for node in chain[1:]:
        if usage[node].get(fr, 0.0) + left <= quota.subtree[node].get(fr, 0.0) + EPS:
            return quota.height[node], parent[node] is not None
        left -= max(0.0, quota.guaranteed[node].get(fr, 0.0) - usage[node].get(fr, 0.0))
    return quota.height[chain[-1]], False


def resource_mode(
    adm: Admission, wl: Workload, fr: int, amount: float, oracle: Oracle | None
) -> Granular:
    """The granular mode of ``amount`` of ``fr`` for ``wl`` in its queue (Kueue's
    ``fitsResourceQuota``); where preemption is looked for, ``oracle`` says what it gives
    (None: a preemption is taken to be possible, borrowing when the request passes the
    nominal quota)."""
    quota = adm.quota
    cq = wl.cq
    if amount > quota.potential(cq, fr) + EPS:
        return Granular(NO_FIT, 0)
    level, below_root = lowest_fitting(quota, cq, fr, amount)
    if amount <= quota.available(cq, fr) + EPS:
        return Granular(FITS, level)
    pol = adm.cqs[cq].preemption
    while_borrowing = pol.borrow_within_cohort != NEVER or (
        adm.fair and pol.reclaim_within_cohort != NEVER
    )
    if not (quota.nominal[cq].get(fr, 0.0) + EPS >= amount or below_root or while_borrowing):
        return Granular(NO_FIT, level)
    if oracle is None:
        # Unsimulated, as the fast path judges it: preempting borrows when the request alone
        # passes the nominal quota.
        nominal = quota.nominal[cq].get(fr, 0.0)
        return Granular(PREEMPTING, 0 if amount <= nominal + EPS else max(1, level))
    return oracle(fr, amount)


def simulated(adm: Admission, wl: Workload) -> Oracle:
    """The preemption oracle of ``wl``: the targets classic or fair-sharing preemption would
    take for that amount alone (Kueue's ``SimulatePreemption``)."""
    return lambda fr, amount: _simulate(adm, wl, fr, amount)


def _simulate(adm: Admission, wl: Workload, fr: int, amount: float) -> Granular:
    quota = adm.quota
    cq = wl.cq
    targets = adm.targets_for(wl, {fr: amount}, frozenset((fr,)))
    if not targets:
        return Granular(NO_CANDIDATES, lowest_fitting(quota, cq, fr, amount)[0])
    for e in targets:
        quota.remove(e.workload.cq, e.workload.assignment or {})
    after, _ = lowest_fitting(quota, cq, fr, amount)
    for e in targets:
        quota.add(e.workload.cq, e.workload.assignment or {})
    own = any(e.workload.cq == cq for e in targets)
    return Granular(PREEMPTING if own else RECLAIMING, after)


def choose(
    adm: Admission,
    wl: Workload,
    options: Sequence[tuple[str, Sequence[tuple[int, float]]]],
    oracle: Oracle | None = None,
) -> Choice | None:
    """The flavor of one resource group (flavors ``(name, (fr, amount) pairs)`` in order), or
    None when none fits in any way (module docstring). ``oracle``: what preemption would give
    (default: simulated, :func:`simulated`)."""
    fungibility = adm.cqs[wl.cq].fungibility
    if oracle is None and len(options) > 1:
        # Simulating preemption only tells flavors apart: with one there is nothing to tell.
        oracle = simulated(adm, wl)
    best: Choice | None = None
    for name, pairs in options:
        worst = BEST
        found: list[tuple[int, float, Granular]] = []
        for fr, amount in pairs:
            mode = resource_mode(adm, wl, fr, amount, oracle)
            if preferred(worst, mode):
                worst = mode
            found.append((fr, amount, mode))
            if worst.mode == NO_FIT:
                break
        if worst.mode == NO_FIT:
            continue
        choice = Choice(name, worst, tuple(found))
        if not try_next(worst, fungibility.when_can_borrow, fungibility.when_can_preempt):
            return choice
        if best is None or preferred(worst, best.mode, fungibility.preference):
            best = choice
    return best
