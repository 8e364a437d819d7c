"""The Philly-style noisy oracle of the Helios artifact (Hu et al., SC'21): the true duration
perturbed by a fixed error mix, for traces without job names or users (seeds.md 1.3).

Per job, with a seeded draw: 10% within ±10%, 40% off by 10–50%, 20% by 50–100%, 20% by a
factor of 1–10, 10% by a factor of 10–100, each over- or under-estimating with equal chance.
A relative error r gives ``true × (1 ± r)``; a factor m gives ``true × m`` or ``true ÷ m``.
Under-estimates by 100% are floored at 1% of the truth so every estimate stays positive.
"""

from __future__ import annotations

import numpy as np

from dlsched.perf.duration.base import DurationEstimator
from dlsched.trace.schema import Trace

# (share of jobs, low, high, multiplicative?)
ERROR_MIX: tuple[tuple[float, float, float, bool], ...] = (
    (0.1, 0.0, 0.1, False),
    (0.4, 0.1, 0.5, False),
    (0.2, 0.5, 1.0, False),
    (0.2, 1.0, 10.0, True),
    (0.1, 10.0, 100.0, True),
)


def error_factors(n: int, seed: int) -> np.ndarray:
    """The multiplicative error of each of ``n`` jobs (deterministic under ``seed``)."""
    rng = np.random.default_rng(seed)
    shares = np.array([m[0] for m in ERROR_MIX])
    kind = rng.choice(len(ERROR_MIX), size=n, p=shares / shares.sum())
    low = np.array([m[1] for m in ERROR_MIX])[kind]
    high = np.array([m[2] for m in ERROR_MIX])[kind]
    mult = np.array([m[3] for m in ERROR_MIX])[kind]
    magnitude = rng.uniform(low, high)
    over = rng.random(n) < 0.5
    relative = np.where(over, 1.0 + magnitude, np.maximum(1.0 - magnitude, 0.01))
    multiplicative = np.where(over, magnitude, 1.0 / magnitude)
    return np.where(mult, multiplicative, relative)


class NoisyOracle(DurationEstimator):
    """True duration × a seeded error factor (an oracle by construction; see module doc)."""

    name = "noisy-oracle"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._estimates: list[float] = []

    def bind(self, trace: Trace) -> None:
        truth = trace.column("duration").to_numpy(zero_copy_only=False).astype(float)
        if np.isnan(truth).any():
            raise ValueError(
                f"noisy-oracle needs every job's duration; {trace.source!r} has "
                f"{int(np.isnan(truth).sum())} jobs without one"
            )
        est = np.maximum(truth * error_factors(len(truth), self.seed), 1.0)
        self._estimates = est.tolist()

    def estimate(self, row: int, now: float) -> float:
        return self._estimates[row]
