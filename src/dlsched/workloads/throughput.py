"""Training throughput measured after warm-up (the first steps of a process are slower)."""

from __future__ import annotations

import time
from collections.abc import Callable


class ThroughputMeter:
    """Samples per second over the steps after the first ``warmup_steps`` of this process.

    The first steps pay for memory allocation and kernel selection, so they are left out:
    :attr:`samples_per_s` is 0.0 until at least one step after warm-up has finished, and counts
    the time from the end of warm-up to the end of the latest step.
    """

    def __init__(self, warmup_steps: int = 3, clock: Callable[[], float] = time.perf_counter):
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
        self._warmup = warmup_steps
        self._clock = clock
        self._steps = 0
        self._since: float | None = clock() if warmup_steps == 0 else None
        self._last = 0.0
        self._samples = 0

    def step_done(self, samples: int) -> None:
        """Record one finished step of ``samples`` samples."""
        self._steps += 1
        if self._since is None:
            if self._steps >= self._warmup:
                self._since = self._clock()
            return
        self._samples += samples
        self._last = self._clock()

    @property
    def samples_per_s(self) -> float:
        """Measured throughput, 0.0 before any step after warm-up."""
        if self._since is None or self._samples == 0:
            return 0.0
        elapsed = self._last - self._since
        return self._samples / elapsed if elapsed > 0 else 0.0
