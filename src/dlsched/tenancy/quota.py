"""The quota of a cohort tree and its usage: how much each ClusterQueue may still take.

Every ClusterQueue and Cohort is a node; a ClusterQueue without a cohort is a tree of its own.
Quota is kept per *flavor-resource* (``fr``: a flavor and a resource name, numbered). For a
node and an fr:

- ``subtree`` quota: its own nominal quota plus what its children lend it (each child's subtree
  quota less its guaranteed part);
- ``guaranteed``: the part it does not lend, ``max(0, subtree - lendingLimit)`` (0 without a
  lending limit);
- ``usage``: what its workloads hold (a cohort's: what its children took beyond their
  guaranteed parts).

What a node may still take (:meth:`QuotaTree.available`) is its unused guaranteed part plus what
its parent may give, capped by its borrowing limit; a root may take its subtree quota less its
usage. Usage added beyond a node's unused guaranteed part is charged to its parent, and removed
from the parent first when released. These are the semantics of Kueue's ClusterQueue and
hierarchical Cohort quotas (lending and borrowing limits apply at every level).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from dlsched.tenancy.model import ResourceGroup, Tenancy

EPS = 1e-9


class QuotaTree:
    """Quota and usage of every node (see the module docstring). Nodes ``0 .. len(cqs)-1``
    are the ClusterQueues in manifest order, cohorts follow."""

    def __init__(self, tenancy: Tenancy) -> None:
        self.cq_names = list(tenancy.cluster_queues)
        cohort_names = list(tenancy.cohorts)
        self.names = self.cq_names + cohort_names
        self.index = {name: i for i, name in enumerate(self.cq_names)}
        cohort_index = {name: len(self.cq_names) + i for i, name in enumerate(cohort_names)}
        self.frs: dict[tuple[str, str], int] = {}
        n = len(self.names)
        self.parent: list[int | None] = [None] * n
        self.nominal: list[dict[int, float]] = [{} for _ in range(n)]
        self.borrow_limit: list[dict[int, float]] = [{} for _ in range(n)]
        self.lend_limit: list[dict[int, float]] = [{} for _ in range(n)]
        self.weight = [1.0] * n
        for i, cq in enumerate(tenancy.cluster_queues.values()):
            self.parent[i] = None if cq.cohort is None else cohort_index[cq.cohort]
            self._quotas(i, cq.resource_groups)
            self.weight[i] = cq.weight
        for name, co in tenancy.cohorts.items():
            i = cohort_index[name]
            self.parent[i] = None if co.parent is None else cohort_index[co.parent]
            self._quotas(i, co.resource_groups)
            self.weight[i] = co.weight
        self.children: list[list[int]] = [[] for _ in range(n)]
        for i, p in enumerate(self.parent):
            if p is not None:
                self.children[p].append(i)
        self.root = [self._root_of(i) for i in range(n)]
        # Each node and its ancestors up to its root.
        self.chain: list[list[int]] = [self._chain(i) for i in range(n)]
        self.subtree: list[dict[int, float]] = [{} for _ in range(n)]
        self.guaranteed: list[dict[int, float]] = [{} for _ in range(n)]
        for r in {self.root[i] for i in range(n)}:
            self._fill_subtree(r)
        # Every flavor-resource has an entry in every node's usage (0 while unused).
        self.usage: list[dict[int, float]] = [
            dict.fromkeys(self.frs.values(), 0.0) for _ in range(n)
        ]
        # Nodes whose chain has no lending or borrowing limits: such a node may take exactly
        # what its root has free, and its usage is charged in full to every ancestor.
        self.plain = [
            not any(self.lend_limit[c] or self.borrow_limit[c] for c in self.chain[i])
            for i in range(n)
        ]
        # The usage maps of each node's chain (the node first, its root last).
        self.chain_usage: list[tuple[dict[int, float], ...]] = [
            tuple(self.usage[at] for at in self.chain[i]) for i in range(n)
        ]
        self.fr_names = {i: fr for fr, i in self.frs.items()}
        # Kueue's height of a node: 0 for a ClusterQueue, 1 for a cohort of queues only, one
        # more than its highest child cohort otherwise.
        self.height = [0] * n
        for i in sorted(range(len(self.cq_names), n), key=lambda c: -len(self.chain[c])):
            kids = self.children[i]
            self.height[i] = max(
                [min(len(kids), 1)] + [self.height[c] + 1 for c in kids if c >= len(self.cq_names)]
            )
        self._potential: dict[tuple[int, int], float] = {}

    def _quotas(self, node: int, groups: Iterable[ResourceGroup]) -> None:
        for group in groups:
            for fq in group.flavors:
                for resource, q in fq.resources.items():
                    fr = self.frs.setdefault((fq.flavor, resource), len(self.frs))
                    self.nominal[node][fr] = q.nominal
                    if q.borrowing_limit is not None:
                        self.borrow_limit[node][fr] = q.borrowing_limit
                    if q.lending_limit is not None:
                        self.lend_limit[node][fr] = q.lending_limit

    def _root_of(self, node: int) -> int:
        parent = self.parent[node]
        while parent is not None:
            node, parent = parent, self.parent[parent]
        return node

    def _chain(self, node: int) -> list[int]:
        chain = [node]
        parent = self.parent[node]
        while parent is not None:
            chain.append(parent)
            parent = self.parent[parent]
        return chain

    def _fill_subtree(self, node: int) -> None:
        total = dict(self.nominal[node])
        for child in self.children[node]:
            self._fill_subtree(child)
            for fr, q in self.subtree[child].items():
                total[fr] = total.get(fr, 0.0) + q - self.guaranteed[child].get(fr, 0.0)
        self.subtree[node] = total
        for fr, limit in self.lend_limit[node].items():
            self.guaranteed[node][fr] = max(0.0, total.get(fr, 0.0) - limit)

    # ---- queries ---------------------------------------------------------------------------
    def available(self, node: int, fr: int) -> float:
        """How much of ``fr`` the node may still take (its unused guaranteed part plus what
        its ancestors may give it, within borrowing limits)."""
        # From the root down: what a node may take is its unused guaranteed part plus what its
        # parent may give, capped by its borrowing limit (iterative: this is the hot path).
        chain = self.chain[node]
        root = chain[-1]
        value = self.subtree[root].get(fr, 0.0) - self.usage[root].get(fr, 0.0)
        if self.plain[node]:
            return value
        for i in range(len(chain) - 2, -1, -1):
            n = chain[i]
            usage = self.usage[n].get(fr, 0.0)
            guaranteed = self.guaranteed[n].get(fr, 0.0)
            limit = self.borrow_limit[n].get(fr)
            if limit is not None:
                stored = self.subtree[n].get(fr, 0.0) - guaranteed
                in_parent = usage - guaranteed if usage > guaranteed else 0.0
                cap = stored - in_parent + limit
                if cap < value:
                    value = cap
            if guaranteed > usage:
                value += guaranteed - usage
        return value

    def potential(self, node: int, fr: int) -> float:
        """What the node could take of ``fr`` if nothing were in use anywhere (quotas do not
        change, so each value is computed once)."""
        known = self._potential.get((node, fr))
        if known is not None:
            return known
        parent = self.parent[node]
        value = self.subtree[node].get(fr, 0.0)
        if parent is not None:
            guaranteed = self.guaranteed[node].get(fr, 0.0)
            from_parent = self.potential(parent, fr)
            limit = self.borrow_limit[node].get(fr)
            if limit is not None:
                from_parent = min(from_parent, value - guaranteed + limit)
            value = guaranteed + from_parent
        self._potential[(node, fr)] = value
        return value

    def defines(self, cq: int, fr: int) -> bool:
        return fr in self.nominal[cq]

    def borrowing(self, cq: int, fr: int) -> bool:
        """Whether the ClusterQueue uses more of ``fr`` than its nominal quota."""
        return self.usage[cq].get(fr, 0.0) > self.nominal[cq].get(fr, 0.0) + EPS

    def fits(self, cq: int, request: Mapping[int, float], borrow: bool = True) -> bool:
        """Whether ``request`` fits the ClusterQueue now (without borrowing: also within its
        nominal quota)."""
        for fr, amount in request.items():
            if amount > self.available(cq, fr) + EPS:
                return False
            if (
                not borrow
                and self.usage[cq].get(fr, 0.0) + amount > self.nominal[cq].get(fr, 0.0) + EPS
            ):
                return False
        return True

    # ---- changes ---------------------------------------------------------------------------
    def add(self, node: int, request: Mapping[int, float]) -> None:
        """Charge ``request`` to the node (and the part beyond its guarantee to its parents)."""
        if self.plain[node]:
            for fr, amount in request.items():
                self.charge(node, fr, amount)
            return
        for fr, amount in request.items():
            at = node
            while True:
                usage = self.usage[at]
                before = usage.get(fr, 0.0)
                guaranteed = self.guaranteed[at].get(fr, 0.0)
                local = guaranteed - before if guaranteed > before else 0.0
                usage[fr] = before + amount
                parent = self.parent[at]
                if amount <= local or parent is None:
                    break
                at, amount = parent, amount - local

    def charge(self, node: int, fr: int, amount: float) -> None:
        """:meth:`add` of ``amount`` (> 0) of one ``fr`` to a :attr:`plain` node."""
        for usage in self.chain_usage[node]:
            usage[fr] += amount

    def discharge(self, node: int, fr: int, amount: float) -> None:
        """:meth:`remove` of ``amount`` (> 0) of one ``fr`` from a :attr:`plain` node."""
        for usage in self.chain_usage[node]:
            before = usage[fr]
            usage[fr] = before - amount
            if before < amount:
                # As :meth:`remove`: a parent gives back no more than its child held.
                if before <= 0:
                    break
                amount = before

    def remove(self, node: int, request: Mapping[int, float]) -> None:
        """Release what :meth:`add` charged."""
        if self.plain[node]:
            for fr, amount in request.items():
                self.discharge(node, fr, amount)
            return
        for fr, amount in request.items():
            at = node
            while True:
                usage = self.usage[at]
                before = usage.get(fr, 0.0)
                usage[fr] = before - amount
                parent = self.parent[at]
                stored = before - self.guaranteed[at].get(fr, 0.0)
                if stored <= 0 or parent is None:
                    break
                at, amount = parent, min(amount, stored)

    # ---- fair sharing ------------------------------------------------------------------------
    def share(self, node: int, extra: Mapping[int, float] | None = None) -> float:
        """The node's weighted dominant-resource share of borrowed quota (Kueue's fair-sharing
        share value): per resource, what it uses beyond its subtree quota over what its parent
        can lend (all flavors together), the largest of these, divided by its weight; with
        ``extra`` usage added. 0 for a node without a parent."""
        parent = self.parent[node]
        if parent is None:
            return 0.0
        borrowed: dict[str, float] = {}
        lendable: dict[str, float] = {}
        usage = self.usage[node]
        subtree = self.subtree[node]
        for fr in set(usage) | set(extra or ()):
            used = usage.get(fr, 0.0) + (extra or {}).get(fr, 0.0)
            over = used - subtree.get(fr, 0.0)
            if over > EPS:
                resource = self.fr_names[fr][1]
                borrowed[resource] = borrowed.get(resource, 0.0) + over
        if not borrowed:
            return 0.0
        for fr, q in self.subtree[parent].items():
            resource = self.fr_names[fr][1]
            if resource in borrowed:
                lendable[resource] = lendable.get(resource, 0.0) + q
        dominant = max(
            (b / lendable[r] if lendable.get(r, 0.0) > 0 else float("inf"))
            for r, b in borrowed.items()
        )
        weight = self.weight[node]
        if weight <= 0:
            return float("inf")
        return dominant / weight
