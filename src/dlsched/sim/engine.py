"""A minimal discrete-event engine: a heap of callbacks keyed by (time, priority, sequence).

The engine knows nothing of clusters or jobs. Ties in time are broken by priority (lower first)
and then by insertion order, so a run is a pure function of its inputs. Exceptions raised by a
callback propagate out of :meth:`Engine.run` unchanged; the engine never swallows them.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from heapq import heappop, heappush
from typing import Any

Callback = Callable[[Any], None]


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the objects alive on entry (a run's trace columns and cluster, millions of them for
    a large trace) out of the garbage collector's full collections until exit. Each full
    collection of a long run would otherwise traverse them all again; what the run allocates
    is collected as usual. Does nothing when the caller froze objects itself (it owns that
    state), so nesting is safe."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class Engine:
    """Event loop over continuous time. Cost grows with the number of events, not with time."""

    __slots__ = ("_heap", "_seq", "_stopped", "events_processed", "now")

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._heap: list[tuple[float, int, int, Callback, Any]] = []
        self._seq = 0
        self._stopped = False
        self.events_processed = 0

    def schedule(self, time: float, priority: int, callback: Callback, arg: Any = None) -> None:
        """Run ``callback(arg)`` at ``time``. Scheduling into the past is a bug and raises."""
        if time < self.now:
            raise ValueError(f"event scheduled in the past: {time} < now {self.now}")
        self._seq += 1
        heappush(self._heap, (time, priority, self._seq, callback, arg))

    def stop(self) -> None:
        """End :meth:`run` after the current callback returns."""
        self._stopped = True

    def __len__(self) -> int:
        return len(self._heap)

    def peek_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def run(self, until: float | None = None) -> None:
        """Process events in order until the heap is empty, :meth:`stop` is called, or the next
        event lies beyond ``until`` (which is then left queued)."""
        heap = self._heap
        self._stopped = False
        count = 0
        try:
            while heap and not self._stopped:
                if until is not None and heap[0][0] > until:
                    self.now = until
                    break
                time, _prio, _seq, callback, arg = heappop(heap)
                self.now = time
                count += 1
                callback(arg)
        finally:
            self.events_processed += count
