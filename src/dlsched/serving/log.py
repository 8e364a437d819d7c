"""What a replica simulation records: each request's outcome and every gap between tokens."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dlsched.progress import ProgressFn

NAN = math.nan
REPORT_EVERY = 512
"""Iterations between two calls of a log's progress callback."""


@dataclass
class ServingLog:
    """Outcomes of ``n`` requests, filled in by replicas (times in seconds; NaN: never).

    ``first_token``/``last_token``: when the first and the last token were generated;
    ``finish``: when the response completed (for static batching, when the whole batch
    did; otherwise at the last token); ``generated``: tokens
    produced (a recomputed token is not counted twice); ``preemptions``: times the request
    lost its KV cache; ``rejected``: the request can never fit in a replica's KV memory.
    ``gaps``/``gap_weights``: every time between two tokens of one request, as (gap,
    number of tokens that waited it), so that percentiles over all tokens need no per-token
    list. ``settled``: requests finished or rejected so far (a replica adds to it as it sets
    ``finish`` or ``rejected``); ``progress``, when set, is called with ``(settled, n)`` every
    :data:`REPORT_EVERY` iterations."""

    n: int
    first_token: list[float] = field(init=False)
    finish: list[float] = field(init=False)
    last_token: list[float] = field(init=False)
    generated: list[int] = field(init=False)
    preemptions: list[int] = field(init=False)
    rejected: list[bool] = field(init=False)
    replica: list[int] = field(init=False)
    gaps: array[float] = field(default_factory=lambda: array("d"))
    gap_weights: array[int] = field(default_factory=lambda: array("q"))
    iterations: int = 0
    busy: list[float] = field(default_factory=list)
    settled: int = 0
    progress: ProgressFn | None = None

    def __post_init__(self) -> None:
        self.first_token = [NAN] * self.n
        self.finish = [NAN] * self.n
        self.last_token = [NAN] * self.n
        self.generated = [0] * self.n
        self.preemptions = [0] * self.n
        self.rejected = [False] * self.n
        self.replica = [-1] * self.n

    def ran(self, replica: int, seconds: float) -> None:
        """Replica ``replica`` ran one iteration of ``seconds``."""
        if replica >= len(self.busy):
            self.busy.extend([0.0] * (replica + 1 - len(self.busy)))
        self.busy[replica] += seconds
        self.iterations += 1
        if self.progress is not None and self.iterations % REPORT_EVERY == 0:
            self.progress(self.settled, self.n)

    def gap(self, seconds: float, tokens: int = 1) -> None:
        """``tokens`` tokens each came ``seconds`` after the previous token of their request."""
        if tokens > 0:
            self.gaps.append(seconds)
            self.gap_weights.append(tokens)

    def gap_percentiles(self, qs: tuple[float, ...]) -> list[float | None]:
        """Percentiles (0-100) of the time between tokens over all tokens (None: no gap)."""
        if not self.gaps:
            return [None for _ in qs]
        values: npt.NDArray[np.float64] = np.frombuffer(self.gaps, dtype=np.float64)
        weights = np.frombuffer(self.gap_weights, dtype=np.int64)
        order = np.argsort(values, kind="stable")
        cumulative = np.cumsum(weights[order])
        total = cumulative[-1]
        out: list[float | None] = []
        for q in qs:
            rank = max(1, math.ceil(q / 100.0 * total))
            out.append(float(values[order][np.searchsorted(cumulative, rank)]))
        return out
