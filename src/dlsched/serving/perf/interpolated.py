"""The iteration model that follows the measurements: exact where a deployment was measured,
interpolated between measured points, a fitted form beyond them.

Prefill of ``n`` prompts (or chunks) holding ``T`` tokens with ``A`` attention pairs takes
``L(T) + c·A`` for one prompt and ``max(L(T), ρ(n)·H(T)) + c·A`` for more:

- ``c`` is the cost of one (query, key) pair, from the form ``a + b·T + c·T(T+1)/2`` fitted to
  the single-prompt measurements (capped so that the rest of every measured prompt still grows
  with its length);
- ``L(T)``, the single-prompt prefill of ``T`` tokens less its attention, is a
  :class:`~dlsched.serving.perf.interpolate.ShapedCurve` through the measured prompt lengths
  shaped by ``a + b·T`` (refitted to them): exact at every measured length, the form corrected
  by its neighbours' ratio in between, the form's marginal cost beyond;
- ``ρ(n)``, the batching overhead, is 1 for one prompt and, at each measured batch size, the
  measured prefill of the batch (less its attention) over ``L`` of its tokens, interpolated
  geometrically and held beyond the largest. The measured batched prefills cost more than one
  prompt of as many tokens (the Splitwise table: a batch of 16 prompts of 512 tokens takes
  1.3–1.8x one prompt of 8,192 on most deployments), so they are kept apart from single
  prompts. Batches were measured at one prompt length, so whether the overhead follows the
  count or the tokens cannot be told from them; it is taken to follow the count (two prompts
  of 4,096 tokens cost about what their tokens do, not what 16 prompts of 512 do);
- ``H(T)``, the batched token curve, is the batches' measurements less their attention over
  ``ρ`` of their count, through their batch tokens (and, for a batch of one, ``L``): equal to
  ``L`` where ``ρ`` follows the measurements, it keeps a batch exact where the overhead falls
  with the count (``ρ`` is pooled there to stay monotone) and measures the token curve beyond
  the longest single prompt.

A decode step of ``B`` requests holding ``K`` tokens of KV cache takes ``M(B) + e·K``: ``e``
from the form ``d0 + d1·B + e·K`` fitted to every decode measurement (capped so that the rest
of each batch size's step still grows with the batch), ``M`` a curve through the measured
batch sizes (each knot the mean of its measurements less ``e·K``) shaped by ``d0 + d1·B``.
Single-request decodes vary by 2–10% over a 40-fold range of context with no trend beyond
``e``, so the context axis is the fitted term, not interpolated noise.

An iteration with both runs the weights through the GPUs once: its time is ``P + D −
min(P, D, s)`` with ``s`` the smaller of the shortest prefill and the shortest decode step
(their fixed cost), never less than either phase alone; no measurement holds both, so this
part is the form's, not the table's. Knots whose measurements fall as work grows are pooled
(:func:`~dlsched.serving.perf.interpolate.isotonic`), and a batch is never cheaper than one
prompt of its tokens, so the model is non-decreasing in every argument; it is exact at every
measured point that pooling leaves (``bench/serving_perf.py`` prints the largest error at
the points fitted to: 5–6% in each regime, all from measurements that fall as work grows).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from dlsched.serving.perf.fitting import relative_nnls
from dlsched.serving.perf.interpolate import ShapedCurve, isotonic, shaped_curve
from dlsched.serving.perf.measured import PerfPoint
from dlsched.serving.perf.model import chunk_pairs


@dataclass(frozen=True)
class InterpolatedIterationModel:
    """One deployment's curves (seconds): ``tokens`` is ``L``, ``batching`` ``ρ``, ``batched``
    ``H`` (None without batched measurements), ``decode`` ``M``; ``pair_s`` is ``c``,
    ``context_s`` ``e`` and ``shared_s`` ``s`` of the module docstring."""

    tokens: ShapedCurve
    batching: ShapedCurve
    batched: ShapedCurve | None
    pair_s: float
    decode: ShapedCurve
    context_s: float
    shared_s: float

    def prefill_time(self, tokens: int, pairs: float, seqs: int) -> float:
        """A prefill-only iteration of ``seqs`` prompts or chunks (0 read as 1) holding
        ``tokens`` tokens and ``pairs`` attention pairs; 0 without tokens."""
        if tokens <= 0:
            return 0.0
        rest = self.tokens(tokens)
        if seqs > 1 and self.batched is not None:
            rest = max(rest, self.batching(seqs) * self.batched(tokens))
        return rest + self.pair_s * pairs

    def decode_step_time(self, seqs: int, context: int) -> float:
        """A decode-only iteration of ``seqs`` requests over ``context`` cached tokens; 0
        without requests."""
        if seqs <= 0:
            return 0.0
        return self.decode(seqs) + self.context_s * context

    def iteration_time(
        self,
        prefill_tokens: int,
        prefill_pairs: float,
        prefill_seqs: int,
        decode_seqs: int,
        decode_context: int,
    ) -> float:
        prefill = self.prefill_time(prefill_tokens, prefill_pairs, prefill_seqs)
        decode = self.decode_step_time(decode_seqs, decode_context)
        # P + D − min(P, D, s), written so that rounding cannot take it below either phase.
        return max(prefill, decode) + max(0.0, min(prefill, decode) - self.shared_s)


def fit_interpolated(points: Sequence[PerfPoint]) -> InterpolatedIterationModel:
    """The model of one deployment's ``points``. ValueError without single-prompt (batch 1)
    measurements of at least two prompt lengths."""
    tokens, pair_s = _single_prefill(points)
    batching, batched = _batching(points, tokens, pair_s)
    decode, context_s = _decode(points)
    shared = min(tokens(1) + pair_s, decode(1) + context_s)
    return InterpolatedIterationModel(tokens, batching, batched, pair_s, decode, context_s, shared)


def _single_prefill(points: Sequence[PerfPoint]) -> tuple[ShapedCurve, float]:
    by_prompt: dict[int, list[PerfPoint]] = defaultdict(list)
    for p in points:
        if p.batch == 1:
            by_prompt[p.prompt].append(p)
    if len(by_prompt) < 2:
        raise ValueError(
            "fitting needs single-prompt (batch 1) prefill measurements of at least 2 prompt "
            f"lengths, got {len(by_prompt)}"
        )
    lengths = sorted(by_prompt)
    runs = [float(sum(p.runs for p in by_prompt[t])) for t in lengths]
    means = [_run_mean(by_prompt[t], [p.prefill_s for p in by_prompt[t]]) for t in lengths]
    times = isotonic(means, runs)
    pairs = [chunk_pairs(t, 0) for t in lengths]
    _, _, pair_s = relative_nnls(
        [[1.0, float(t), a] for t, a in zip(lengths, pairs, strict=True)], times
    )
    # The rest of each prompt's time must still grow with its length (and stay most of the
    # shortest prompt's), or the token curve could not be monotone.
    caps = [times[0] / (2.0 * pairs[0])] + [
        (t1 - t0) / (a1 - a0)
        for t0, t1, a0, a1 in zip(times, times[1:], pairs, pairs[1:], strict=False)
    ]
    pair_s = min(pair_s, *caps)
    rest = [t - pair_s * a for t, a in zip(times, pairs, strict=True)]
    rest = isotonic(rest, runs)  # only rounding can make it fall after the cap
    fixed, per_token = relative_nnls([[1.0, float(t)] for t in lengths], rest)
    return shaped_curve([float(t) for t in lengths], rest, fixed, per_token), pair_s


def _batching(
    points: Sequence[PerfPoint], tokens: ShapedCurve, pair_s: float
) -> tuple[ShapedCurve, ShapedCurve | None]:
    """The batching overhead by count and the batched token curve it scales."""
    batched = [p for p in points if p.batch > 1]
    if not batched:
        return shaped_curve([1.0], [1.0]), None
    by_batch: dict[int, list[PerfPoint]] = defaultdict(list)
    for p in batched:
        by_batch[p.batch].append(p)
    counts = sorted(by_batch)
    overheads = [
        _run_mean(by_batch[n], [_rest(p, pair_s) / tokens(n * p.prompt) for p in by_batch[n]])
        for n in counts
    ]
    runs = [float(sum(p.runs for p in by_batch[n])) for n in counts]
    # A batch is never cheaper than one prompt of as many tokens and pairs.
    pooled = [max(1.0, r) for r in isotonic(overheads, runs)]
    overhead = shaped_curve([1.0, *(float(n) for n in counts)], [1.0, *pooled])
    # Where the overhead was pooled, the batches' own token curve keeps them exact.
    by_tokens: dict[int, list[PerfPoint]] = defaultdict(list)
    for p in batched:
        by_tokens[p.batch * p.prompt].append(p)
    totals = sorted(by_tokens)
    rest = [
        _run_mean(by_tokens[t], [_rest(p, pair_s) / overhead(p.batch) for p in by_tokens[t]])
        for t in totals
    ]
    weights = [float(sum(p.runs for p in by_tokens[t])) for t in totals]
    start = min(p.prompt for p in batched)
    if start < totals[0]:
        # A batch of one is a single prompt.
        totals, rest, weights = [start, *totals], [tokens(start), *rest], [1.0, *weights]
    rest = isotonic(rest, weights)
    fixed, per_token = relative_nnls([[1.0, float(t)] for t in totals], rest)
    return overhead, shaped_curve([float(t) for t in totals], rest, fixed, per_token)


def _rest(point: PerfPoint, pair_s: float) -> float:
    """``point``'s measured prefill less its attention pairs' cost."""
    return point.prefill_s - pair_s * point.batch * chunk_pairs(point.prompt, 0)


def _decode(points: Sequence[PerfPoint]) -> tuple[ShapedCurve, float]:
    if not points:
        raise ValueError("fitting needs decode measurements")
    rows = [[1.0, float(p.batch), p.decode_context] for p in points]
    _, _, context_s = relative_nnls(rows, [p.decode_s for p in points])
    by_batch: dict[int, list[PerfPoint]] = defaultdict(list)
    for p in points:
        by_batch[p.batch].append(p)
    batches = sorted(by_batch)
    steps = [_run_mean(by_batch[b], [p.decode_s for p in by_batch[b]]) for b in batches]
    contexts = [_run_mean(by_batch[b], [p.decode_context for p in by_batch[b]]) for b in batches]
    # The rest of each batch size's step must still grow with the batch where the steps do
    # (and stay most of every step), so the context term cannot pull a knot out of order.
    caps = [s / (2.0 * k) for s, k in zip(steps, contexts, strict=True)] + [
        (s1 - s0) / (k1 - k0)
        for s0, s1, k0, k1 in zip(steps, steps[1:], contexts, contexts[1:], strict=False)
        if s1 > s0 and k1 > k0
    ]
    context_s = min(context_s, *caps)
    rest = [s - context_s * k for s, k in zip(steps, contexts, strict=True)]
    runs = [float(sum(p.runs for p in by_batch[b])) for b in batches]
    rest = isotonic(rest, runs)
    fixed, per_seq = relative_nnls([[1.0, float(b)] for b in batches], rest)
    return shaped_curve([float(b) for b in batches], rest, fixed, per_seq), context_s


def _run_mean(points: Sequence[PerfPoint], values: Sequence[float]) -> float:
    """The mean of ``values`` (one per point) weighted by the points' runs."""
    total = sum(p.runs for p in points)
    return sum(v * p.runs for v, p in zip(values, points, strict=True)) / total
