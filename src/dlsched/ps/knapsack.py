"""Multiple-choice multi-dimensional knapsack: pick one option per item, minimizing total cost,
with every option's use of each dimension summing to at most the capacity.

Three solvers share one input (:class:`Knapsack`) and a feasible starting choice ``base``
(which they never do worse than):

- :func:`solve_exact`: depth-first branch-and-bound; the bound adds each undecided item's
  cheapest option that still fits what is left. Exact unless it hits ``node_limit`` (then it
  says so).
  :func:`solve_exact_below` is the same search with no starting choice, only a cost to beat.
- :func:`solve_lp`: the LP relaxation solved by HiGHS (``scipy.optimize.linprog``), rounded
  item by item in order of the LP's confidence, keeping the choice feasible, then improved
  greedily.
- :func:`solve_greedy`: from ``base``, move each item to its cheapest option that fits what
  the others leave, items with most to gain first, until a pass changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.optimize import linprog
from scipy.sparse import csr_matrix

FloatArray = npt.NDArray[np.float64]
_EPS = 1e-9
_GREEDY_PASSES = 4


@dataclass(frozen=True)
class Knapsack:
    """``costs[i][o]`` and ``uses[i][o, d]`` of option o of item i; ``capacity[d]``."""

    costs: Sequence[FloatArray]
    uses: Sequence[FloatArray]
    capacity: FloatArray

    def __post_init__(self) -> None:
        if len(self.costs) != len(self.uses):
            raise ValueError("costs and uses must have one entry per item")
        for c, u in zip(self.costs, self.uses, strict=True):
            if c.ndim != 1 or u.shape != (c.size, self.capacity.size) or c.size == 0:
                raise ValueError("each item needs options with a cost and a use per dimension")

    def total(self, choice: Sequence[int]) -> float:
        return float(sum(c[o] for c, o in zip(self.costs, choice, strict=True)))

    def feasible(self, choice: Sequence[int]) -> bool:
        used = sum(
            (u[o] for u, o in zip(self.uses, choice, strict=True)), np.zeros_like(self.capacity)
        )
        return bool(np.all(used <= self.capacity + _EPS))

    def _free(self, choice: Sequence[int]) -> FloatArray:
        used = sum(
            (u[o] for u, o in zip(self.uses, choice, strict=True)), np.zeros_like(self.capacity)
        )
        return np.asarray(self.capacity - used, dtype=float)


@dataclass(frozen=True)
class KnapsackResult:
    """The choice, its cost, and whether it is proven optimal."""

    choice: tuple[int, ...]
    cost: float
    exact: bool


def solve_exact(k: Knapsack, base: Sequence[int], node_limit: int = 200_000) -> KnapsackResult:
    """Branch-and-bound (module docstring); ``base`` must be feasible."""
    _check_base(k, base)
    choice, cost, exhausted = _branch(k, list(base), k.total(base), node_limit)
    return KnapsackResult(tuple(choice if choice is not None else base), cost, exhausted)


def solve_exact_below(
    k: Knapsack, bound: float, node_limit: int = 200_000
) -> tuple[KnapsackResult | None, bool]:
    """The cheapest feasible choice costing less than ``bound`` by branch-and-bound, with no
    starting choice (None if there is none, or none was found within ``node_limit`` nodes),
    and whether the search finished (so that None proves there is none)."""
    choice, cost, exhausted = _branch(k, None, bound, node_limit)
    found = KnapsackResult(tuple(choice), cost, exhausted) if choice is not None else None
    return found, exhausted


def _branch(
    k: Knapsack, incumbent: list[int] | None, bound: float, node_limit: int
) -> tuple[list[int] | None, float, bool]:
    n = len(k.costs)
    spread = [float(c.max() - c.min()) for c in k.costs]
    items = sorted(range(n), key=lambda i: -spread[i])
    # Every item's options in cost order, all items in one array: at each node one vectorized
    # test finds each undecided item's cheapest option that still fits.
    orders = [np.argsort(k.costs[i], kind="stable") for i in items]
    costs = np.concatenate([k.costs[i][o] for i, o in zip(items, orders, strict=True)])
    uses = np.vstack([k.uses[i][o] for i, o in zip(items, orders, strict=True)])
    offsets = np.concatenate([[0], np.cumsum([o.size for o in orders])])
    best_cost = bound
    best = incumbent
    current = [0] * n
    nodes = 0
    exhausted = True

    def visit(depth: int, free: FloatArray, cost: float) -> None:
        nonlocal best_cost, best, nodes, exhausted
        if depth == n:
            if cost < best_cost - 1e-12:
                best_cost = cost
                best = list(current)
            return
        lo, hi = int(offsets[depth]), int(offsets[depth + 1])
        fits = np.all(uses[lo:] <= free + _EPS, axis=1)
        cheapest = np.minimum.reduceat(np.where(fits, costs[lo:], np.inf), offsets[depth:-1] - lo)
        rest = float(cheapest[1:].sum())
        if cost + float(cheapest[0]) + rest >= best_cost - 1e-12:
            return  # also when some undecided item has no option left that fits
        i = items[depth]
        for j in np.flatnonzero(fits[: hi - lo]):
            c = cost + float(costs[lo + j])
            if c + rest >= best_cost - 1e-12:
                break  # options are in cost order: none further can do better
            nodes += 1
            if nodes > node_limit:
                exhausted = False
                return
            current[i] = int(orders[depth][j])
            visit(depth + 1, free - uses[lo + j], c)
            if not exhausted:
                return

    visit(0, k.capacity.astype(float), 0.0)
    return best, best_cost, exhausted


def solve_greedy(k: Knapsack, base: Sequence[int]) -> KnapsackResult:
    """Greedy improvement from ``base`` (module docstring)."""
    _check_base(k, base)
    choice = _improve(k, list(base))
    return KnapsackResult(tuple(choice), k.total(choice), False)


def solve_lp(k: Knapsack, base: Sequence[int]) -> KnapsackResult:
    """LP relaxation (HiGHS) with feasible rounding, then greedy improvement."""
    _check_base(k, base)
    sizes = [c.size for c in k.costs]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    total = int(offsets[-1])
    cost = np.concatenate(list(k.costs))
    uses = np.vstack(list(k.uses))
    a_ub = csr_matrix(uses.T)
    rows = np.repeat(np.arange(len(sizes)), sizes)
    a_eq = csr_matrix((np.ones(total), (rows, np.arange(total))), shape=(len(sizes), total))
    # scipy-stubs accept only dense arrays here; HiGHS takes the sparse matrices as they are.
    result = linprog(  # type: ignore[call-overload]
        cost,
        A_ub=a_ub,
        b_ub=k.capacity,
        A_eq=a_eq,
        b_eq=np.ones(len(sizes)),
        bounds=(0.0, 1.0),
        method="highs",
    )
    choice = list(base)
    if result.status == 0:
        x = np.asarray(result.x, dtype=float)
        free = k._free(choice)
        confidence = [float(x[offsets[i] : offsets[i + 1]].max()) for i in range(len(sizes))]
        for i in sorted(range(len(sizes)), key=lambda j: -confidence[j]):
            share = x[offsets[i] : offsets[i + 1]]
            room = free + k.uses[i][choice[i]]
            for o in np.argsort(-share, kind="stable"):
                if share[o] <= 1e-6:
                    break
                if k.costs[i][o] < k.costs[i][choice[i]] and np.all(k.uses[i][o] <= room + _EPS):
                    free = room - k.uses[i][o]
                    choice[i] = int(o)
                    break
    choice = _improve(k, choice)
    return KnapsackResult(tuple(choice), k.total(choice), False)


def _improve(k: Knapsack, choice: list[int]) -> list[int]:
    free = k._free(choice)
    for _ in range(_GREEDY_PASSES):
        gain = [float(c[o] - c.min()) for c, o in zip(k.costs, choice, strict=True)]
        changed = False
        for i in sorted(range(len(choice)), key=lambda j: -gain[j]):
            if gain[i] <= 0:
                continue
            room = free + k.uses[i][choice[i]]
            fits = np.all(k.uses[i] <= room + _EPS, axis=1)
            costs = np.where(fits, k.costs[i], np.inf)
            o = int(np.argmin(costs))
            if costs[o] < k.costs[i][choice[i]] - 1e-12:
                free = room - k.uses[i][o]
                choice[i] = o
                changed = True
        if not changed:
            break
    return choice


def _check_base(k: Knapsack, base: Sequence[int]) -> None:
    if len(base) != len(k.costs) or not k.feasible(base):
        raise ValueError("base must pick one option per item and be feasible")
