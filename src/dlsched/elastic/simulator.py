"""The round-based elastic simulator, with the Pollux artifact's semantics.

- Rounds of ``round_s`` seconds (60) start at multiples of it from time 0. A job takes part from
  the first round starting at or after its submission.
- At the start of a round the policy (if its interval has come) returns every job's
  allocation; the simulator validates it and applies it. A job whose GPUs change makes no
  progress for ``restart_s`` seconds (30) while holding its new GPUs; a batch change alone is
  free.
- During a round a job advances in statistically efficient steps: at global batch ``M`` each
  step takes the step time of its placement (the slowest GPU type it spans) and adds
  ``gain(epoch, M)`` of progress (:mod:`dlsched.perf.efficiency`). Epoch boundaries inside a
  round are found exactly; an adaptive allocation re-picks its batch at each. A job finishes at
  the instant it passes its last epoch, inside the round, and its GPUs idle for the rest of it.
- Each round a running job's throughput (examples per second, at the round's last
  configuration) is recorded for the policies, the last five per GPU count.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from dlsched.elastic.perfbook import PerfBook, check_application
from dlsched.elastic.policy import ElasticPolicy, validate
from dlsched.elastic.types import Allocation, ClusterView, FinishedInfo, JobInfo
from dlsched.perf.efficiency import EfficiencyModel
from dlsched.perf.profiles import ValidationCurve, load_profile

THROUGHPUT_HISTORY = 5
"""Measurements kept per GPU count (ONES interpolates over the last five)."""


@dataclass(frozen=True)
class ElasticConfig:
    """Simulator settings. ``max_idle_rounds``: consecutive rounds in which jobs wait and no
    GPU is allocated before the run is declared stuck (an error naming the policy)."""

    round_s: float = 60.0
    restart_s: float = 30.0
    seed: int = 0
    max_idle_rounds: int = 10_000

    def __post_init__(self) -> None:
        if self.round_s <= 0 or self.restart_s < 0:
            raise ValueError(
                f"need round_s > 0 and restart_s >= 0, got {self.round_s}, {self.restart_s}"
            )


@dataclass(frozen=True, slots=True)
class ElasticJobSpec:
    """One job of an elastic workload."""

    name: str
    submit_time: float
    application: str
    gpus: int  # tuned GPU count (what non-adaptive policies use)
    batch_size: int  # tuned global batch


@dataclass
class JobState:
    """A job's mutable state inside the simulator; results are read from it at the end."""

    index: int
    spec: ElasticJobSpec
    eff: EfficiencyModel
    curves: tuple[ValidationCurve, ...]
    epoch_size: float
    progress: float = 0.0
    epoch: int = 0
    samples: float = 0.0
    alloc: Allocation | None = None
    local_bsz: int = 0
    accum_steps: int = 0
    stall: float = 0.0
    attained: float = 0.0
    lost_gpu_s: float = 0.0
    first_start: float | None = None
    end: float | None = None
    allocations: int = 0
    restarts: int = 0
    preemptions: int = 0
    last_change: float | None = None
    epoch_at_change: int = 0
    max_gpus: int = 0
    throughputs: dict[int, list[float]] = field(default_factory=dict)
    metrics: list[float] = field(default_factory=list)
    samples_at_epoch: list[float] = field(default_factory=list)

    def info(self) -> JobInfo:
        s = self.spec
        return JobInfo(
            name=s.name,
            index=self.index,
            application=s.application,
            submit_time=s.submit_time,
            requested_gpus=s.gpus,
            requested_bsz=s.batch_size,
            attained_service=self.attained,
            progress=self.progress,
            total_progress=self.eff.total_progress,
            epoch=self.epoch,
            num_epochs=self.eff.num_epochs,
            samples=self.samples,
            allocation=self.alloc,
            restarts=self.restarts,
            last_change=self.last_change,
            epoch_at_change=self.epoch_at_change,
            max_gpus_seen=self.max_gpus,
            epoch_size=self.epoch_size,
            throughputs=MappingProxyType({n: tuple(v) for n, v in self.throughputs.items()}),
            metrics=tuple(self.metrics),
            samples_at_epoch=tuple(self.samples_at_epoch),
        )


@dataclass(frozen=True, slots=True)
class RoundSample:
    """The cluster during one round (for the timeline)."""

    time: float
    busy_gpus: int
    running: int
    pending: int
    pending_gpus: int


@dataclass
class ElasticOutcome:
    """What a run produced: every job's final state, per-round samples, wall time."""

    jobs: list[JobState]
    rounds: list[RoundSample]
    wall_s: float
    rounds_decided: int


ProgressFn = Callable[[int, int], None]


class ElasticSimulator:
    """Runs one workload under one policy (module docstring)."""

    def __init__(
        self,
        specs: Sequence[ElasticJobSpec],
        cluster: ClusterView,
        policy: ElasticPolicy,
        config: ElasticConfig | None = None,
        perf: PerfBook | None = None,
    ) -> None:
        self.config = config or ElasticConfig()
        self.cluster = cluster
        self.policy = policy
        self.perf = perf or PerfBook()
        if policy.interval_s < self.config.round_s or (
            abs(
                policy.interval_s / self.config.round_s
                - round(policy.interval_s / self.config.round_s)
            )
            > 1e-9
        ):
            raise ValueError(
                f"policy {policy.name!r}: interval {policy.interval_s} s is not a multiple of "
                f"the {self.config.round_s}-s round"
            )
        self.jobs = [self._new_job(i, s) for i, s in enumerate(specs)]
        self._variant = [n.variant for n in cluster.nodes]

    def _new_job(self, index: int, spec: ElasticJobSpec) -> JobState:
        check_application(spec.application)
        eff = self.perf.efficiency(spec.application)
        curves = load_profile(spec.application).validation
        first = curves[0]
        epoch_size = first.iteration[0] * first.global_bsz
        return JobState(index, spec, eff, curves, float(epoch_size))

    def run(self, progress: ProgressFn | None = None) -> ElasticOutcome:
        """Simulate until every job finishes."""
        started = time.perf_counter()
        cfg = self.config
        self.policy.bind(self.cluster, self.perf, cfg.seed)
        every = round(self.policy.interval_s / cfg.round_s)
        order = sorted(self.jobs, key=lambda j: (j.spec.submit_time, j.index))
        arrivals = 0
        active: list[JobState] = []
        rounds: list[RoundSample] = []
        k, decided, idle, done_count = 0, 0, 0, 0
        while done_count < len(order):
            now = k * cfg.round_s
            if not active and arrivals < len(order):
                first_k = _ceil_div(order[arrivals].spec.submit_time, cfg.round_s)
                k = max(k, first_k)
                now = k * cfg.round_s
            while arrivals < len(order) and order[arrivals].spec.submit_time <= now:
                active.append(order[arrivals])
                arrivals += 1
            if active and (k % every == 0):
                self._decide(now, active)
                decided += 1
            finished = self._advance(now, active)
            running = [j for j in active if j.alloc is not None]
            waiting = [j for j in active if j.alloc is None and j.end is None]
            rounds.append(
                RoundSample(
                    now,
                    sum(j.alloc.num_gpus for j in running if j.alloc is not None),
                    len(running),
                    len(waiting),
                    sum(j.spec.gpus for j in waiting),
                )
            )
            idle = idle + 1 if not running else 0
            if idle > cfg.max_idle_rounds:
                raise RuntimeError(
                    f"policy {self.policy.name!r} allocated no GPU for {idle} rounds while "
                    f"{len(active)} jobs waited (at {now:.0f} s)"
                )
            if finished:
                for j in finished:
                    j.alloc = None
                done_count += len(finished)
                gone = {j.index for j in finished}
                active = [j for j in active if j.index not in gone]
                self.policy.finished(
                    [FinishedInfo(j.info(), j.end if j.end is not None else now) for j in finished]
                )
                if progress is not None:
                    progress(done_count, len(order))
            k += 1
        return ElasticOutcome(self.jobs, rounds, time.perf_counter() - started, decided)

    def _decide(self, now: float, active: list[JobState]) -> None:
        infos = [j.info() for j in active]
        answer = self.policy.decide(now, infos)
        validate(self.policy.name, answer, infos, self.cluster)
        for j in active:
            new = answer.get(j.spec.name)
            old = j.alloc
            if (new.gpus if new else ()) != (old.gpus if old else ()):
                if new is None:
                    j.preemptions += 1
                    j.stall = 0.0
                else:
                    if j.allocations > 0:
                        j.restarts += 1
                    j.allocations += 1
                    j.stall = self.config.restart_s
                    j.max_gpus = max(j.max_gpus, new.num_gpus)
                    if j.first_start is None:
                        j.first_start = now
                j.last_change = now
                j.epoch_at_change = j.epoch
            j.alloc = new
            if new is not None:
                j.local_bsz, j.accum_steps = new.local_bsz, new.accum_steps

    def _advance(self, now: float, active: list[JobState]) -> list[JobState]:
        """Move every allocated job through ``[now, now + round_s)``; the jobs that finished."""
        finished = []
        length = self.config.round_s
        for j in active:
            alloc = j.alloc
            if alloc is None:
                continue
            n = alloc.num_gpus
            delay = min(j.stall, length)
            j.stall -= delay
            j.lost_gpu_s += delay * n
            elapsed = delay
            remaining = length - delay
            variants = [self._variant[node] for node, _ in alloc.gpus]
            placement = alloc.placement
            app = j.spec.application
            eff = j.eff
            throughput = 0.0
            while remaining > 0:
                m = n * j.local_bsz * (j.accum_steps + 1)
                t = self.perf.mixed_iteration_time(
                    app, variants, placement, j.local_bsz, j.accum_steps
                )
                rate = eff.gain(j.epoch, m) / t
                throughput = m / t
                need = eff.required[j.epoch]
                if j.progress + rate * remaining < need:
                    j.progress += rate * remaining
                    j.samples += throughput * remaining
                    elapsed += remaining
                    remaining = 0.0
                    break
                dt = (need - j.progress) / rate
                j.progress = need
                j.samples += throughput * dt
                elapsed += dt
                remaining -= dt
                j.metrics.append(self._metric(j, m))
                j.samples_at_epoch.append(j.samples)
                j.epoch += 1
                if j.epoch >= eff.num_epochs:
                    j.end = now + elapsed
                    finished.append(j)
                    break
                if alloc.adaptive:
                    best = self.perf.best_batch(
                        app, variants[0], j.epoch, alloc.num_nodes, n
                    ).config
                    j.local_bsz, j.accum_steps = best.local_bsz, best.accum_steps
            j.attained += elapsed * n
            if throughput > 0:
                history = j.throughputs.setdefault(n, [])
                history.append(throughput)
                del history[:-THROUGHPUT_HISTORY]
        return finished

    @staticmethod
    def _metric(j: JobState, global_bsz: int) -> float:
        """The validation metric after epoch ``j.epoch``, from the curve of the validated batch
        nearest (in log scale) to ``global_bsz``."""
        sizes = [c.global_bsz for c in j.curves]
        i = bisect.bisect_left(sizes, global_bsz)
        if i == len(sizes) or (i > 0 and global_bsz * global_bsz < sizes[i - 1] * sizes[i]):
            i -= 1
        curve = j.curves[i]
        return curve.metric[min(j.epoch, len(curve.metric) - 1)]


def _ceil_div(t: float, step: float) -> int:
    k = int(t // step)
    return k if k * step >= t else k + 1
