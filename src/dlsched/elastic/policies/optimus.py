"""Optimus on elastic workloads: marginal-gain GPU allocation at a fixed batch.

After Peng et al., "Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning
Clusters", EuroSys 2018, with the models of :mod:`dlsched.perf.optimus`:

- remaining work: the loss curve ``l(k) = 1/(β0·k + β1) + β2`` fitted over examples processed to
  the job's observed epoch-end losses (from its validation metric), solved for the loss its
  batch size reaches at the end of training; before three epochs are observed, or when the fit
  never gets there, the examples of the epochs left (``remaining=epochs``: always those, as the
  Pollux artifact's Optimus does);
- speed: the PS speed model fitted to the job's step times at 1, 2, 4, 8 and 16 GPUs
  (consolidated; our stand-in for Optimus's profiling runs, with one server per worker since the
  profiled jobs are all-reduce); ``speed=profile``: the step time of the consolidated placement
  at every GPU count, from the performance book, as the Pollux artifact's Optimus does. The
  fitted model is smooth in the GPU count, so it misses what a job loses when it first spans
  two nodes: on the Pollux workloads at load 0.5 it gave yolov3 (global batch 64) six GPUs on
  two nodes, slower than its four on one, and average JCTs ran 29% above the artifact's
  (bench/RESULTS.md, 2026-11-25). The artifact's Optimus is ``remaining=epochs speed=profile``.

Every job that can gets one GPU, shortest estimated remaining time first; then GPUs go one at a
time to the job whose estimated remaining time drops most, until none drops. A job gets at most
its global batch over the smallest profiled local batch GPUs, as in the artifact (a smaller
local batch is not in the profile). Like Optimus, and like the artifact's, it ignores the cost
of restarting a job whose GPUs change. Jobs keep their GPUs when their count is unchanged; the
others are placed on as few nodes as possible.

Differences from the artifact's Optimus, kept: the first GPUs go shortest remaining time first
(the artifact: in submit order); its remaining work leaves out the current epoch and counts a
job in its last epoch as one step, so such a job gets almost no GPUs beyond its first (bert,
two epochs, is slowed most); its placement takes the smallest jobs first, each from the nodes
with the most free GPUs. And our step times are interpolated differently from the artifact's:
where ours are a hair slower at one more GPU (imagenet at global batch 6,400 on 26 GPUs rather
than 25), the one-GPU-at-a-time rule stops the job there, where the artifact's went on.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dlsched.elastic.policy import ElasticPolicy, fixed_allocation, free_gpus, place_consolidated
from dlsched.elastic.types import Allocation, FinishedInfo, JobInfo
from dlsched.perf.optimus import (
    LossCurve,
    PsSpeedModel,
    fit_loss_curve,
    fit_ps_speed,
    loss_from_metric,
)
from dlsched.perf.perfbook import consolidated_counts
from dlsched.perf.profiles import load_profile

_PROFILED = (1, 2, 4, 8, 16)


@dataclass
class Optimus(ElasticPolicy):
    name = "optimus"
    description = "marginal-gain GPUs at a fixed batch (Optimus loss-curve and PS speed models)"
    remaining: str = "fit"
    """How remaining work is estimated: ``fit`` (the loss curve, as Optimus does) or ``epochs``
    (the examples of the epochs left, known from the profiles, as the Pollux artifact's
    Optimus does)."""
    speed: str = "fit"
    """How a job's step time on ``n`` GPUs is predicted: ``fit`` (the PS speed model, as
    Optimus does) or ``profile`` (the consolidated placement's step time from the performance
    book, as the Pollux artifact's Optimus does)."""
    _speed: dict[tuple[str, int, int | None], tuple[int, PsSpeedModel]] = field(
        default_factory=dict, init=False
    )
    _curves: dict[int, tuple[int, LossCurve | None, float]] = field(
        default_factory=dict, init=False
    )

    def __post_init__(self) -> None:
        if self.remaining not in ("fit", "epochs"):
            raise ValueError(f"remaining: expected 'fit' or 'epochs', got {self.remaining!r}")
        if self.speed not in ("fit", "profile"):
            raise ValueError(f"speed: expected 'fit' or 'profile', got {self.speed!r}")

    def _speed_model(self, job: JobInfo) -> PsSpeedModel:
        revision = self.perf.revision(job.application)
        # A non-zero revision is the job's own step times: shared with jobs of the same
        # application and batch, the entry would be refit on every call alternating between them.
        key = (job.application, job.requested_bsz, job.index if revision else None)
        cached = self._speed.get(key)
        found = cached[1] if cached is not None and cached[0] == revision else None
        if found is None:
            variant = self.cluster.main_variant
            gpn = self.cluster.gpus_per_node(variant)
            samples = []
            for w in _PROFILED:
                config = self.perf.fixed_batch(job.application, w, job.requested_bsz)
                t = self.perf.iteration_time(
                    job.application,
                    variant,
                    consolidated_counts(w, gpn),
                    config.local_bsz,
                    config.accum_steps,
                )
                samples.append((w, w, 1.0 / t))
            found = fit_ps_speed(samples, job.requested_bsz)
            self._speed[key] = (revision, found)
        return found

    def finished(self, done: Sequence[FinishedInfo]) -> None:
        """Forget the finished jobs' fitted loss curves and own speed models, so a long-running
        service keeps state only for its active jobs."""
        gone = {f.job.index for f in done}
        for index in gone:
            self._curves.pop(index, None)
        self._speed = {k: v for k, v in self._speed.items() if k[2] not in gone}

    def remaining_examples(self, job: JobInfo) -> float:
        """Estimated examples still to process (module docstring; with ``remaining="epochs"``
        always the examples of the epochs left). The loss curve is refit when the job has a
        quarter more epochs observed than at its last fit."""
        fallback = job.epoch_size * max(job.num_epochs - job.epoch, 0)
        if self.remaining == "epochs":
            return fallback
        seen = len(job.metrics)
        fitted = self._curves.get(job.index)
        if seen >= 3 and (fitted is None or seen >= 1.25 * fitted[0]):
            losses = loss_from_metric(job.application, job.metrics)
            curve = None
            if min(losses) > 0:
                try:
                    curve = fit_loss_curve(job.samples_at_epoch, losses)
                except ValueError:
                    curve = None
            fitted = (seen, curve, self._target_loss(job))
            self._curves[job.index] = fitted
        if fitted is None or fitted[1] is None or fitted[2] <= 0:
            return fallback
        estimate = fitted[1].remaining_steps(job.samples, fitted[2])
        return estimate if math.isfinite(estimate) else fallback

    @staticmethod
    def _target_loss(job: JobInfo) -> float:
        """The loss the validation curve nearest the job's batch reaches at its last epoch."""
        curves = load_profile(job.application).validation
        curve = min(curves, key=lambda c: abs(math.log(c.global_bsz / job.requested_bsz)))
        metric = curve.metric[min(job.num_epochs, len(curve.metric)) - 1]
        return loss_from_metric(job.application, [metric])[0]

    def _time(self, job: JobInfo, n: int, remaining: float) -> float:
        """Estimated seconds to process ``remaining`` examples on ``n`` GPUs."""
        if self.speed == "profile":
            return remaining / job.requested_bsz * self._step_time(job, n)
        return remaining / (job.requested_bsz * self._speed_model(job)(n, n))

    def _step_time(self, job: JobInfo, n: int) -> float:
        variant = self.cluster.main_variant
        config = self.perf.fixed_batch(job.application, n, job.requested_bsz)
        return self.perf.iteration_time(
            job.application,
            variant,
            consolidated_counts(n, self.cluster.gpus_per_node(variant)),
            config.local_bsz,
            config.accum_steps,
        )

    def cap(self, job: JobInfo) -> int:
        """The most GPUs ``job`` may get: its global batch over the smallest profiled local
        batch (at least one), within the GPUs the policy may use."""
        smallest = self.perf.limits(job.application).min_local_bsz
        return min(self.cluster.total_gpus, max(job.requested_bsz // smallest, 1))

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        total = self.cluster.total_gpus
        remaining = {j.index: self.remaining_examples(j) for j in jobs}
        counts = {j.index: 0 for j in jobs}
        free = total
        for j in sorted(jobs, key=lambda j: (self._time(j, 1, remaining[j.index]), j.index)):
            if free == 0:
                break
            counts[j.index] = 1
            free -= 1
        caps = {j.index: self.cap(j) for j in jobs}
        heap = []
        for j in jobs:
            if counts[j.index] and counts[j.index] < caps[j.index]:
                heap.append((-self._gain(j, counts[j.index], remaining[j.index]), j.index))
        heapq.heapify(heap)
        by_index = {j.index: j for j in jobs}
        while heap and free > 0:
            neg, i = heapq.heappop(heap)
            if -neg <= 0:
                break
            counts[i] += 1
            free -= 1
            if counts[i] < caps[i]:
                heapq.heappush(heap, (-self._gain(by_index[i], counts[i], remaining[i]), i))
        kept = {
            j.name: j.allocation
            for j in jobs
            if j.allocation is not None and counts[j.index] == j.gpus
        }
        out = dict(kept)
        spare = free_gpus(self.cluster, kept)
        todo = [j for j in jobs if counts[j.index] and j.name not in kept]
        for j in sorted(todo, key=lambda j: (-counts[j.index], j.index)):
            gpus = place_consolidated(spare, counts[j.index])
            if gpus is not None:
                out[j.name] = fixed_allocation(self.perf, j, gpus)
        return out

    def _gain(self, job: JobInfo, n: int, remaining: float) -> float:
        return self._time(job, n, remaining) - self._time(job, n + 1, remaining)
