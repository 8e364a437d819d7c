"""What an elastic policy run live is told of its jobs.

:class:`ElasticDriver` holds one :class:`~dlsched.elastic.policy.ElasticPolicy` (the object the
simulator uses, bound once to the cluster at full size and a
:class:`~dlsched.perf.perfbook.PerfBook`) and, for every active elastic job, what the service has
learnt of it; each round :meth:`ElasticDriver.info` builds the policy's
:class:`~dlsched.elastic.types.JobInfo` views (the round itself is
:class:`~dlsched.service.control.elastic_planning.LiveElasticAdapter`'s).

How a live job is shown to the policy (the job is a scaled-down run of its profiled
``application``): its reported fraction done maps onto the application's progress and epochs
(``progress = fraction × total_progress``, ``epoch = ⌊fraction × num_epochs⌋``); ``samples``,
``epoch_size`` and the throughputs are the job's own (examples and examples per second as it
reported them), so ONES's remaining-time estimate ``samples·(1/ρ − 1)/throughput`` is in the
job's real seconds. A throughput is recorded at most once per round and only from a fresh
report (its ``time`` changed) of a run at the job's current size: the last five per GPU count,
as in the simulator. Attained service, restarts, the last change and the most GPUs held come from
the job's event log in the store (they survive a restart of the service); throughputs and epoch
marks are kept in memory and measured again after one.

Limits of the mapping: live jobs report no validation metric, so ``metrics`` holds the
application profile's metric at each epoch the job passed (:func:`profile_metric`, what the
simulator uses too) for ONES's Beta predictor and Optimus's loss-curve fit.

Step times: the policy is bound to a :class:`~dlsched.service.control.live_perf.LivePerfBook` and
each
job's ``application`` is a :class:`~dlsched.service.control.live_perf.LiveApplication`, so the step
times and goodput Pollux, Optimus, Gavel and Themis read are the job's measured ones where it
has run and the profile's scaled by its measured/profile ratio elsewhere. Every throughput
recorded for the policy is also recorded there, under the run's nodes, GPUs and per-GPU batch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from dlsched.cluster.spec import ClusterSpec
from dlsched.elastic.policy import ElasticPolicy
from dlsched.elastic.types import Allocation, FinishedInfo, JobInfo, cluster_view
from dlsched.perf.elastic_progress import THROUGHPUT_HISTORY
from dlsched.perf.profiles import load_profile
from dlsched.service.control.elastic_book import ElasticSpec
from dlsched.service.control.live_perf import LiveApplication, LivePerfBook
from dlsched.service.store.records import GpuIds, JobRow, held_gpus


@dataclass
class RunHistory:
    """What a job's event log says of its runs: GPU-seconds held, launches, when its GPUs last
    changed and the most it held."""

    attained_gpu_s: float = 0.0
    starts: int = 0
    last_change: float | None = None
    max_gpus: int = 0


def run_history(events: Sequence[tuple[float, str, Mapping[str, Any]]], now: float) -> RunHistory:
    """Fold a job's event log (``Store.events``) into a :class:`RunHistory` at time ``now``: a
    run lasts from its ``started`` event to the next event that ends it (requeued or final), or
    to ``now`` if none has yet."""
    out = RunHistory()
    began: float | None = None
    gpus = 0
    for t, kind, detail in events:
        if kind == "started":
            ids = detail.get("gpu_ids") or {}
            gpus = sum(len(g) for g in ids.values())
            began = t
            out.starts += 1
            out.last_change = t
            out.max_gpus = max(out.max_gpus, gpus)
        elif kind in ("requeued", "completed", "failed", "cancelled") and began is not None:
            out.attained_gpu_s += gpus * max(0.0, t - began)
            began = None
    if began is not None:
        out.attained_gpu_s += gpus * max(0.0, now - began)
    return out


@dataclass
class JobTrack:
    """What the driver learnt of one job from its reports."""

    fraction: float = 0.0
    samples: float = 0.0
    total_samples: float | None = None
    report_time: float | None = None
    throughputs: dict[int, list[float]] = field(default_factory=dict)
    samples_at_epoch: list[float] = field(default_factory=list)
    metrics: list[float] = field(default_factory=list)
    global_bsz: int = 0
    epoch_at_change: int = 0
    seen_change: float | None = None
    last_info: JobInfo | None = None


@dataclass(frozen=True, slots=True)
class LiveElasticJob:
    """One active elastic job as the controller hands it to the driver: its row, spec, run
    history (None until it is read for a decision), the per-GPU batch of its current launch
    (None unless it runs) and its latest report."""

    row: JobRow
    spec: ElasticSpec
    history: RunHistory | None
    batch_size: int | None
    status: Mapping[str, Any] | None


class ElasticDriver:
    """One elastic policy run live (module docstring)."""

    def __init__(self, policy: ElasticPolicy, cluster: ClusterSpec, seed: int = 0) -> None:
        self.policy = policy
        self.view = cluster_view(cluster)
        self.node_of = {n.name: n.index for n in self.view.nodes}
        self.perf = LivePerfBook()
        policy.bind(self.view, self.perf, seed)
        self.tracks: dict[int, JobTrack] = {}

    def allocation_of(self, gpu_ids: GpuIds | None, batch_size: int) -> Allocation | None:
        """A running job's GPUs as an :class:`Allocation` (None when it holds none)."""
        if not gpu_ids:
            return None
        pairs = sorted((self.node_of[node], len(gs)) for node, gs in gpu_ids.items() if gs)
        return Allocation(tuple(pairs), batch_size) if pairs else None

    def observe(
        self,
        seq: int,
        status: Mapping[str, Any] | None,
        gpu_ids: GpuIds | None,
        batch_size: int | None,
    ) -> None:
        """Take in job ``seq``'s latest report while it runs on ``gpu_ids`` at per-GPU batch
        ``batch_size``: progress always, a throughput only from a fresh report of a run at that
        GPU count (and, when the report states it, that batch); the throughput also goes to
        the performance model under the run's shape."""
        gpus = held_gpus(gpu_ids)
        track = self.tracks.setdefault(seq, JobTrack())
        if not status:
            return
        fraction = _number(status.get("progress"))
        samples = _number(status.get("samples"))
        total = _number(status.get("total_samples"))
        rate = _number(status.get("samples_per_s"))
        size = status.get("num_gpus")
        when = _number(status.get("time"))
        if fraction is not None:
            track.fraction = min(max(fraction, 0.0), 1.0)
        if samples is not None:
            track.samples = samples
        if total is not None and total > 0:
            track.total_samples = total
        fresh = when is not None and when != track.report_time
        if fresh:
            track.report_time = when
        if not (fresh and rate and rate > 0 and size == gpus and gpus > 0):
            return
        if status.get("state") == "finished":
            return
        reported = status.get("batch_size")
        if reported is not None and reported != batch_size:
            return
        history = track.throughputs.setdefault(gpus, [])
        history.append(rate)
        del history[:-THROUGHPUT_HISTORY]
        if batch_size is not None:
            nodes = sum(1 for g in (gpu_ids or {}).values() if g)
            self.perf.record(seq, nodes, gpus, batch_size, rate)

    def forget(self, seq: int) -> None:
        """Drop what was learnt of job ``seq`` (it left)."""
        self.tracks.pop(seq, None)
        self.perf.forget(seq)

    def info(self, job: LiveElasticJob, now: float) -> JobInfo:
        """The policy's view of ``job`` at ``now`` (module docstring)."""
        row, spec = job.row, job.spec
        track = self.tracks.setdefault(row.seq, JobTrack())
        eff = self.perf.efficiency(spec.application)
        epochs = eff.num_epochs
        epoch = min(int(track.fraction * epochs), epochs - 1)
        held = held_gpus(row.gpu_ids)
        global_bsz = (job.batch_size or spec.batch_size) * (held or row.gpus)
        while len(track.samples_at_epoch) < epoch:
            track.metrics.append(profile_metric(spec.application, len(track.metrics), global_bsz))
            track.samples_at_epoch.append(track.samples)
        if track.total_samples is not None:
            epoch_size = track.total_samples / epochs
        else:
            first = load_profile(spec.application).validation[0]
            epoch_size = float(first.iteration[0] * first.global_bsz)
        history = job.history or RunHistory()
        if history.last_change != track.seen_change:
            track.seen_change = history.last_change
            track.epoch_at_change = epoch
        allocation = None
        if job.batch_size is not None:
            allocation = self.allocation_of(row.gpu_ids, job.batch_size)
        info = JobInfo(
            name=row.id,
            index=row.seq,
            application=LiveApplication(spec.application, row.seq),
            submit_time=row.submit_time,
            requested_gpus=row.gpus,
            requested_bsz=spec.batch_size * row.gpus,
            attained_service=history.attained_gpu_s,
            progress=track.fraction * eff.total_progress,
            total_progress=eff.total_progress,
            epoch=epoch,
            num_epochs=epochs,
            samples=track.samples,
            allocation=allocation,
            restarts=max(history.starts - 1, 0),
            last_change=history.last_change,
            epoch_at_change=track.epoch_at_change,
            max_gpus_seen=history.max_gpus,
            epoch_size=epoch_size,
            throughputs=MappingProxyType({n: tuple(v) for n, v in track.throughputs.items()}),
            metrics=tuple(track.metrics),
            samples_at_epoch=tuple(track.samples_at_epoch),
        )
        track.last_info = info
        track.global_bsz = global_bsz
        return info

    def finished(self, done: Sequence[tuple[int, float]]) -> None:
        """Tell the policy of jobs that completed (``(seq, end time)``), as the simulator does
        between rounds; their tracks are dropped."""
        out = []
        for seq, end in done:
            track = self.tracks.pop(seq, None)
            self.perf.forget(seq)
            if track is None or track.last_info is None:
                continue
            last = track.last_info
            marks = list(last.samples_at_epoch)
            metrics = list(last.metrics)
            final = track.total_samples or last.samples
            while len(marks) < last.num_epochs:
                metrics.append(profile_metric(last.application, len(marks), track.global_bsz))
                marks.append(final)
            view = replace(
                last,
                progress=last.total_progress,
                epoch=last.num_epochs,
                samples=final,
                allocation=None,
                metrics=tuple(metrics),
                samples_at_epoch=tuple(marks),
            )
            out.append(FinishedInfo(view, end))
        if out:
            self.policy.finished(out)


def profile_metric(application: str, epoch: int, global_bsz: int) -> float:
    """The validation metric ``application``'s profile records after ``epoch`` at the validated
    global batch nearest (in log scale) to ``global_bsz``: the stand-in for the metric a live
    job does not report (as the elastic simulator does)."""
    curves = load_profile(application).validation
    best = min(curves, key=lambda c: abs(math.log(c.global_bsz / max(global_bsz, 1))))
    return best.metric[min(epoch, len(best.metric) - 1)]


def per_gpu_batch(alloc: Allocation) -> int:
    """The per-GPU batch a job runs with for ``alloc``: the policy's local batch times its
    micro-steps (the training workload has no gradient accumulation, so it takes the same
    examples per optimizer step in one micro-step)."""
    return alloc.local_bsz * (alloc.accum_steps + 1)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
