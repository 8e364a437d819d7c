"""Optimus-style performance models (Peng et al., EuroSys'18).

- Convergence: training loss after ``k`` steps follows ``l(k) = 1/(β0·k + β1) + β2`` with
  ``β ≥ 0``. :func:`fit_loss_curve` fits it: for a fixed ``β2`` the model is linear in
  ``(β0, β1)`` after ``1/(l − β2)``, so ``β2`` is searched on a grid below the smallest loss
  (non-negative least squares for ``β0, β1`` at each), and the best triple is refined by
  bounded least squares on the loss residuals. Deterministic.
- Speed of a parameter-server (PS) job with ``p`` servers and ``w`` workers at global batch
  ``M``: ``f(p, w) = (θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p)^(-1)`` steps per second (forward and
  backward work split over workers, a fixed cost, the servers' share of the gradient traffic,
  and per-worker and per-server overheads). The step time ``1/f`` is linear in ``θ ≥ 0``;
  :func:`fit_ps_speed` solves it by non-negative least squares on relative step-time errors.

The bundled profiles are all-reduce measurements, so they hold no PS data: speed samples for
:func:`fit_ps_speed` come from a PS system or, in tests, from a known ``θ``.
:func:`loss_from_metric` turns a validation metric into a decreasing loss-like curve (our
reading of the metrics: accuracy-like ones are subtracted from their ceiling).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
from scipy.optimize import least_squares, nnls

FloatArray = npt.NDArray[np.float64]

_BETA2_GRID = 64

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

    Needs at least three points with positive losses; raises ValueError otherwise.
    """
    k = np.asarray(steps, dtype=float)
    loss = np.asarray(losses, dtype=float)
    if k.shape != loss.shape or k.size < 3:
        raise ValueError("need at least three (step, loss) pairs of equal length")
    if not np.all(np.isfinite(loss)) or np.min(loss) <= 0:
        raise ValueError("losses must be finite and positive")
    floor = float(np.min(loss))
    best = (math.inf, 0.0, 0.0, 0.0)
    for beta2 in floor * (1.0 - np.geomspace(1.0, 1e-4, _BETA2_GRID)):
        # l − β2 > 0 for every point, since β2 < min(loss).
        inverse = 1.0 / (loss - beta2)
        design = np.column_stack([k, np.ones_like(k)]) / inverse[:, None]
        (b0, b1), _ = nnls(design, np.ones_like(k))
        pred = _loss(np.array([b0, b1, beta2]), k)
        sse = float(np.sum((pred - loss) ** 2))
        if sse < best[0]:
            best = (sse, float(b0), float(b1), float(beta2))

    def residuals(x: FloatArray) -> FloatArray:
        return np.asarray(_loss(x, k) - loss, dtype=float)

    x0 = np.array([max(best[1], 1e-12), max(best[2], 1e-12), best[3]])
    result = least_squares(residuals, x0, bounds=(0.0, np.inf), method="trf", x_scale="jac")
    x = result.x if 2 * result.cost <= best[0] else x0
    return LossCurve(float(x[0]), float(x[1]), float(x[2]))


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
        return float(_features(self.global_bsz, [servers], [workers])[0] @ _theta(self.params))

    def __call__(self, servers: int, workers: int) -> float:
        """``f(p, w)`` in steps per second."""
        return 1.0 / self.step_time(servers, workers)


def fit_ps_speed(samples: Sequence[tuple[int, int, float]], global_bsz: float) -> PsSpeedModel:
    """Fit θ ≥ 0 to ``(servers, workers, steps per second)`` samples by NNLS on relative
    step-time error. Needs at least one sample with positive speed per θ (five)."""
    if len(samples) < 5:
        raise ValueError(f"need at least 5 (servers, workers, speed) samples, got {len(samples)}")
    p = [s[0] for s in samples]
    w = [s[1] for s in samples]
    speed = np.array([s[2] for s in samples], dtype=float)
    if np.any(speed <= 0):
        raise ValueError("speeds must be positive")
    times = 1.0 / speed
    design = _features(global_bsz, p, w) / times[:, None]
    theta, _ = nnls(design, np.ones(len(samples)))
    return PsSpeedModel(PsSpeedParams(*(float(t) for t in theta)), global_bsz)


def _features(global_bsz: float, servers: Sequence[int], workers: Sequence[int]) -> FloatArray:
    p = np.asarray(servers, dtype=float)
    w = np.asarray(workers, dtype=float)
    return np.column_stack([global_bsz / w, np.ones_like(w), w / p, w, p])


def _theta(params: PsSpeedParams) -> FloatArray:
    return np.array([params.theta0, params.theta1, params.theta2, params.theta3, params.theta4])


def _loss(x: FloatArray, k: FloatArray) -> FloatArray:
    return np.asarray(1.0 / np.maximum(x[0] * k + x[1], 1e-300) + x[2])
