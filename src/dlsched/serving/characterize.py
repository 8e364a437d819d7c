"""Characterization of a request trace: arrival rate over time and burstiness, prompt and
output length distributions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlsched.serving.requests import RequestTrace

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.99)


@dataclass(frozen=True)
class LengthStats:
    """Mean, quantiles (at :data:`QUANTILES`) and extremes of a token count."""

    mean: float
    quantiles: tuple[float, ...]
    minimum: int
    maximum: int


@dataclass(frozen=True)
class RequestCharacterization:
    """``rate_per_bin``: arrivals per second in each of equal bins ``bin_seconds`` wide that
    span the trace from its first arrival to its last; ``gap_cv``: coefficient of variation
    of the times between arrivals (1 for Poisson; None for fewer than three requests);
    ``length_correlation``: Pearson correlation of prompt and output lengths (None when
    either is constant)."""

    requests: int
    duration_s: float
    mean_rate: float | None
    bin_seconds: float
    rate_per_bin: tuple[float, ...]
    peak_to_mean: float | None
    gap_cv: float | None
    prompt: LengthStats
    output: LengthStats
    length_correlation: float | None


def _lengths(values: np.ndarray) -> LengthStats:
    return LengthStats(
        float(values.mean()),
        tuple(float(q) for q in np.quantile(values, QUANTILES)),
        int(values.min()),
        int(values.max()),
    )


def characterize_requests(
    trace: RequestTrace, bin_seconds: float = 60.0
) -> RequestCharacterization:
    """The characterization of ``trace`` (ValueError when it is empty)."""
    if not len(trace):
        raise ValueError(f"{trace.source}: no request to characterize")
    if not bin_seconds > 0:
        raise ValueError(f"bin width must be positive, got {bin_seconds:g} s")
    times, prompts, outputs = trace.arrays()
    duration = float(times[-1] - times[0])
    # Equal bins spanning the trace exactly, about ``bin_seconds`` wide: a short last bin
    # would show a rate its few seconds cannot support.
    bins = max(1, round(duration / bin_seconds))
    width = duration / bins if duration > 0 else bin_seconds
    index = np.minimum(((times - times[0]) / width).astype(np.int64), bins - 1)
    rates = np.bincount(index, minlength=bins) / width
    gaps = np.diff(times)
    cv = float(gaps.std() / gaps.mean()) if len(gaps) >= 2 and gaps.mean() > 0 else None
    constant = prompts.min() == prompts.max() or outputs.min() == outputs.max()
    corr = None if constant else float(np.corrcoef(prompts, outputs)[0, 1])
    mean_rate = (len(times) - 1) / duration if duration > 0 else None
    return RequestCharacterization(
        requests=len(times),
        duration_s=duration,
        mean_rate=mean_rate,
        bin_seconds=width,
        rate_per_bin=tuple(float(r) for r in rates),
        peak_to_mean=float(rates.max() / rates.mean()) if bins > 1 else None,
        gap_cv=cv,
        prompt=_lengths(prompts),
        output=_lengths(outputs),
        length_correlation=corr,
    )
