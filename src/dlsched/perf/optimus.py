"""Optimus-style performance models (Peng et al., EuroSys'18).

- Convergence: training loss after ``k`` steps follows ``l(k) = 1/(β0·k + β1) + β2`` with
  ``β ≥ 0``. :func:`fit_loss_curve` fits it: for a fixed ``β2`` the model is linear in
  ``(β0, β1)`` after ``1/(l − β2)``, so ``β2`` is searched on a grid below the smallest loss
  (non-negative least squares for ``β0, β1`` at each), and the best triple is refined by
  bounded least squares on the loss residuals.
- Speed of a parameter-server (PS) job with ``p`` servers and ``w`` workers at global batch
  ``M``: ``f(p, w) = (θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p)^(-1)`` steps per second (forward and
  backward work split over workers, a fixed cost, the servers' share of the gradient traffic,
  and per-worker and per-server overheads). The step time ``1/f`` is linear in ``θ ≥ 0``;
  :func:`fit_ps_speed` solves it by non-negative least squares on relative step-time errors.

The bundled profiles are all-reduce measurements, so they hold no PS data: speed samples for
:func:`fit_ps_speed` come from a PS system or, in tests, from a known ``θ``.
:func:`loss_from_metric` turns a validation metric into a decreasing loss-like curve (our
reading of the metrics: accuracy-like ones are subtracted from their ceiling).

Both fits and the speed model are computed by :mod:`dlsched.numerics`, so a fit and every
decision made from it are the same bits on every CPU.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from dlsched.numerics.curve_fit import fit_bounded
from dlsched.numerics.lstsq import nnls

_BETA2_GRID = 64
"""β2 is searched at ``min(loss)·(1 − 10^(−4·i/63))``, i = 0 … 63."""

METRIC_CEILING: Mapping[str, float | None] = MappingProxyType(
    {
        "bert": 100.0,  # SQuAD F1 in percent, higher is better
        "cifar10": 1.0,  # top-1 accuracy, higher is better
        "deepspeech2": None,  # word error rate, lower is better
        "imagenet": 1.0,  # top-1 accuracy, higher is better
        "ncf": 1.0,  # hit rate, higher is better
        "yolov3": None,  # validation loss, lower is better
    }
)
"""Per application: the ceiling a higher-is-better metric is subtracted from, or None when the
metric already decreases as training converges."""


@dataclass(frozen=True, slots=True)
class LossCurve:
    """``l(k) = 1/(β0·k + β1) + β2``; calling it gives the loss after ``k`` steps."""

    beta0: float  # ≥ 0: how fast 1/(l − β2) grows per step
    beta1: float  # ≥ 0: 1/(l(0) − β2)
    beta2: float  # ≥ 0: the loss it converges to

    def __call__(self, step: float) -> float:
        denominator = self.beta0 * step + self.beta1
        return math.inf if denominator <= 0 else 1.0 / denominator + self.beta2

    def steps_to(self, target: float) -> float:
        """The step at which the loss reaches ``target`` (0 if it starts there; inf if the
        curve never gets that low)."""
        if target <= self.beta2:
            return math.inf
        if self(0.0) <= target:
            return 0.0
        if self.beta0 <= 0:
            return math.inf
        return (1.0 / (target - self.beta2) - self.beta1) / self.beta0

    def remaining_steps(self, step: float, target: float) -> float:
        """Steps still needed after ``step`` to reach ``target`` (≥ 0)."""
        return max(self.steps_to(target) - step, 0.0)


def fit_loss_curve(steps: Sequence[float], losses: Sequence[float]) -> LossCurve:
    """Fit :class:`LossCurve` to (step, loss) points (module docstring).

    Needs at least three points with finite positive losses; raises ValueError otherwise.
    """
    k = [float(v) for v in steps]
    loss = [float(v) for v in losses]
    if len(k) != len(loss) or len(k) < 3:
        raise ValueError("need at least three (step, loss) pairs of equal length")
    if not all(math.isfinite(v) and v > 0 for v in loss) or not all(math.isfinite(v) for v in k):
        raise ValueError("losses must be finite and positive, steps finite")
    floor = min(loss)
    ones = [1.0] * len(k)
    best = (math.inf, 0.0, 0.0, 0.0)
    for i in range(_BETA2_GRID):
        beta2 = floor * (1.0 - math.pow(10.0, -4.0 * i / (_BETA2_GRID - 1)))
        # l − β2 > 0 for every point, since β2 < min(loss); 1/(l − β2) = β0·k + β1.
        gap = [v - beta2 for v in loss]
        b0, b1 = nnls([[ki * g for ki, g in zip(k, gap, strict=True)], gap], ones)
        sse = math.fsum([(p - v) ** 2 for p, v in zip(_loss(b0, b1, beta2, k), loss, strict=True)])
        if sse < best[0]:
            best = (sse, b0, b1, beta2)

    def residuals(x: tuple[float, ...]) -> tuple[list[float], list[list[float]]]:
        b0, b1, b2 = x
        inverse = [1.0 / max(b0 * ki + b1, 1e-300) for ki in k]
        square = [v * v for v in inverse]
        r = [v + b2 - target for v, target in zip(inverse, loss, strict=True)]
        return r, [[-ki * q for ki, q in zip(k, square, strict=True)], [-q for q in square], ones]

    x0 = (max(best[1], 1e-12), max(best[2], 1e-12), best[3])
    fit = fit_bounded(residuals, x0, (0.0, 0.0, 0.0), (math.inf, math.inf, math.inf))
    x = fit.x if 2 * fit.cost <= best[0] else x0
    return LossCurve(*x)


def loss_from_metric(app: str, metric: Sequence[float]) -> tuple[float, ...]:
    """A decreasing loss-like series from ``app``'s validation metric (see
    :data:`METRIC_CEILING`)."""
    if app not in METRIC_CEILING:
        raise ValueError(f"no metric reading for application {app!r}")
    ceiling = METRIC_CEILING[app]
    return tuple(m if ceiling is None else ceiling - m for m in metric)


@dataclass(frozen=True, slots=True)
class PsSpeedParams:
    """θ of ``1/f(p, w) = θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p`` (all ≥ 0, seconds)."""

    theta0: float  # compute seconds per example, split over w workers
    theta1: float  # fixed seconds per step
    theta2: float  # gradient push/pull: w workers' traffic spread over p servers
    theta3: float  # per-worker overhead (e.g. PS fan-in)
    theta4: float  # per-server overhead


@dataclass(frozen=True, slots=True)
class PsSpeedModel:
    """Training speed (steps per second) of a PS job at global batch ``global_bsz``."""

    params: PsSpeedParams
    global_bsz: float  # M

    def step_time(self, servers: int, workers: int) -> float:
        """``1/f``: seconds per step with ``servers`` PS and ``workers`` workers."""
        if servers < 1 or workers < 1:
            raise ValueError(f"need at least one server and worker, got {servers}, {workers}")
        p = self.params
        f0, f1, f2, f3, f4 = _features(self.global_bsz, servers, workers)
        return p.theta0 * f0 + p.theta1 * f1 + p.theta2 * f2 + p.theta3 * f3 + p.theta4 * f4

    def __call__(self, servers: int, workers: int) -> float:
        """``f(p, w)`` in steps per second."""
        return 1.0 / self.step_time(servers, workers)


def fit_ps_speed(samples: Sequence[tuple[int, int, float]], global_bsz: float) -> PsSpeedModel:
    """Fit θ ≥ 0 to ``(servers, workers, steps per second)`` samples by NNLS on relative
    step-time error. Needs at least one sample with positive speed per θ (five)."""
    if len(samples) < 5:
        raise ValueError(f"need at least 5 (servers, workers, speed) samples, got {len(samples)}")
    if any(s[2] <= 0 for s in samples):
        raise ValueError("speeds must be positive")
    # Relative error: each row of the design is divided by its measured step time.
    rows = [
        [f / (1.0 / speed) for f in _features(global_bsz, servers, workers)]
        for servers, workers, speed in samples
    ]
    theta = nnls([list(column) for column in zip(*rows, strict=True)], [1.0] * len(samples))
    return PsSpeedModel(PsSpeedParams(*theta), global_bsz)


def _features(global_bsz: float, servers: int, workers: int) -> tuple[float, ...]:
    return (global_bsz / workers, 1.0, workers / servers, float(workers), float(servers))


def _loss(b0: float, b1: float, b2: float, k: Sequence[float]) -> list[float]:
    return [1.0 / max(b0 * ki + b1, 1e-300) + b2 for ki in k]
