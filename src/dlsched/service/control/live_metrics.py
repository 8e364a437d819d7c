"""What ``GET /metrics`` reports: bounded series of utilization and queue length, and the
durations of recent scheduling cycles. Kept in memory (they restart with the service)."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import numpy as np


class LiveMetrics:
    """Samples at most one point per ``min_gap_s`` unless the value changed; keeps the last
    ``max_points`` points of each series and the last ``max_cycles`` cycle durations."""

    def __init__(self, max_points: int = 2000, max_cycles: int = 1000, min_gap_s: float = 5.0):
        self.min_gap_s = min_gap_s
        self.utilization: deque[tuple[float, float]] = deque(maxlen=max_points)
        self.queue_length: deque[tuple[float, int]] = deque(maxlen=max_points)
        self.cycle_ms: deque[float] = deque(maxlen=max_cycles)
        self._lock = threading.Lock()

    def sample(self, now: float, utilization: float, queue_length: int) -> None:
        with self._lock:
            _add(self.utilization, now, utilization, self.min_gap_s)
            _add(self.queue_length, now, queue_length, self.min_gap_s)

    def cycle(self, ms: float) -> None:
        with self._lock:
            self.cycle_ms.append(ms)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            cycles = np.array(self.cycle_ms, dtype=float)
            return {
                "utilization": [list(p) for p in self.utilization],
                "queue_length": [list(p) for p in self.queue_length],
                "cycle_ms_p50": float(np.percentile(cycles, 50)) if len(cycles) else None,
                "cycle_ms_p99": float(np.percentile(cycles, 99)) if len(cycles) else None,
            }


def _add(series: deque[Any], now: float, value: float, gap: float) -> None:
    if series:
        t, last = series[-1]
        if last == value and now - t < gap:
            return
    series.append((now, value))
