"""PendingQueue against a plain model of Kueue's two pending sets (a list and a dict).

The queue hands groups over whole and deletes lazily; whatever sequence of pushes, parks,
bulk moves, pops and removals it sees, what it holds, in what order and in which set must be
exactly what the plain model holds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.tenancy.active_queue import PendingQueue, shape_of
from dlsched.tenancy.admission import Workload


def _workloads(n: int) -> list[Workload]:
    return [
        Workload(
            key=i,
            cq=0,
            priority=i % 3,
            created=float(i % 5),
            seq=i,
            requests={"gpu": float(1 + i % 2)},
        )
        for i in range(n)
    ]


def _order(wl: Workload) -> tuple[int, float, int]:
    return (-wl.priority, wl.created, wl.seq)


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["push", "park", "park_alone", "park_shape", "wake", "pop", "remove"]),
        st.integers(0, 23),
    ),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(_OPS)
def test_pending_queue_matches_the_plain_model(ops: list[tuple[str, int]]) -> None:
    wls = _workloads(24)
    queue = PendingQueue()
    active: dict[Workload, None] = {}
    parked: dict[Workload, None] = {}
    for op, i in ops:
        wl = wls[i]
        present = wl in active or wl in parked
        if op == "push":
            queue.push(wl, _order(wl))
            if not present:
                active[wl] = None
        elif op in ("park", "park_alone"):
            queue.park(wl, _order(wl), grouped=op == "park")
            if not present:
                parked[wl] = None
        elif op == "park_shape":
            key: Any = shape_of(wl)
            queue.park_shape(key)
            for w in [w for w in active if shape_of(w) == key]:
                del active[w]
                parked[w] = None
        elif op == "wake":
            queue.wake()
            active.update(parked)
            parked.clear()
        elif op == "pop":
            expected = min(active, key=_order, default=None)
            assert queue.pop() is expected
            if expected is not None:
                del active[expected]
        else:
            assert queue.remove(wl) is present
            active.pop(wl, None)
            parked.pop(wl, None)
        assert queue.active() == sorted(active, key=_order)
        assert queue.inadmissible() == sorted(parked, key=_order)
        assert (queue.n_active, queue.n_inadmissible) == (len(active), len(parked))
        assert all(queue.is_active(w) == (w in active) for w in wls)
