"""Progress of elastic (application-described) jobs: goodput from the measured profiles.

An elastic job (a Pollux-workload job: an application and a tuned batch size, no run time)
advances in statistically efficient steps (:mod:`dlsched.perf.efficiency`): at global batch
``M`` on a placement whose step takes ``t`` seconds (the slowest GPU type it spans, from the
profiles' step times), progress accrues at ``gain(epoch, M) / t`` and examples at ``M / t``. Its
work is the progress at the end of its last epoch; each epoch end is a boundary, where the
validation metric of that epoch is recorded and an adaptive job re-picks its goodput-optimal
batch for the new epoch (as in the Pollux artifact).

Throughput samples: what a running job would report once per measurement period
(``measure_s``, the 60-s round of the Pollux artifact): at each multiple of it, the examples per
second of the configuration in effect just before, if the job was progressing then. The last
:data:`THROUGHPUT_HISTORY` per GPU count are kept for the policies (ONES interpolates them).

A job of the ElasticFlow throughput tables (:mod:`dlsched.perf.throughput_tables`: an
``application`` ``elasticflow/<model>``, work in iterations) has no statistical efficiency and no
validation curve: its progress is iterations, accrued at the table's iterations per second at its
GPU count (the slowest GPU class it spans), its one "epoch" is the whole job
(:class:`IterationWork`) and it records no validation metric.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dlsched.perf.efficiency import EfficiencyModel
from dlsched.perf.model import ELASTIC, ProgressModel
from dlsched.perf.perfbook import PerfBook, check_application
from dlsched.perf.profiles import ValidationCurve, load_profile
from dlsched.perf.throughput_tables import (
    TableError,
    ThroughputCurve,
    is_table_application,
    table_class,
    throughput_curve,
)
from dlsched.scheduler.plan import JobConfig

if TYPE_CHECKING:
    from dlsched.sim.job import SimJob

THROUGHPUT_HISTORY = 5
"""Measurements kept per GPU count (ONES interpolates over the last five)."""


@dataclass(frozen=True, slots=True)
class BatchSetting(JobConfig):
    """How an elastic job splits its batch: ``local_bsz`` examples per GPU per micro-step,
    ``accum_steps`` extra micro-steps per optimizer step. With ``adaptive`` the job re-picks
    its goodput-optimal batch at every epoch boundary."""

    local_bsz: int
    accum_steps: int = 0
    adaptive: bool = False


@dataclass(frozen=True, slots=True)
class IterationWork:
    """The work of a table job: ``iterations`` in one epoch, one unit of progress each (the
    :class:`EfficiencyModel` members the simulator and policies read)."""

    iterations: float

    @property
    def required(self) -> tuple[float, ...]:
        return (self.iterations,)

    @property
    def num_epochs(self) -> int:
        return 1

    @property
    def total_progress(self) -> float:
        return self.iterations

    def gain(self, epoch: int, global_bsz: float) -> float:
        """One unit of progress per iteration, whatever the batch."""
        return 1.0


@dataclass(slots=True)
class ElasticState:
    """An elastic job's own state inside the simulator (the kind's ``ext``)."""

    application: str
    requested_gpus: int
    requested_bsz: int
    eff: EfficiencyModel | IterationWork
    curves: tuple[ValidationCurve, ...]
    epoch_size: float
    tables: dict[str, ThroughputCurve] | None = None  # a table job's curves by GPU class
    epoch: int = 0
    samples: float = 0.0
    sample_rate: float = 0.0
    setting: BatchSetting | None = None
    counts: tuple[int, ...] = ()
    variants: tuple[str, ...] = ()
    last_change: float | None = None
    epoch_at_change: int = 0
    max_gpus: int = 0
    throughputs: dict[int, list[float]] = field(default_factory=dict)
    metrics: list[float] = field(default_factory=list)
    samples_at_epoch: list[float] = field(default_factory=list)
    rate_changes: list[tuple[float, float]] = field(default_factory=list)
    measured_tick: int = -1

    @property
    def gpus(self) -> int:
        return sum(self.counts)

    def global_bsz(self) -> int:
        s = self.setting
        assert s is not None
        return self.gpus * s.local_bsz * (s.accum_steps + 1)


def new_state(
    perf: PerfBook,
    application: str,
    gpus: int,
    batch_size: int,
    iterations: float | None = None,
    variants: Sequence[str] = (),
) -> ElasticState:
    """The initial state of a job of ``application`` asking for ``gpus`` GPUs at global batch
    ``batch_size``; ValueError for an unprofiled application. A table job (module docstring)
    needs its ``iterations`` and the profile ``variants`` of the nodes it may run on: each must
    have a table for it (:class:`~dlsched.perf.throughput_tables.TableError` otherwise), and
    ``gpus`` must be a runnable count of every one."""
    if is_table_application(application):
        return _table_state(application, gpus, batch_size, iterations, variants)
    check_application(application)
    curves = load_profile(application).validation
    first = curves[0]
    return ElasticState(
        application,
        gpus,
        batch_size,
        perf.efficiency(application),
        curves,
        float(first.iteration[0] * first.global_bsz),
    )


def _table_state(
    application: str,
    gpus: int,
    batch_size: int,
    iterations: float | None,
    variants: Sequence[str],
) -> ElasticState:
    if iterations is None or not (iterations > 0 and math.isfinite(iterations)):
        raise TableError(
            f"{application}: work {iterations!r}: expected a positive number of iterations"
        )
    tables: dict[str, ThroughputCurve] = {}
    for variant in dict.fromkeys(variants):
        gpu_class = table_class(variant)
        if gpu_class is None:
            raise TableError(
                f"{application}: GPUs of profile variant {variant!r} have no ElasticFlow "
                "throughput table (A100 and T4 do)"
            )
        curve = throughput_curve(application, batch_size, gpu_class)
        if curve.rate(gpus) is None:
            raise TableError(
                f"{application} at batch {batch_size}: {gpus} GPUs not runnable on "
                f"{gpu_class}; runnable: {', '.join(map(str, curve.sizes))}"
            )
        tables[gpu_class] = curve
    return ElasticState(
        application,
        gpus,
        batch_size,
        IterationWork(float(iterations)),
        (),
        float(iterations) * batch_size,
        tables,
    )


def table_rate(tables: dict[str, ThroughputCurve], variants: Sequence[str], gpus: int) -> float:
    """Iterations per second of a table job with curves ``tables`` (by GPU class) at ``gpus``
    GPUs on nodes of ``variants`` (the slowest class); 0 at a count no table measured."""
    rates = []
    for variant in dict.fromkeys(variants):
        gpu_class = table_class(variant)
        curve = tables.get(gpu_class) if gpu_class is not None else None
        rate = curve.rate(gpus) if curve is not None else None
        rates.append(0.0 if rate is None else rate)
    return min(rates, default=0.0)


class ElasticModel(ProgressModel):
    """Goodput-driven progress of elastic jobs (module docstring). ``node_variants`` gives the
    profile variant of every node of the cluster, by node index."""

    kind = ELASTIC

    def __init__(
        self, perf: PerfBook, node_variants: Sequence[str], measure_s: float = 60.0
    ) -> None:
        if measure_s <= 0:
            raise ValueError(f"measure_s must be > 0, got {measure_s}")
        self.perf = perf
        self.node_variants = tuple(node_variants)
        self.measure_s = measure_s

    def default_setting(self, job: SimJob, gpus: int) -> BatchSetting:
        """The job's requested global batch split over ``gpus`` GPUs (what a policy that does
        not choose batches gives it: :meth:`PerfBook.fixed_batch`)."""
        ext: ElasticState = job.ext
        if ext.tables is not None:
            return BatchSetting(max(1, -(-ext.requested_bsz // gpus)))
        config = self.perf.fixed_batch(ext.application, gpus, ext.requested_bsz)
        return BatchSetting(config.local_bsz, config.accum_steps)

    def begin(self, job: SimJob, now: float) -> None:
        ext: ElasticState = job.ext
        assert job.placement is not None
        counts = tuple(len(g) for _, g in job.placement)
        moved = counts != ext.counts or ext.setting is None
        if moved:
            if ext.counts:
                self._measure(job, now)
            ext.counts = counts
            ext.variants = tuple(self.node_variants[n] for n, _ in job.placement)
            ext.max_gpus = max(ext.max_gpus, ext.gpus)
        setting = job.config
        if not isinstance(setting, BatchSetting):
            setting = self.default_setting(job, ext.gpus)
        ext.setting = setting
        self._rate(job, now)

    def moved(self, job: SimJob, now: float) -> None:
        ext: ElasticState = job.ext
        ext.last_change = now
        ext.epoch_at_change = ext.epoch

    def _rate(self, job: SimJob, now: float) -> None:
        ext: ElasticState = job.ext
        s = ext.setting
        assert s is not None
        if ext.tables is not None:
            job.rate = table_rate(ext.tables, ext.variants, ext.gpus)
            ext.sample_rate = job.rate * ext.requested_bsz
            ext.rate_changes.append((now, ext.sample_rate))
            job.boundary = ext.eff.total_progress
            return
        m = ext.global_bsz()
        t = self.perf.mixed_iteration_time(
            ext.application, ext.variants, ext.counts, s.local_bsz, s.accum_steps
        )
        job.rate = ext.eff.gain(ext.epoch, m) / t
        ext.sample_rate = m / t
        ext.rate_changes.append((now, ext.sample_rate))
        job.boundary = ext.eff.required[ext.epoch]

    def bank(self, job: SimJob, now: float) -> None:
        """Fold the examples processed since the job's last rate change (before ``job.bank``)."""
        ext: ElasticState = job.ext
        if now > job.seg_start:
            ext.samples += (now - job.seg_start) * ext.sample_rate

    def cross(self, job: SimJob, now: float) -> None:
        ext: ElasticState = job.ext
        if ext.tables is None:
            ext.metrics.append(self._metric(ext))
        ext.samples_at_epoch.append(ext.samples)
        ext.epoch += 1
        if ext.epoch >= ext.eff.num_epochs:
            return
        s = ext.setting
        if s is not None and s.adaptive:
            best = self.perf.best_batch(
                ext.application, ext.variants[0], ext.epoch, len(ext.counts), ext.gpus
            ).config
            ext.setting = BatchSetting(best.local_bsz, best.accum_steps, adaptive=True)
        self._rate(job, now)

    def stopped(self, job: SimJob, now: float) -> None:
        ext: ElasticState = job.ext
        self._measure(job, now)
        ext.counts = ()
        ext.variants = ()
        ext.setting = None
        ext.rate_changes.clear()

    def restored(self, job: SimJob, done: float) -> None:
        """Roll back to the epoch of ``done``; examples in proportion to the progress kept
        (our approximation: the examples at the checkpoint are not tracked)."""
        ext: ElasticState = job.ext
        before = job.done
        ext.epoch = bisect.bisect_right(ext.eff.required, done)
        del ext.metrics[ext.epoch :]
        del ext.samples_at_epoch[ext.epoch :]
        if before > 0:
            ext.samples *= done / before

    def measure(self, job: SimJob, now: float) -> None:
        """Record the throughput samples of every measurement period that ended by ``now``."""
        self._measure(job, now)

    def _measure(self, job: SimJob, now: float) -> None:
        ext: ElasticState = job.ext
        changes = ext.rate_changes
        if not changes or not ext.counts:
            return
        step = self.measure_s
        last = math.floor(now / step + 1e-9)
        first = max(ext.measured_tick + 1, math.floor(job.run_start / step + 1e-9) + 1)
        n = ext.gpus
        history = ext.throughputs.setdefault(n, [])
        i = 0
        for k in range(first, last + 1):
            tick = k * step
            while i + 1 < len(changes) and changes[i + 1][0] < tick:
                i += 1
            if changes[i][0] < tick:
                history.append(changes[i][1])
        if first <= last:
            ext.measured_tick = last
            del history[:-THROUGHPUT_HISTORY]
            del changes[:i]

    @staticmethod
    def _metric(ext: ElasticState) -> float:
        """The validation metric after epoch ``ext.epoch``, from the curve of the validated
        batch nearest (in log scale) to the current global batch."""
        global_bsz = ext.global_bsz()
        sizes = [c.global_bsz for c in ext.curves]
        i = bisect.bisect_left(sizes, global_bsz)
        if i == len(sizes) or (i > 0 and global_bsz * global_bsz < sizes[i - 1] * sizes[i]):
            i -= 1
        curve = ext.curves[i]
        return curve.metric[min(ext.epoch, len(curve.metric) - 1)]
