"""The Pollux throughput model (Qiao et al., OSDI'21) and its fit to measured step times.

Model, for ``R`` replicas on ``N`` nodes with local batch ``b`` and ``s`` accumulation steps:

- compute per micro-step ``T_c = α_c + β_c·b``;
- gradient synchronization ``T_n = 0`` for one replica, else ``α_r + β_r·max(R − 2, ε)`` on one
  node and ``α_n + β_n·max(R − 2, ε)`` across nodes;
- one optimizer step ``T = s·T_c + (T_c^γ + T_n^γ)^(1/γ)``, ``1 ≤ γ ≤ 10`` (γ = 1: compute and
  sync add up; large γ: they overlap and the slower one dominates);
- global batch ``M = R·b·(s + 1)``; throughput ``M / T`` examples per second.

Fitting (:func:`fit_pollux`): bounded least squares of the residuals
``log T_model − log T_measured`` over all step samples, so every row weighs by its relative
error whatever its scale (ncf steps take milliseconds, bert steps a second). Samples of one
configuration (nodes, replicas, local batch) share a model time, so they enter as one residual
against the mean of their logs, weighted by their number (the same minimum, a fraction of the
work). All parameters are ≥ 0 and γ ∈ [1, 10]; the fit starts from a linear regression of
single-replica step time on ``b`` at several γ and keeps the best. It is computed by
:mod:`dlsched.numerics` (Levenberg–Marquardt with an analytic Jacobian), so the parameters,
and every step time extrapolated from them, are the same bits on every CPU. With no cross-node
measurement, the cross-node pair is set to the fitted within-node pair (an optimistic guess
rather than an arbitrary value).

Held-out error (:func:`fit_profile`): the distinct measured configurations (placement, or nodes
and replicas) are sorted and every ``every``-th one (index ``every − 1``, ``2·every − 1``, ...)
is held out with all its batch sizes; the model is fitted to the rest and scored on those.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dlsched.numerics import elementwise
from dlsched.numerics.curve_fit import fit_bounded
from dlsched.numerics.lstsq import lstsq
from dlsched.perf.profiles import AppProfile, StepSample, load_profile

EPSILON = 1e-8
"""The floor of ``R − 2`` in the synchronization term."""

GAMMA_BOUNDS = (1.0, 10.0)
_GAMMA_STARTS = (1.0, 2.0, 4.0, 8.0)

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class PolluxParams:
    """Fitted throughput-model parameters (seconds; see the module docstring)."""

    alpha_c: float  # T_c = alpha_c + beta_c·b: fixed compute time per micro-step
    beta_c: float  # seconds per example of local batch
    alpha_r: float  # T_n (one node) = alpha_r + beta_r·max(R − 2, ε)
    beta_r: float
    alpha_n: float  # T_n (several nodes) = alpha_n + beta_n·max(R − 2, ε)
    beta_n: float
    gamma: float  # T = (T_c^γ + T_n^γ)^(1/γ), 1 ≤ γ ≤ 10

    def as_array(self) -> FloatArray:
        return np.array(
            [
                self.alpha_c,
                self.beta_c,
                self.alpha_r,
                self.beta_r,
                self.alpha_n,
                self.beta_n,
                self.gamma,
            ]
        )


@dataclass(frozen=True, slots=True)
class PolluxModel:
    """Step time and throughput from :class:`PolluxParams`. Calling it gives the step time."""

    params: PolluxParams

    def compute_time(self, local_bsz: float) -> float:
        """``T_c`` in seconds for one micro-step of ``local_bsz`` examples."""
        return self.params.alpha_c + self.params.beta_c * local_bsz

    def network_time(self, nodes: int, replicas: int) -> float:
        """``T_n`` in seconds: 0 for a single replica."""
        p = self.params
        if replicas <= 1:
            return 0.0
        extra = max(replicas - 2, EPSILON)
        if nodes <= 1:
            return p.alpha_r + p.beta_r * extra
        return p.alpha_n + p.beta_n * extra

    def step_time(self, nodes: int, replicas: int, local_bsz: float, accum_steps: int = 0) -> float:
        """Seconds per optimizer step (``accum_steps`` extra micro-steps before it)."""
        t_c = self.compute_time(local_bsz)
        t_n = self.network_time(nodes, replicas)
        g = self.params.gamma
        return accum_steps * t_c + math.pow(math.pow(t_c, g) + math.pow(t_n, g), 1.0 / g)

    def iteration_time(
        self, nodes: int, replicas: int, local_bsz: float, accum_steps: int = 0
    ) -> float:
        """Same as :meth:`step_time` (the :class:`~dlsched.perf.goodput.StepModel` protocol)."""
        return self.step_time(nodes, replicas, local_bsz, accum_steps)

    def throughput(
        self, nodes: int, replicas: int, local_bsz: float, accum_steps: int = 0
    ) -> float:
        """Examples per second: ``R·b·(s + 1) / T``."""
        batch = replicas * local_bsz * (accum_steps + 1)
        return batch / self.step_time(nodes, replicas, local_bsz, accum_steps)

    def __call__(self, nodes: int, replicas: int, local_bsz: float, accum_steps: int = 0) -> float:
        return self.step_time(nodes, replicas, local_bsz, accum_steps)


@dataclass(frozen=True, slots=True)
class FitReport:
    """A fit and its error on held-out configurations."""

    app: str
    variant: str
    params: PolluxParams
    train_rows: int
    test_rows: int
    train_mre: float  # mean |predicted − measured| / measured over training rows
    test_rmse: float  # seconds, root mean square error over held-out rows
    test_mre: float  # mean relative error over held-out rows
    test_max_re: float  # largest relative error over held-out rows


def predict(params: PolluxParams, samples: Sequence[StepSample]) -> FloatArray:
    """Model step times (no accumulation) for each sample's configuration."""
    nodes, replicas, bsz, _ = _columns(samples)
    return _predict(params.as_array(), nodes, replicas, bsz)


def fit_pollux(samples: Sequence[StepSample]) -> PolluxParams:
    """Least-squares fit of :class:`PolluxParams` to measured step times (module docstring).

    Needs at least one sample; raises ValueError otherwise.
    """
    if not samples:
        raise ValueError("cannot fit the Pollux model to no samples")
    nodes, replicas, bsz, times = _columns(samples)
    alpha_c, beta_c = _compute_start(replicas, bsz, times)
    t_c = alpha_c + beta_c * bsz
    alpha_r = _sync_start(times, t_c, (nodes <= 1) & (replicas > 1))
    alpha_n = _sync_start(times, t_c, nodes > 1, default=alpha_r)
    residuals = _LogResiduals(samples)
    lower = (0.0,) * 6 + (GAMMA_BOUNDS[0],)
    upper = (math.inf,) * 6 + (GAMMA_BOUNDS[1],)
    best: tuple[float, ...] | None = None
    best_cost = math.inf
    for gamma in _GAMMA_STARTS:
        guess = (alpha_c, beta_c, alpha_r, 0.01 * alpha_r, alpha_n, 0.01 * alpha_n, gamma)
        x0 = [min(max(v, lo + 1e-12), hi) for v, lo, hi in zip(guess, lower, upper, strict=True)]
        fit = fit_bounded(residuals, x0, lower, upper)
        if fit.cost < best_cost:
            best, best_cost = fit.x, fit.cost
    assert best is not None
    params = PolluxParams(*best)
    if not np.any(nodes > 1):
        params = PolluxParams(
            params.alpha_c,
            params.beta_c,
            params.alpha_r,
            params.beta_r,
            params.alpha_r,
            params.beta_r,
            params.gamma,
        )
    return params


class _LogResiduals:
    """``x ↦ (√n·(log T_model − mean log T_measured), Jacobian)`` per configuration."""

    def __init__(self, samples: Sequence[StepSample]) -> None:
        logs: dict[tuple[int, int, float], list[float]] = {}
        for s in samples:
            logs.setdefault((s.nodes, s.replicas, s.local_bsz), []).append(math.log(s.step_time))
        keys = sorted(logs)
        self.bsz = np.array([k[2] for k in keys], dtype=float)
        self.extra = np.array([max(k[1] - 2.0, EPSILON) for k in keys])
        self.synced = np.array([k[1] > 1 for k in keys])
        self.across = np.array([k[0] > 1 and k[1] > 1 for k in keys])
        self.within = self.synced & ~self.across
        self.weight = np.sqrt(np.array([float(len(logs[k])) for k in keys]))
        self.target = np.array([math.fsum(logs[k]) / len(logs[k]) for k in keys])

    def __call__(self, x: tuple[float, ...]) -> tuple[FloatArray, list[FloatArray]]:
        alpha_c, beta_c, alpha_r, beta_r, alpha_n, beta_n, gamma = x
        t_c = alpha_c + beta_c * self.bsz
        t_n = np.where(self.across, alpha_n + beta_n * self.extra, alpha_r + beta_r * self.extra)
        t_n = np.where(self.synced, t_n, 0.0)
        c_g = elementwise.power(t_c, gamma)
        n_g = elementwise.power(t_n, gamma)
        total = c_g + n_g
        floor = 1e-12**gamma
        clamped = total <= floor
        log_total = elementwise.log(np.maximum(total, floor))
        log_model = log_total / gamma
        w = self.weight
        residual = w * (log_model - self.target)
        # ∂ log T / ∂ t = t^(γ−1) / S; ∂ log T / ∂γ = −log S / γ² + Σ t^γ log t / (γ·S).
        live = np.where(clamped, 0.0, w / np.maximum(total, floor))
        d_c = live * elementwise.power(t_c, gamma - 1.0)
        d_n = live * np.where(self.synced, elementwise.power(t_n, gamma - 1.0), 0.0)
        log_c = elementwise.log(np.maximum(t_c, 1e-300))
        log_n = elementwise.log(np.maximum(t_n, 1e-300))
        weighted_logs = np.where(t_c > 0, c_g * log_c, 0.0) + np.where(t_n > 0, n_g * log_n, 0.0)
        d_gamma = np.where(
            clamped, 0.0, w * (-log_total / (gamma * gamma)) + live * weighted_logs / gamma
        )
        zero = np.zeros_like(t_c)
        jacobian = [
            d_c,
            d_c * self.bsz,
            np.where(self.within, d_n, zero),
            np.where(self.within, d_n * self.extra, zero),
            np.where(self.across, d_n, zero),
            np.where(self.across, d_n * self.extra, zero),
            d_gamma,
        ]
        return residual, jacobian


def split_holdout(
    samples: Sequence[StepSample], every: int = 5
) -> tuple[tuple[StepSample, ...], tuple[StepSample, ...]]:
    """(train, test): every ``every``-th distinct configuration, in sorted order, is test."""
    if every < 2:
        raise ValueError(f"every must be at least 2, got {every}")
    keys = sorted({(s.nodes, s.replicas, s.placement) for s in samples})
    held = {k for i, k in enumerate(keys) if i % every == every - 1}
    train = tuple(s for s in samples if (s.nodes, s.replicas, s.placement) not in held)
    test = tuple(s for s in samples if (s.nodes, s.replicas, s.placement) in held)
    return train, test


def fit_profile(profile: AppProfile, every: int = 5) -> FitReport:
    """Fit to all but the held-out configurations of ``profile`` and score on those."""
    train, test = split_holdout(profile.samples, every)
    params = fit_pollux(train)
    train_err = _relative_errors(params, train)
    test_err = _relative_errors(params, test)
    test_times = np.array([s.step_time for s in test])
    test_pred = predict(params, test)
    return FitReport(
        app=profile.app,
        variant=profile.variant,
        params=params,
        train_rows=len(train),
        test_rows=len(test),
        train_mre=float(train_err.mean()),
        test_rmse=float(np.sqrt(np.mean((test_pred - test_times) ** 2))) if test else math.nan,
        test_mre=float(test_err.mean()) if test else math.nan,
        test_max_re=float(test_err.max()) if test else math.nan,
    )


@functools.cache
def fitted_model(app: str, variant: str = "t4") -> PolluxModel:
    """The Pollux model fitted to every step sample of the bundled profile."""
    return PolluxModel(fit_pollux(load_profile(app, variant).samples))


def _relative_errors(params: PolluxParams, samples: Sequence[StepSample]) -> FloatArray:
    if not samples:
        return np.zeros(0)
    times = np.array([s.step_time for s in samples])
    return np.asarray(np.abs(predict(params, samples) - times) / times)


def _columns(
    samples: Sequence[StepSample],
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    nodes = np.array([s.nodes for s in samples], dtype=float)
    replicas = np.array([s.replicas for s in samples], dtype=float)
    bsz = np.array([s.local_bsz for s in samples], dtype=float)
    times = np.array([s.step_time for s in samples], dtype=float)
    return nodes, replicas, bsz, times


def _predict(x: FloatArray, nodes: FloatArray, replicas: FloatArray, bsz: FloatArray) -> FloatArray:
    alpha_c, beta_c, alpha_r, beta_r, alpha_n, beta_n, gamma = x
    t_c = alpha_c + beta_c * bsz
    extra = np.maximum(replicas - 2.0, EPSILON)
    t_n = np.where(nodes > 1, alpha_n + beta_n * extra, alpha_r + beta_r * extra)
    t_n = np.where(replicas > 1, t_n, 0.0)
    total = elementwise.power(t_c, gamma) + elementwise.power(t_n, gamma)
    return elementwise.power(total, 1.0 / gamma)


def _compute_start(replicas: FloatArray, bsz: FloatArray, times: FloatArray) -> tuple[float, float]:
    # Single-replica rows have no synchronization, so step time is compute time there.
    single = replicas <= 1
    x, y = (bsz[single], times[single]) if np.count_nonzero(single) >= 2 else (bsz, times)
    if np.ptp(x) > 0:
        slope, intercept = lstsq([x.tolist(), [1.0] * len(x)], y.tolist()).x
    else:
        slope, intercept = 0.0, float(np.mean(y))
    return max(float(intercept), 1e-6), max(float(slope), 1e-9)


def _sync_start(
    times: FloatArray, t_c: FloatArray, rows: npt.NDArray[np.bool_], default: float = 1e-3
) -> float:
    if not np.any(rows):
        return default
    return max(float(np.median(times[rows] - t_c[rows])), 1e-5)
