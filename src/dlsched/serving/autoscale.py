"""A reactive autoscaler: replicas per window sized from the load of the window before.

Time is cut into windows of ``window_s``. The replicas of window w are the arrival rate seen in
window w − 1 (the first window sees its own) times ``headroom``, over what one replica sustains
at the SLO (``capacity_rps``, measured beforehand with the replica simulator), rounded up and
at least ``min_replicas``. A replica is kept while it is wanted: each lifetime becomes one job
of the cluster, submitted at its first window's start and holding its GPUs for its windows
plus ``cold_start_s`` (loading the model), so it serves from its start + cold start to its end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dlsched.serving.requests import RequestTrace
from dlsched.trace.schema import Trace


@dataclass(frozen=True)
class Autoscaler:
    """The autoscaler's settings (see the module docstring)."""

    capacity_rps: float
    window_s: float = 600.0
    headroom: float = 1.2
    min_replicas: int = 1
    cold_start_s: float = 120.0

    def __post_init__(self) -> None:
        if not (self.capacity_rps > 0 and self.window_s > 0 and self.headroom > 0):
            raise ValueError("capacity, window and headroom must be positive")
        if self.min_replicas < 0 or self.cold_start_s < 0:
            raise ValueError("min_replicas and cold_start_s must not be negative")

    def plan(self, trace: RequestTrace) -> list[int]:
        """Replicas of each window covering ``trace`` (from time 0)."""
        times, _, _ = trace.arrays()
        windows = max(1, math.ceil((float(times[-1]) + 1e-9) / self.window_s)) if len(trace) else 1
        counts = np.bincount((times // self.window_s).astype(np.int64), minlength=windows)
        seen = np.concatenate((counts[:1], counts[:-1])) / self.window_s
        wanted = np.ceil(seen * self.headroom / self.capacity_rps).astype(np.int64)
        return [max(self.min_replicas, int(n)) for n in wanted]


def replica_jobs(plan: list[int], scaler: Autoscaler, tp: int) -> Trace:
    """The jobs of ``plan``, one rigid job of ``tp`` GPUs per replica lifetime: replica r
    lives through each maximal run of consecutive windows that want more than r replicas
    (kept, not restarted, while it is wanted), named ``r<r>-w<first window>``, holding its
    GPUs for the run's windows plus the cold start."""
    ids, submits, durations = [], [], []
    for r in range(max(plan, default=0)):
        w = 0
        while w < len(plan):
            if plan[w] <= r:
                w += 1
                continue
            first = w
            while w < len(plan) and plan[w] > r:
                w += 1
            ids.append(f"r{r}-w{first}")
            submits.append(first * scaler.window_s)
            durations.append((w - first) * scaler.window_s + scaler.cold_start_s)
    n = len(ids)
    return Trace.from_columns(
        {
            "job_id": ids,
            "submit_time": submits,
            "num_gpus": [tp] * n,
            "duration": durations,
            "kind": ["rigid"] * n,
            "user": ["serving"] * n,
        },
        "autoscaled serving replicas",
    )
