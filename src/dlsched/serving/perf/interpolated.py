"""The iteration model that follows the measurements: exact where a deployment was measured,
interpolated between measured points, a fitted form beyond them.

Prefill of ``n`` prompts (or chunks) holding ``T`` tokens with ``A`` attention pairs takes

    ρ(n) · L(T) + c · A

- ``c`` is the cost of one (query, key) pair, from the form ``a + b·T + c·T(T+1)/2`` fitted to
  the single-prompt measurements (capped so that the rest of every measured prompt still grows
  with its length);
- ``L(T)``, the single-prompt prefill of ``T`` tokens without its attention, is a
  :class:`~dlsched.serving.perf.interpolate.ShapedCurve` through the measured prompt lengths
  shaped by ``a + b·T`` (refitted to them): exact at every measured length, the form corrected
  by its neighbours' ratio in between, the form scaled by the nearest length's ratio beyond;
- ``ρ(n)``, the batching overhead, is 1 for one prompt and, for ``n`` prompts, the measured
  prefill of a batch of ``n`` over what ``L`` and ``c`` give for its tokens and pairs, one
  knot per measured batch size, interpolated geometrically and held beyond the largest. The
  measured batched prefills cost more than one prompt of as many tokens (the Splitwise table:
  a batch of 16 prompts of 512 tokens takes 1.3–1.8x one prompt of 8,192), so they are kept
  apart from single prompts; as batches were measured at one prompt length, the overhead is
  a function of the count only.

A decode step of ``B`` requests holding ``K`` tokens of KV cache takes ``M(B) + e·K``: ``e``
from the form ``d0 + d1·B + e·K`` fitted to every decode measurement, ``M`` a curve through the
measured batch sizes (each knot the mean of its measurements less ``e·K``) shaped by
``d0 + d1·B``. Single-request decodes vary by about 2% over a 40-fold range of context, with no
trend beyond ``e``, so the context axis is the fitted term, not interpolated noise.

An iteration with both runs the weights through the GPUs once: its time is ``P + D −
min(P, D, s)`` with ``s`` the smaller of the shortest prefill and the shortest decode step
(their fixed cost), never less than either phase alone. Knots whose measurements fall as work
grows are pooled (:func:`~dlsched.serving.perf.interpolate.isotonic`), so the model is
non-decreasing in every argument; it is exact at every measured point the pooling leaves.
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
    """One deployment's curves (seconds): ``tokens`` is ``L``, ``batching`` ``ρ``, ``decode``
    ``M``; ``pair_s`` is ``c``, ``context_s`` ``e`` and ``shared_s`` ``s`` of the module
    docstring."""

    tokens: ShapedCurve
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
            rest = max(rest, self.batched(tokens))
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
    batched = _batched_prefill(points, tokens, pair_s)
    decode, context_s = _decode(points)
    shared = min(tokens(1) + pair_s, decode(1) + context_s)
    return InterpolatedIterationModel(tokens, batched, pair_s, decode, context_s, shared)


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


def _batched_prefill(
    points: Sequence[PerfPoint], tokens: ShapedCurve, pair_s: float
) -> ShapedCurve | None:
    by_tokens: dict[int, list[PerfPoint]] = defaultdict(list)
    for p in points:
        if p.batch > 1:
            by_tokens[p.batch * p.prompt].append(p)
    if not by_tokens:
        return None
    totals = sorted(by_tokens)
    rest = [
        _run_mean(
            by_tokens[t],
            [p.prefill_s - pair_s * p.batch * chunk_pairs(p.prompt, 0) for p in by_tokens[t]],
        )
        for t in totals
    ]
    runs = [float(sum(p.runs for p in by_tokens[t])) for t in totals]
    # A batch of one is a single prompt: the curve starts from the single prompts' at the
    # batches' prompt length.
    start = min(p.prompt for t in totals for p in by_tokens[t])
    if start < totals[0]:
        totals, rest, runs = [start, *totals], [tokens(start), *rest], [1.0, *runs]
    rest = isotonic(rest, runs)
    fixed, per_token = relative_nnls([[1.0, float(t)] for t in totals], rest)
    return shaped_curve([float(t) for t in totals], rest, fixed, per_token)


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
