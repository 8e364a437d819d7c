"""A linear iteration-time model fitted to measured prefill and decode times.

Prefill of T tokens with A attention pairs takes ``p0 + p1·T + p2·A``; a decode step of B
requests over K cached tokens takes ``d0 + d1·B + d2·K``. An iteration holding both pays the
larger fixed cost once (the weights stream through the GPUs once per iteration) plus every
marginal term. Coefficients are fitted by non-negative least squares on relative error, so a
100 ms point weighs as much as a 10 s one and no term can make time fall as work grows. The
third term (attention pairs, context tokens) is fitted only when the points identify it. The
fit is computed by :mod:`dlsched.numerics`, so it is the same bits on every CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dlsched.numerics.lstsq import lstsq, nnls, norm
from dlsched.serving.perf.measured import PerfPoint
from dlsched.serving.perf.model import chunk_pairs


@dataclass(frozen=True)
class LinearIterationModel:
    """Coefficients in seconds (per token, per pair, per request) for one deployment. The
    number of prompts of a prefill is not a term: a batch costs what its tokens and pairs do."""

    p0: float
    p1: float
    p2: float
    d0: float
    d1: float
    d2: float

    def iteration_time(
        self,
        prefill_tokens: int,
        prefill_pairs: float,
        prefill_seqs: int,
        decode_seqs: int,
        decode_context: int,
    ) -> float:
        fixed = max(self.p0 if prefill_tokens else 0.0, self.d0 if decode_seqs else 0.0)
        # Pairs without tokens, or context without requests, are no work.
        pairs = prefill_pairs if prefill_tokens else 0.0
        context = decode_context if decode_seqs else 0
        return (
            fixed
            + self.p1 * prefill_tokens
            + self.p2 * pairs
            + self.d1 * decode_seqs
            + self.d2 * context
        )

    def prefill_time(self, point: PerfPoint) -> float:
        """Predicted prefill of ``point``'s batch."""
        pairs = point.batch * chunk_pairs(point.prompt, 0)
        return self.iteration_time(point.batch * point.prompt, pairs, point.batch, 0, 0)

    def decode_time(self, point: PerfPoint) -> float:
        """Predicted mean decode iteration of ``point``'s batch."""
        return self.iteration_time(0, 0.0, 0, point.batch, round(point.decode_context))


def fit_linear(points: Sequence[PerfPoint]) -> LinearIterationModel:
    """Fit both phases to ``points`` (one deployment); ValueError for fewer than three."""
    if len(points) < 3:
        raise ValueError(f"fitting needs at least 3 measured points, got {len(points)}")
    prefill_x = [[1.0, p.batch * p.prompt, p.batch * chunk_pairs(p.prompt, 0)] for p in points]
    decode_x = [[1.0, float(p.batch), p.decode_context] for p in points]
    prefill = _relative_nnls(prefill_x, [p.prefill_s for p in points])
    decode = _relative_nnls(decode_x, [p.decode_s for p in points])
    return LinearIterationModel(*prefill, *decode)


def _relative_nnls(x: Sequence[Sequence[float]], y: Sequence[float]) -> tuple[float, float, float]:
    weighted = [[v / t for v in row] for row, t in zip(x, y, strict=True)]
    columns = [list(c) for c in zip(*weighted, strict=True)]
    # Columns are scaled to unit norm first: token and pair counts differ by 10^7.
    scale = [norm(c) or 1.0 for c in columns]
    scaled = [[v / s for v in c] for c, s in zip(columns, scale, strict=True)]
    ones = [1.0] * len(y)
    # Points of one prompt length cannot tell attention pairs from tokens (the columns are
    # proportional): the quadratic term is then left out rather than set arbitrarily.
    used = 3 if len(lstsq(scaled, ones, rtol=1e-9).independent) == 3 else 2
    solution = nnls(scaled[:used], ones)
    coefficients = [v / s for v, s in zip(solution, scale, strict=False)] + [0.0] * (3 - used)
    return coefficients[0], coefficients[1], coefficients[2]
