"""GPU demands, run times and final states of a Helios-like trace, fitted numerically so that the
generated trace's statistics land on the published ones.

The model and the meaning of every parameter are documented in :mod:`dlsched.trace.synth.helios`.
Calibration works on the trace's own draws (the latent normals and uniforms stay fixed while the
parameters move), so the generated statistics match the targets closely at any length and seed.
Every step is a bisection, a bounded number of secant steps or a bounded fixed-point iteration,
hence deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from dlsched.trace.synth.data import STATES, ClusterTargets
from dlsched.trace.synth.durations import (
    RunTimeFit,
    RunTimes,
    RunTimeShape,
    balance_vc_load,
    fit_run_times,
)
from dlsched.trace.synth.gpus import (
    fit_gpu_ratio,
    gpu_sizes,
    job_level_ranks,
    job_weighted_ranks,
)
from dlsched.trace.synth.states import (
    draw_states,
    fit_state_model,
    standardized_log,
    state_probabilities,
)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class JobModel:
    """The fixed (not fitted) shape parameters of GPU demand, run time and calibration.

    ``one_gpu_share``: share of jobs asking for 1 GPU. ``debug_gpu_correlation``: correlation of
    the normal scores that rank a template for GPU demand and for being a debug template (debug
    runs tend to be small). ``volume_correlation``: minus the correlation of a template's GPU
    score and run-time normal with the standardized log share of its user's jobs it holds (a
    user's most repeated templates tend to be their small, short ones, so that no single
    template carries a VC's load while heavy users still use most GPU-time).
    ``max_vc_share``: no job asks for more than this share of its VC's GPUs (rounded down to a
    power of two, at least 1).
    ``debug_median_s``/``debug_sigma``: median and log-standard deviation of the intended run
    time of debug templates; ``train_sigma``: log-standard deviation of training templates
    (their median is fitted). The log-variance splits into ``template_var`` (between templates
    of a class), ``variant_var`` (between variants of a template) and the rest (between jobs of
    a variant). Intended run times are clipped to ``[1, max_duration_s]``.
    ``balance_vc_load``: fit per-VC run-time factors (within 1/4..4) so that each VC's GPU-time
    is proportional to its size. ``outer_iterations``: rounds of the fixed-point calibration.
    """

    one_gpu_share: float = 0.6
    volume_correlation: float = 0.6
    debug_gpu_correlation: float = 0.5
    max_vc_share: float = 0.25
    debug_median_s: float = 60.0
    debug_sigma: float = 1.0
    train_sigma: float = 1.7
    template_var: float = 0.7
    variant_var: float = 0.1
    max_duration_s: float = 7 * 86400.0
    balance_vc_load: bool = True
    outer_iterations: int = 6

    def __post_init__(self) -> None:
        checks = {
            "one_gpu_share": 0.5 < self.one_gpu_share < 1,
            "volume_correlation": -1 <= self.volume_correlation <= 1,
            "debug_gpu_correlation": -1 <= self.debug_gpu_correlation <= 1,
            "max_vc_share": 0 < self.max_vc_share <= 1,
            "debug_median_s": self.debug_median_s >= 1,
            "debug_sigma": self.debug_sigma >= 0,
            "train_sigma": self.train_sigma > 0,
            "template_var": self.template_var >= 0,
            "variant_var": self.variant_var >= 0 and self.template_var + self.variant_var <= 1,
            "max_duration_s": self.max_duration_s > self.debug_median_s,
            "outer_iterations": self.outer_iterations >= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"invalid job model parameters: {', '.join(bad)}")


@dataclass(frozen=True)
class Draws:
    """The latent randomness of one trace, drawn once and held fixed while fitting.

    Per template: ``gpu_score`` and ``class_z`` (standard normals; only their order matters:
    they rank templates for GPU demand and, mixed, for the debug/training split),
    ``template_z`` (standard normal). Per variant: ``variant_z``. Per job:
    ``job_z`` (standard normal), ``fraction`` (uniform: how much of its intended run a cancelled
    or failed job runs) and ``state_u`` (uniform that picks its final state).
    """

    gpu_score: FloatArray
    class_z: FloatArray
    template_z: FloatArray
    variant_z: FloatArray
    job_z: FloatArray
    fraction: FloatArray
    state_u: FloatArray

    @classmethod
    def draw(
        cls, n_templates: int, n_variants: int, n_jobs: int, rng: np.random.Generator
    ) -> Draws:
        return cls(
            gpu_score=rng.standard_normal(n_templates),
            class_z=rng.standard_normal(n_templates),
            template_z=rng.standard_normal(n_templates),
            variant_z=rng.standard_normal(n_variants),
            job_z=rng.standard_normal(n_jobs),
            fraction=rng.random(n_jobs),
            state_u=rng.random(n_jobs),
        )


@dataclass(frozen=True)
class Fitted:
    """The fitted parameters.

    ``gpu_tail_ratio``: among multi-GPU jobs, P(2**k GPUs) is proportional to ratio**k.
    ``debug_share``: share of debug jobs. ``train_median_s``: median intended run time of a
    training job at the geometric-mean GPU count (before VC factors).
    ``gpu_coupling``: intended run time scales as GPUs**coupling. ``state_weights`` and
    ``state_tilts`` (COMPLETED, CANCELLED, FAILED): P(state) is proportional to
    weight * exp(tilt * x), x the job's standardized log intended GPU-time.
    ``vc_duration_factors``: per VC (cluster order), the factor on intended run times that
    balances load (all 1 without balancing).
    """

    gpu_tail_ratio: float
    debug_share: float
    train_median_s: float
    gpu_coupling: float
    state_weights: tuple[float, float, float]
    state_tilts: tuple[float, float, float]
    vc_duration_factors: tuple[float, ...]


@dataclass(frozen=True)
class Calibrated:
    """Per template: ``template_gpus``, ``template_debug``. Per job: ``duration`` (seconds, whole
    and >= 1: what the job ran), ``intended`` (what it would have run to completion) and
    ``state`` (index into :data:`~dlsched.trace.synth.data.STATES`)."""

    template_gpus: IntArray
    template_debug: BoolArray
    duration: FloatArray
    intended: FloatArray
    state: IntArray
    fitted: Fitted


def against_volume(
    draws: Draws, counts: IntArray, template_user: IntArray, correlation: float
) -> Draws:
    """``draws`` with each template's GPU score and run-time normal correlated at
    ``-correlation`` with the standardized log share of its user's jobs that it holds: a user's
    most repeated templates tend to be their smaller and shorter ones. Both keep mean 0 and
    variance 1."""
    user_jobs = np.bincount(template_user, weights=counts)[template_user]
    volume = np.log(np.maximum(counts, 1) / np.maximum(user_jobs, 1))
    spread = float(volume.std())
    volume = (volume - volume.mean()) / spread if spread > 0 else np.zeros_like(volume)
    keep = math.sqrt(1.0 - correlation**2)
    return replace(
        draws,
        gpu_score=keep * draws.gpu_score - correlation * volume,
        template_z=keep * draws.template_z - correlation * volume,
    )


def class_scores(draws: Draws, correlation: float) -> FloatArray:
    """Per template: the normal score whose job-weighted rank below the debug share makes it a
    debug template; ``correlation`` with the GPU score."""
    mixed: FloatArray = (
        correlation * draws.gpu_score + math.sqrt(1.0 - correlation**2) * draws.class_z
    )
    return mixed


def calibrate(
    targets: ClusterTargets,
    model: JobModel,
    draws: Draws,
    template: IntArray,
    variant: IntArray,
    template_cap: IntArray,
    template_user: IntArray,
    job_vc: IntArray,
    vc_gpus: IntArray,
) -> Calibrated:
    """Fit GPU demand, run times and states of the jobs. Per job: ``template``, ``variant``,
    ``job_vc``; per template: ``template_cap`` (the most GPUs it may ask for) and
    ``template_user``; per VC: ``vc_gpus``.

    Order: the template scores are correlated with volume (:func:`against_volume`); the GPU
    tail ratio (bisection on the mean GPU demand); then ``outer_iterations`` rounds of (a) the
    run-time fit (debug share on the median, training median on the mean, GPU coupling on the
    GPU-time per job), (b) with ``balance_vc_load``, one fixed-point step of the per-VC
    run-time factors, (c) the state model on the published state and GPU-time shares, and a
    fresh state assignment; finally (a) once more, so that mean, median and GPU-time per job
    hold for the trace as written.
    """
    counts = np.bincount(template, minlength=template_cap.size).astype(np.int64)
    draws = against_volume(draws, counts, template_user, model.volume_correlation)
    gpu_ranks = job_weighted_ranks(draws.gpu_score, counts)
    ratio = fit_gpu_ratio(gpu_ranks, template_cap, counts, targets.avg_gpus, model.one_gpu_share)
    template_gpus = gpu_sizes(gpu_ranks, template_cap, ratio, model.one_gpu_share)
    job_gpus = template_gpus[template]
    class_score = class_scores(draws, model.debug_gpu_correlation)
    # Templates are debug by the rank of their middle job; jobs by their own rank, so that only
    # the one template straddling the debug share mixes classes and the median moves smoothly.
    template_class_ranks = job_weighted_ranks(class_score, counts)
    job_var = max(0.0, 1.0 - model.template_var - model.variant_var)
    latent = (
        math.sqrt(model.template_var) * draws.template_z[template]
        + math.sqrt(model.variant_var) * draws.variant_z[variant]
        + math.sqrt(job_var) * draws.job_z
    )
    times = RunTimes(
        RunTimeShape(
            model.debug_median_s, model.debug_sigma, model.train_sigma, model.max_duration_s
        ),
        latent,
        np.log(job_gpus.astype(np.float64)),
        job_level_ranks(class_score, template),
        job_vc,
        vc_gpus.size,
        draws.fraction,
    )
    weights = np.array([targets.state_shares[s] for s in STATES])
    tilts = np.zeros(3)
    times.state = draw_states(
        state_probabilities(np.zeros(job_vc.size), weights, tilts), draws.state_u
    )
    fit = RunTimeFit(debug_share=0.5, log_median=math.log(targets.avg_run_s), coupling=0.0)
    for _ in range(model.outer_iterations):
        fit = fit_run_times(times, targets, job_gpus, fit)
        intended = times.intended(fit)
        if model.balance_vc_load:
            balance_vc_load(times, times.ran(intended) * job_gpus, vc_gpus)
            intended = times.intended(fit)
        gpu_s = intended * job_gpus
        weights, tilts = fit_state_model(
            standardized_log(gpu_s), gpu_s, gpu_s * draws.fraction, targets, (weights, tilts)
        )
        times.state = draw_states(
            state_probabilities(standardized_log(gpu_s), weights, tilts), draws.state_u
        )
    fit = fit_run_times(times, targets, job_gpus, fit)
    intended = times.intended(fit)
    fitted = Fitted(
        gpu_tail_ratio=ratio,
        debug_share=fit.debug_share,
        train_median_s=math.exp(fit.log_median),
        gpu_coupling=fit.coupling,
        state_weights=(float(weights[0]), float(weights[1]), float(weights[2])),
        state_tilts=(float(tilts[0]), float(tilts[1]), float(tilts[2])),
        vc_duration_factors=tuple(float(f) for f in np.exp(times.vc_offset)),
    )
    return Calibrated(
        template_gpus=template_gpus,
        template_debug=template_class_ranks < fit.debug_share,
        duration=times.ran(intended),
        intended=intended,
        state=times.state,
        fitted=fitted,
    )
