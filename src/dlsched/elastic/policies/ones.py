"""ONES: online evolutionary search over elastic GPU allocations (Bian et al., SC'21).

The search keeps a population of schedules (:mod:`dlsched.elastic.ones_ops`: one slot per GPU)
and, each round, for ``generations`` generations: refreshes every candidate (drops finished
jobs, trims to caps), breeds children by uniform crossover of random parent pairs and mutation
(each job movable under the epoch rule removed with probability ``mutation_p``), fills idle slots
(new jobs one GPU, then jobs by ascending predicted single-GPU remaining time up to their caps;
a job with no prediction yet counts as the shortest, so young jobs reach their caps first),
reorders slots to move as few GPUs as possible, and keeps the best ``population`` by fitness —
total predicted remaining GPU-seconds, from measured throughputs (the last five per size,
interpolated) and a Beta progress predictor refit as jobs finish
(:mod:`dlsched.elastic.ones_predictor`).

Caps: a job starts capped at its requested GPUs; a job that ran two epochs since its last
change at its cap doubles it (at most ``cap_factor`` × requested, and the cluster); the largest
job, if it holds at least half the cluster and has attained more service than the median
active job, has its cap halved. The best schedule is applied only if every job it moves or
removes has run an epoch since it last changed; otherwise only jobs whose GPUs are idle start.
Batch: each GPU keeps the job's requested per-GPU batch, the global batch capped at the
largest validated one (the paper's learning-rate cap).

Our adaptations, and why (the first alone left ONES losing to Tiresias on 7 of the 8 Pollux
workloads, with 3–9 restarts per job at 30 s each; see bench/RESULTS.md):

- The paper evolves every second; here ``generations`` per 60-s round.
- Common random numbers for running jobs: the paper samples each job's ``ρ`` at every use.
  Resampled every round, the fittest schedule flipped on noise alone and jobs restarted for
  nothing. A running job keeps one uniform quantile, mapped through its current Beta
  posterior (:meth:`BetaProgressPredictor.rho`), so its ``ρ`` moves only when the posterior
  does (a new epoch, a refit); every candidate of a round is scored against the same draws.
  A job that is not running is redrawn every round, as in the paper: its posterior moves only
  with its epochs, so a fixed unlucky draw (a small ``ρ``, a long predicted remaining time)
  of a preempted job never moved and starved it for good (Pollux workload 5, seed 1: bert and
  deepspeech2 jobs preempted after their first epoch waited up to about 30,000 s, their ``ρ``
  fixed at 0.009–0.08 though the bert jobs were half done; see bench/RESULTS.md).
- Restart charge: the fitness adds ``restart_s`` × GPUs for every job whose slots differ from
  the current schedule (a start included), the GPU-seconds the simulator loses to restarts.
  The paper's testbed had no 30-s restart delay to weigh.
- Epoch rule with a floor: a job may be moved or removed only after an epoch *and*
  ``hold_s`` seconds since its last change; with epochs of a few seconds (ncf, cifar10) the
  paper's rule alone let jobs move every round. ``hold_s`` = 20 × ``restart_s`` bounds the
  time lost to restarts of a job held that long at 5%.
- Candidates respect the rule: jobs it holds keep their current slots in every candidate
  (:func:`dlsched.elastic.ones_ops.pin`; their caps are their current counts), so the best
  schedule can always be applied, instead of being rejected whole when crossover happened to
  move a held job.
- A cut cap is also a ceiling: after the largest job's cap is halved it never doubles past the
  cut again (otherwise it doubled back two epochs later and was cut again, two restarts of
  the largest job per cycle).
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.elastic.ones_ops import (
    BLOCKED,
    IDLE,
    Schedule,
    crossover,
    fill,
    fitness,
    interpolate_throughput,
    moves,
    mutate,
    pin,
    reorder,
    restart_cost,
    slots_by_job,
    trim,
)
from dlsched.elastic.ones_predictor import BetaProgressPredictor
from dlsched.elastic.policy import ElasticPolicy, fixed_allocation
from dlsched.elastic.types import Allocation, ClusterView, FinishedInfo, JobInfo
from dlsched.perf.perfbook import PerfBook


@dataclass
class Ones(ElasticPolicy):
    name = "ones"
    description = "ONES evolutionary search: GPU-slot chromosomes, Beta progress predictor"
    population: int = 16
    generations: int = 4
    mutation_p: float = 0.3
    cap_factor: int = 4
    restart_s: float = 30.0
    hold_s: float = 600.0

    def __post_init__(self) -> None:
        if self.population < 2 or self.generations < 1 or not 0 <= self.mutation_p <= 1:
            raise ValueError(
                "need population >= 2, generations >= 1 and 0 <= mutation_p <= 1; got "
                f"{self.population}, {self.generations}, {self.mutation_p}"
            )
        if self.restart_s < 0 or self.hold_s < 0:
            raise ValueError(
                f"need restart_s >= 0 and hold_s >= 0; got {self.restart_s}, {self.hold_s}"
            )

    def bind(self, cluster: ClusterView, perf: PerfBook, seed: int) -> None:
        super().bind(cluster, perf, seed)
        self.slot_node = [n.index for n in cluster.nodes for _ in range(n.gpus)]
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.predictor = BetaProgressPredictor(seed)
        self.caps: dict[int, int] = {}
        self.ceilings: dict[int, int] = {}
        self.quantiles: dict[int, float] = {}
        self.pop: list[Schedule] = []
        self.current: Schedule = [IDLE] * len(self.slot_node)
        self.usable: dict[int, int] = {n.index: n.gpus for n in cluster.nodes}

    def finished(self, done: Sequence[FinishedInfo]) -> None:
        for f in done:
            self.predictor.add(f.job)
            self.caps.pop(f.job.index, None)
            self.ceilings.pop(f.job.index, None)
            self.quantiles.pop(f.job.index, None)
        self.predictor.refit()

    def _update_caps(self, jobs: Sequence[JobInfo]) -> None:
        total = len(self.slot_node)
        for j in jobs:
            cap = self.caps.setdefault(j.index, min(j.requested_gpus, total))
            if j.gpus == cap and j.epoch - j.epoch_at_change >= 2:
                self.caps[j.index] = min(
                    2 * cap,
                    self.cap_factor * j.requested_gpus,
                    self.ceilings.get(j.index, total),
                )
        running = [j for j in jobs if j.gpus > 0]
        if running:
            largest = max(running, key=lambda j: (j.gpus, -j.index))
            median = statistics.median(j.attained_service for j in jobs)
            if 2 * largest.gpus >= total and largest.attained_service > median:
                cut = max(1, largest.gpus // 2)
                self.caps[largest.index] = cut
                # Without a ceiling the cap doubles back past half the cluster two epochs
                # later and is cut again: two restarts of the largest job every cycle.
                self.ceilings[largest.index] = cut

    def observe(self, cluster: ClusterView) -> None:
        """Slots of GPUs the round may not use (a down node's, or reserved ones) are held by
        :data:`BLOCKED`, pinned in every candidate."""
        super().observe(cluster)
        self.usable = {n.index: n.gpus for n in cluster.nodes}

    def _blocked(self, current: Schedule) -> list[int]:
        """For each node with fewer usable GPUs than slots, that many of its idle slots
        (highest first)."""
        out: list[int] = []
        by_node: dict[int, list[int]] = {}
        for s, node in enumerate(self.slot_node):
            by_node.setdefault(node, []).append(s)
        for node, slots in by_node.items():
            extra = len(slots) - self.usable.get(node, len(slots))
            idle = [s for s in reversed(slots) if current[s] == IDLE]
            out.extend(idle[:extra])
        return out

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        by_index = {j.index: j for j in jobs}
        # A job not holding GPUs (its node failed, or its GPUs were reserved away) leaves the
        # schedule it had.
        current = [j if j in by_index and by_index[j].gpus > 0 else IDLE for j in self.current]
        blocked = self._blocked(current)
        if blocked:
            current = pin(current, {BLOCKED: blocked})
        self._update_caps(jobs)
        eligible = {j.index for j in jobs if j.gpus > 0 and self._movable(now, j)}
        held = slots_by_job(current)
        # Jobs the epoch rule holds keep their slots in every candidate, so the best one can
        # always be applied (the paper's step 5 would otherwise reject it whole).
        pinned = {i: slots for i, slots in held.items() if i not in eligible}
        caps = {i: len(pinned[i]) if i in pinned else self.caps[i] for i in by_index}
        for j in jobs:
            # A waiting job is redrawn every round, as the paper samples at each use: fixed,
            # an unlucky draw of a job that no longer runs never moves (its posterior moves
            # only with its epochs), and the job starved for good.
            if j.index not in self.quantiles or j.gpus == 0:
                self.quantiles[j.index] = float(self.np_rng.random())
        rho = self.predictor.rho(jobs, self.quantiles)
        samples = {j.index: j.samples for j in jobs}

        speeds: dict[tuple[int, int], float | None] = {}

        def throughput(i: int, n: int) -> float | None:
            if (i, n) not in speeds:
                speeds[i, n] = interpolate_throughput(by_index[i].throughputs, n)
            return speeds[i, n]

        def single_remaining(j: JobInfo) -> float:
            x = throughput(j.index, 1)
            r = rho.get(j.index)
            if x is None or r is None:
                # No prediction yet: treated as the shortest, so young jobs reach their caps
                # first (least-attained-service in spirit) instead of starving at one GPU.
                return 0.0
            return j.samples * (1 / r - 1) / x

        new_jobs = [j.index for j in jobs if j.last_change is None]
        by_remaining = [j.index for j in sorted(jobs, key=lambda j: (single_remaining(j), j.index))]

        def prepare(c: Sequence[int]) -> Schedule:
            return reorder(
                fill(pin(trim(c, caps), pinned), new_jobs, by_remaining, caps),
                current,
                self.slot_node,
            )

        def score(c: Schedule) -> tuple[float, int, tuple[int, ...]]:
            f = fitness(c, samples, rho, throughput) + restart_cost(c, held, self.restart_s)
            return (f, moves(c, current), tuple(c))

        pop = [prepare(c) for c in [*self.pop, current]]
        for _ in range(self.generations):
            children = []
            for _ in range(self.population):
                a, b = self.rng.sample(pop, 2) if len(pop) > 1 else (pop[0], pop[0])
                child = mutate(
                    trim(crossover(a, b, self.rng), caps), eligible, self.rng, self.mutation_p
                )
                children.append(prepare(child))
            unique = {tuple(c): c for c in pop + children}
            pop = sorted(unique.values(), key=score)[: self.population]
        self.pop = pop
        chosen = self._apply(now, pop[0], current, by_index)
        self.current = chosen
        return self._allocations(chosen, by_index)

    def _movable(self, now: float, job: JobInfo) -> bool:
        """The epoch rule, with a floor: the job ran an epoch and ``hold_s`` since its last
        change."""
        since = now - job.last_change if job.last_change is not None else float("inf")
        return job.epoch - job.epoch_at_change >= 1 and since >= self.hold_s

    def _apply(
        self, now: float, best: Schedule, current: Schedule, jobs: Mapping[int, JobInfo]
    ) -> Schedule:
        """The epoch rule: ``best`` if every job it moves is movable (:meth:`_movable`); else
        ``current`` plus the jobs of ``best`` not running whose slots are idle."""
        now_slots = slots_by_job(current)
        new_slots = slots_by_job(best)
        moved = [j for j, slots in now_slots.items() if new_slots.get(j) != slots and j != BLOCKED]
        if all(self._movable(now, jobs[j]) for j in moved):
            return list(best)
        out = list(current)
        for j, slots in new_slots.items():
            if j not in now_slots and all(out[s] == IDLE for s in slots):
                for s in slots:
                    out[s] = j
        return out

    def _allocations(
        self, schedule: Schedule, jobs: Mapping[int, JobInfo]
    ) -> dict[str, Allocation]:
        per_job: dict[int, Counter[int]] = {}
        for s, j in enumerate(schedule):
            if j not in (IDLE, BLOCKED):
                per_job.setdefault(j, Counter())[self.slot_node[s]] += 1
        out = {}
        for j, nodes in per_job.items():
            job = jobs[j]
            n = sum(nodes.values())
            lim = self.perf.limits(job.application)
            per_gpu = job.requested_bsz / job.requested_gpus
            global_bsz = max(min(round(n * per_gpu), lim.max_global_bsz), 1)
            out[job.name] = fixed_allocation(
                self.perf, job, tuple(sorted(nodes.items())), global_bsz
            )
        return out
