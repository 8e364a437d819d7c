"""Final states of the Helios-like generator's jobs: a multinomial-logit model in the job's
intended GPU-time, fitted to the published state shares and GPU-time shares per state."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dlsched.trace.synth.data import STATES, ClusterTargets

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

COMPLETED, CANCELLED, FAILED = 0, 1, 2
_MAX_STEPS = 300
_TOLERANCE = 1e-6
_TILT_LIMIT = 6.0


def state_probabilities(x: FloatArray, weights: FloatArray, tilts: FloatArray) -> FloatArray:
    """``(jobs, 3)`` probabilities of COMPLETED, CANCELLED, FAILED, proportional to
    ``weights * exp(tilts * x)``.

    ``x`` is standardized and ``|tilts|`` at most 6, so no exponential comes near overflow.
    """
    probs = np.empty((x.size, 3))
    for s in range(3):
        probs[:, s] = weights[s] * np.exp(tilts[s] * x)
    probs /= probs.sum(axis=1, keepdims=True)
    return probs


def draw_states(probs: FloatArray, u: FloatArray) -> IntArray:
    """The state whose cumulative-probability interval holds each job's uniform ``u``."""
    cum = np.cumsum(probs, axis=1)
    states: IntArray = (u[:, None] >= cum[:, :2]).sum(axis=1).astype(np.int64)
    return states


def standardized_log(values: FloatArray) -> FloatArray:
    """``log(values)`` shifted and scaled to mean 0 and standard deviation 1 (0 if constant)."""
    logs = np.log(values)
    spread = float(logs.std())
    result: FloatArray = (logs - logs.mean()) / spread if spread > 0 else np.zeros_like(logs)
    return result


def fit_state_model(
    x: FloatArray,
    gpu_s_full: FloatArray,
    gpu_s_early: FloatArray,
    targets: ClusterTargets,
    start: tuple[FloatArray, FloatArray] | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Weights and tilts such that, in expectation over the jobs, the share of each state and
    its share of GPU-time equal the published ones.

    ``x``: each job's standardized log intended GPU-time; a completed job uses ``gpu_s_full``
    GPU-seconds, a cancelled or failed one ``gpu_s_early``. The weights follow by iterative
    proportional fitting, the cancelled and failed tilts by a damped fixed-point step on the log
    ratio of target to current GPU-time share (COMPLETED's tilt stays 0). ``start`` warm-starts
    the iteration, which stops once every share is within 1e-6 of its target or after 300 steps.
    """
    share_target = np.array([targets.state_shares[s] for s in STATES])
    time_target = np.array([targets.gpu_time_shares[s] for s in STATES])
    if start is None:
        weights, tilts = share_target.copy(), np.zeros(3)
    else:
        weights, tilts = start[0].copy(), start[1].copy()
    for _ in range(_MAX_STEPS):
        # Unnormalized probabilities per state as 1-D arrays: much faster than columns.
        parts = [weights[s] * np.exp(tilts[s] * x) for s in range(3)]
        total = parts[0] + parts[1] + parts[2]
        probs = [part / total for part in parts]
        shares = np.array([float(p.mean()) for p in probs])
        # Elementwise products, not BLAS dot: BLAS threads cost more than they save here.
        spent = [gpu_s_full, gpu_s_early, gpu_s_early]
        used = np.array([float((p * e).sum()) for p, e in zip(probs, spent, strict=True)])
        used /= used.sum()
        gap = max(np.abs(shares - share_target).max(), np.abs(used - time_target).max())
        if gap < _TOLERANCE:
            break
        weights *= share_target / shares
        weights /= weights.sum()
        tilts[1:] += 0.5 * np.log(time_target[1:] / used[1:])
        np.clip(tilts, -_TILT_LIMIT, _TILT_LIMIT, out=tilts)
    return weights, tilts
