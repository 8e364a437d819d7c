"""Synthetic request traces and the transforms that reshape a real one.

Arrivals: a Poisson process (exponential gaps) or a bursty renewal process with Gamma gaps of a
given coefficient of variation (CV > 1 is burstier than Poisson; BurstGPT fits its arrivals
with Gamma gaps, Wang et al. 2024), at a given mean rate. Token lengths: fixed, or drawn
jointly (prompt and output of one request together, so their correlation is kept) from a
trace. Transforms: a rate scale (arrival times compressed or stretched), and a day-like
pattern (the trace tiled over the span at its peak rate and thinned by a sinusoidal daily
profile). Every random choice comes from a seeded numpy generator: same inputs, same trace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dlsched.serving.requests import RequestTrace

PROCESSES = ("poisson", "gamma")


@dataclass(frozen=True)
class Lengths:
    """Token lengths of synthetic requests: drawn from ``source`` (pairs resampled with
    replacement) or, without one, ``prompt`` and ``output`` for every request."""

    source: RequestTrace | None = None
    prompt: int = 512
    output: int = 128

    def draw(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        if self.source is None:
            if self.prompt < 1 or self.output < 1:
                raise ValueError("fixed token lengths must be at least 1")
            return np.full(n, self.prompt, np.int64), np.full(n, self.output, np.int64)
        if not len(self.source):
            raise ValueError(f"{self.source.source}: no request to draw token lengths from")
        _, prompts, outputs = self.source.arrays()
        pick = rng.integers(0, len(prompts), size=n)
        return prompts[pick], outputs[pick]


def gaps(
    process: str, rate: float, n: int, rng: np.random.Generator, cv: float = 1.0
) -> np.ndarray:
    """``n`` times between arrivals of ``process`` at mean ``rate`` per second (``cv``: the
    Gamma gaps' coefficient of variation)."""
    if process not in PROCESSES:
        raise ValueError(f"arrival process {process!r} unknown; expected one of {PROCESSES}")
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"arrival rate must be a positive number, got {rate:g}")
    if process == "poisson":
        return rng.exponential(1.0 / rate, size=n)
    if not (cv > 0 and math.isfinite(cv)):
        raise ValueError(f"coefficient of variation must be positive, got {cv:g}")
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, 1.0 / (rate * shape), size=n)


def synthetic_requests(
    rate: float,
    *,
    count: int | None = None,
    duration: float | None = None,
    process: str = "poisson",
    cv: float = 1.0,
    lengths: Lengths | None = None,
    seed: int = 0,
) -> RequestTrace:
    """Requests arriving by ``process`` at ``rate`` per second: exactly ``count`` of them, or
    those arriving within ``duration`` seconds (one of the two). The first arrives at 0."""
    if (count is None) == (duration is None):
        raise ValueError("give a request count or a duration, not both or neither")
    rng = np.random.default_rng(seed)
    if count is not None:
        if count < 1:
            raise ValueError(f"request count must be at least 1, got {count}")
        between = gaps(process, rate, count - 1, rng, cv)
        times = np.concatenate(([0.0], np.cumsum(between)))
    else:
        assert duration is not None
        if not (duration > 0 and math.isfinite(duration)):
            raise ValueError(f"duration must be a positive number of seconds, got {duration:g}")
        parts = [np.zeros(1)]
        last, total = 0.0, 1
        while last <= duration:
            # Draw in chunks a little larger than the expected remainder.
            chunk = gaps(process, rate, int((duration - last) * rate * 1.1) + 16, rng, cv)
            times = last + np.cumsum(chunk)
            parts.append(times)
            total += len(times)
            last = float(times[-1])
        times = np.concatenate(parts)
        times = times[times <= duration]
    prompts, outputs = (lengths or Lengths()).draw(len(times), rng)
    label = f"synthetic {process} {rate:g}/s" + (f" cv {cv:g}" if process == "gamma" else "")
    return RequestTrace.from_columns(
        {"arrival_time": times, "prompt_tokens": prompts, "output_tokens": outputs}, label
    )


def scale_rate(trace: RequestTrace, factor: float) -> RequestTrace:
    """``trace`` with arrivals ``factor`` times as frequent (times divided by ``factor``)."""
    if not (factor > 0 and math.isfinite(factor)):
        raise ValueError(f"rate scale must be a positive number, got {factor:g}")
    times = trace.column("arrival_time").to_numpy() / factor
    table = trace.table.set_column(0, trace.table.schema.field(0), pa.array(times))
    return RequestTrace(table, f"{trace.source} x{factor:g}", trace.origin_unix)


def day_pattern(
    trace: RequestTrace,
    *,
    span: float = 86_400.0,
    mean_rate: float,
    peak_to_trough: float = 3.0,
    peak_hour: float = 14.0,
    seed: int = 0,
) -> RequestTrace:
    """A ``span``-second trace with a daily load curve: ``trace`` is tiled end to end with its
    arrivals compressed to the curve's peak rate, and each request kept with probability
    rate(t) / peak, where rate(t) is a sinusoid with period one day, highest at
    ``peak_hour`` o'clock, ``peak_to_trough`` times its lowest, averaging ``mean_rate``.
    Burstiness within the tiled trace is kept; token lengths are the trace's own."""
    if len(trace) < 2 or trace.duration() <= 0:
        raise ValueError(f"{trace.source}: needs at least two requests at distinct times")
    if not peak_to_trough >= 1:
        raise ValueError(f"peak-to-trough ratio must be at least 1, got {peak_to_trough:g}")
    amplitude = (peak_to_trough - 1) / (peak_to_trough + 1)
    peak = mean_rate * (1 + amplitude)
    times, prompts, outputs = trace.arrays()
    own_rate = (len(times) - 1) / (times[-1] - times[0])
    squeeze = own_rate / peak
    period = (times[-1] - times[0]) * squeeze + 1.0 / peak
    base = (times - times[0]) * squeeze
    tiles = math.ceil(span / period)
    at = (base[None, :] + period * np.arange(tiles)[:, None]).ravel()
    keep_len = at < span
    at = at[keep_len]
    rate = mean_rate * (1 + amplitude * np.cos(2 * math.pi * (at / 86_400.0 - peak_hour / 24)))
    rng = np.random.default_rng(seed)
    kept = rng.random(len(at)) < rate / peak
    index = np.tile(np.arange(len(times)), tiles)[keep_len][kept]
    label = f"{trace.source} day pattern {mean_rate:g}/s"
    return RequestTrace.from_columns(
        {
            "arrival_time": at[kept],
            "prompt_tokens": prompts[index],
            "output_tokens": outputs[index],
        },
        label,
    )
