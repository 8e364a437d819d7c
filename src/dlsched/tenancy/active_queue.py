"""A ClusterQueue's pending workloads: the active queue in queue order and the inadmissible set.

Kueue's queue manager moves workloads between the two in bulk: a BestEffortFIFO head that
does not fit takes every active workload of its shape and priority to the inadmissible set
(scheduling-equivalence hashing), and every release of quota in a cohort tree brings all of
the tree's inadmissible workloads back. Under a deep backlog both happen on nearly every
event, so both must cost the number of *shapes* moved, not of workloads. Workloads are held
in groups, one per (shape, priority) and state; a bulk move hands a group over whole (the
smaller of two groups with one key is merged into the larger). The active queue's head is
the least of the active groups' heads, kept in a heap of candidates. A workload removed
singly leaves its heap entry in place, skipped when it surfaces: every entry carries a
stamp and only a workload's current stamp is live.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from itertools import count
from typing import Any

from dlsched.tenancy.admission import Workload

Order = tuple[int, float, int]
"""Queue order of a workload: (-priority, queue time, sequence), a total order."""

_Entry = tuple[int, float, int, int, Workload]


class _Group:
    """Workloads of one (shape, priority), all active or all inadmissible."""

    __slots__ = ("active", "heap", "key", "live")

    def __init__(self, key: Any, active: bool) -> None:
        self.key = key
        self.active = active
        self.heap: list[_Entry] = []
        self.live = 0


class PendingQueue:
    """The pending workloads of one ClusterQueue (module docstring).

    Contract: a workload is in at most one place (``push`` or ``park`` of one already
    here is a no-op); ``pop`` returns the first active workload in queue order, or None;
    ``park_shape`` makes every active workload of a (shape, priority) inadmissible and
    ``wake`` makes every inadmissible workload active, each in time proportional to the
    groups moved; ``remove`` takes one workload out wherever it is. ``ready``, if given,
    holds ``index`` exactly while the active queue is not empty (so that a caller over many
    queues visits only those with a head)."""

    def __init__(self, index: int = 0, ready: set[int] | None = None) -> None:
        self._index = index
        self._ready = ready
        self._groups: dict[Any, _Group] = {}
        self._parked: dict[Any, _Group] = {}
        self._loose: dict[Workload, Order] = {}
        """Inadmissible workloads outside any group (parked singly)."""
        self._where: dict[Workload, tuple[int, _Group]] = {}
        self._tops: list[tuple[int, float, int, int, int, Workload]] = []
        """Candidate heads: each active group's head has an entry here (others are stale)."""
        self._stamps = count()
        self._pushes = count()
        self.n_active = 0
        self.n_inadmissible = 0

    def __contains__(self, wl: Workload) -> bool:
        return wl in self._where or wl in self._loose

    def is_active(self, wl: Workload) -> bool:
        where = self._where.get(wl)
        return where is not None and where[1].active

    # ---- in and out ----------------------------------------------------------------------
    def push(self, wl: Workload, order: Order) -> None:
        """``wl`` joins the active queue."""
        if wl in self:
            return
        key = shape_of(wl)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(key, True)
        entry = self._add(group, wl, order)
        self._count(1)
        if group.heap[0] is entry:
            self._candidate(entry)

    def park(self, wl: Workload, order: Order, *, grouped: bool) -> None:
        """``wl`` becomes inadmissible: with its shape's group when ``grouped``, else alone."""
        if wl in self:
            return
        self.n_inadmissible += 1
        if not grouped:
            self._loose[wl] = order
            return
        key = shape_of(wl)
        group = self._parked.get(key)
        if group is None:
            group = self._parked[key] = _Group(key, False)
        self._add(group, wl, order)

    def pop(self) -> Workload | None:
        """Take out and return the head of the active queue."""
        tops = self._tops
        while tops:
            *_, stamp, _, wl = heappop(tops)
            where = self._where.get(wl)
            if where is None or where[0] != stamp or not where[1].active:
                continue
            group = where[1]
            self._clean(group)
            if group.heap[0][3] != stamp:
                continue
            heappop(group.heap)
            self._drop(wl, group)
            return wl
        return None

    def remove(self, wl: Workload) -> bool:
        """Take ``wl`` out wherever it waits; False if it was not here."""
        if self._loose.pop(wl, None) is not None:
            self.n_inadmissible -= 1
            return True
        where = self._where.get(wl)
        if where is None:
            return False
        self._drop(wl, where[1])
        return True

    # ---- bulk moves ----------------------------------------------------------------------
    def park_shape(self, key: Any) -> None:
        """Every active workload whose (shape, priority) is ``key`` becomes inadmissible."""
        group = self._groups.pop(key, None)
        if group is None:
            return
        group.active = False
        self._count(-group.live)
        self.n_inadmissible += group.live
        self._parked[key] = self._merge(group, self._parked.get(key))

    def wake(self) -> None:
        """Every inadmissible workload becomes active."""
        parked, self._parked = self._parked, {}
        loose, self._loose = self._loose, {}
        self.n_inadmissible = 0
        for key, group in parked.items():
            group.active = True
            self._count(group.live)
            merged = self._groups[key] = self._merge(group, self._groups.get(key))
            self._clean(merged)
            if merged.heap:
                self._candidate(merged.heap[0])
        for wl, order in loose.items():
            self.push(wl, order)
        self._compact_tops()

    # ---- views ---------------------------------------------------------------------------
    def active(self) -> list[Workload]:
        """Active workloads in queue order."""
        return [e[4] for e in sorted(self._live_entries(self._groups.values()))]

    def inadmissible(self) -> list[Workload]:
        """Inadmissible workloads in queue order."""
        entries = list(self._live_entries(self._parked.values()))
        entries += [(*order, -1, wl) for wl, order in self._loose.items()]
        return [e[4] for e in sorted(entries)]

    # ---- internals -----------------------------------------------------------------------
    def _add(self, group: _Group, wl: Workload, order: Order) -> _Entry:
        stamp = next(self._stamps)
        entry = (*order, stamp, wl)
        heappush(group.heap, entry)
        group.live += 1
        self._where[wl] = (stamp, group)
        return entry

    def _drop(self, wl: Workload, group: _Group) -> None:
        """``wl`` (live in ``group``, its entry popped or not) leaves."""
        del self._where[wl]
        group.live -= 1
        if group.active:
            self._count(-1)
        else:
            self.n_inadmissible -= 1
        home = self._groups if group.active else self._parked
        if group.live == 0:
            if home.get(group.key) is group:
                del home[group.key]
            return
        self._clean(group)
        if len(group.heap) > 2 * group.live + 16:
            group.heap = [e for e in group.heap if self._is_live(e, group)]
            heapify(group.heap)
        if group.active:
            self._candidate(group.heap[0])

    def _count(self, change: int) -> None:
        self.n_active += change
        if self._ready is not None:
            if self.n_active:
                self._ready.add(self._index)
            else:
                self._ready.discard(self._index)

    def _merge(self, a: _Group, b: _Group | None) -> _Group:
        """One group of ``a``'s state holding both; the smaller is copied into the larger."""
        if b is None:
            return a
        big, small = (a, b) if a.live >= b.live else (b, a)
        big.active = a.active
        for entry in small.heap:
            if self._is_live(entry, small):
                heappush(big.heap, entry)
                self._where[entry[4]] = (entry[3], big)
        big.live += small.live
        return big

    def _is_live(self, entry: _Entry, group: _Group) -> bool:
        where = self._where.get(entry[4])
        return where is not None and where[0] == entry[3] and where[1] is group

    def _clean(self, group: _Group) -> None:
        heap = group.heap
        while heap and not self._is_live(heap[0], group):
            heappop(heap)

    def _candidate(self, entry: _Entry) -> None:
        p, t, seq, stamp, wl = entry
        heappush(self._tops, (p, t, seq, stamp, next(self._pushes), wl))
        if len(self._tops) > 4 * len(self._groups) + 64:
            self._compact_tops()

    def _compact_tops(self) -> None:
        # Stale candidates are dropped once they outnumber the groups, so the heap of
        # candidates stays within a few entries per active group.
        if len(self._tops) <= 2 * len(self._groups) + 64:
            return
        tops = self._tops
        tops.clear()
        for group in self._groups.values():
            self._clean(group)
            p, t, seq, stamp, wl = group.heap[0]
            tops.append((p, t, seq, stamp, next(self._pushes), wl))
        heapify(tops)

    def _live_entries(self, groups: Any) -> Any:
        for group in groups:
            for entry in group.heap:
                if self._is_live(entry, group):
                    yield entry


def shape_of(wl: Workload) -> Any:
    """The key of Kueue's scheduling equivalence: the workload's shape and priority."""
    return (wl.shape_key(), wl.priority)
