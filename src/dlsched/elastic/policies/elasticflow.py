"""ElasticFlow: deadline-aware elastic scheduling (Gu et al., ASPLOS 2023), and its baselines.

For jobs of the ElasticFlow throughput tables (:mod:`dlsched.perf.throughput_tables`): a job
asks for a model, a global batch, iterations and a deadline; the policy chooses its GPUs. Our
own code after the paper and the semantics of its artifact's simulator (pkusys/ElasticFlow
commit 04a0109a; summarised in the shared traces' README):

- **Admission control** (``admission=true``): in a round where jobs with deadlines arrive, the
  admitted jobs and the newcomers are planned in deadline order from an empty timeline of the
  GPUs the policy may use, each at its minimum satisfactory share
  (:func:`~dlsched.elastic.deadline_plan.min_share`). If a newcomer's plan fails, or an admitted
  job that could be planned without the newcomers no longer can, the round's newcomers are
  declined (they never run and count as missing their deadline). Best-effort jobs (no deadline)
  are always admitted. (The artifact declines whenever any plan fails; we do not let an
  admitted job already late because of restarts block every later arrival.)
- **Allocation** ``marginal`` (ElasticFlow): minimum shares are reserved, then the GPUs free now
  go greedily: each job is scored by moving it to its next GPU level now and re-planning it,
  as the change of its planned GPU-time per added GPU; jobs holding no GPU come first, scores
  from highest to lowest (the artifact's order), the best that fits grows, scores are redone,
  until nothing fits. ``edf``: jobs in deadline order (best effort last) each take the most
  useful size (highest throughput) that is still free.
- **Placement**: sizes are powers of two; a job keeps its GPUs while its size is unchanged,
  others are placed largest first, best fit on one node or on whole free nodes (buddy
  placement); when that fragments, everything is placed again from scratch.

Options: ``admission`` (true), ``allocation`` (``marginal`` | ``edf``), ``interval_s`` (the
scheduling slot, 60 s). The artifact's four variants are ``ef-accessctrl`` = the defaults,
``ef`` = ``admission=false``, ``edf-accessctrl`` = ``allocation=edf``, ``edf`` =
``allocation=edf admission=false``. Jobs without a deadline plan nothing and grow only in the
greedy step. A job that cannot meet its deadline without admission control is planned as best
effort. The policy runs only table jobs, on one GPU class per pool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dlsched.elastic.deadline_plan import (
    DeadlinePlan,
    Timeline,
    constant_plan,
    fit,
    min_share,
)
from dlsched.elastic.policy import ElasticPolicy
from dlsched.elastic.table_jobs import (
    TableCurves,
    buddy_place,
    table_allocation,
    table_pool_problem,
)
from dlsched.elastic.types import Allocation, ClusterView, JobInfo
from dlsched.perf.throughput_tables import (
    ThroughputCurve,
    baseline_max_gpus,
    elasticflow_max_gpus,
)

ALLOCATIONS = ("marginal", "edf")


@dataclass
class ElasticFlow(ElasticPolicy):
    name = "elasticflow"
    description = (
        "deadline-aware: admission by minimum share, marginal-return scaling, buddy placement"
    )
    table_jobs = True
    admission: bool = True
    allocation: str = "marginal"
    interval_s: float = 60.0
    _seen: set[str] = field(default_factory=set, init=False)
    _admitted: set[str] = field(default_factory=set, init=False)
    _declined: dict[str, str] = field(default_factory=dict, init=False)
    _curves: TableCurves = field(default_factory=TableCurves, init=False)
    _last: tuple[object, float, dict[str, Allocation]] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.allocation not in ALLOCATIONS:
            raise ValueError(
                f"allocation {self.allocation!r} unknown; expected one of {', '.join(ALLOCATIONS)}"
            )
        if not (self.interval_s > 0 and math.isfinite(self.interval_s)):
            raise ValueError(f"interval_s must be finite and > 0, got {self.interval_s}")

    # ---- what the policy runs ------------------------------------------------------------
    def never_fits(self, application: str, gpus: int, cluster: ClusterView) -> str | None:
        return table_pool_problem(self.name, application, cluster)

    def _curve(self, job: JobInfo) -> ThroughputCurve:
        return self._curves.of(job, self.cluster)

    def _cap(self, curve: ThroughputCurve) -> int:
        if self.allocation == "marginal":
            return elasticflow_max_gpus(curve)
        return baseline_max_gpus(curve)

    def take_declined(self) -> Mapping[str, str]:
        out, self._declined = self._declined, {}
        return out

    # ---- a round -------------------------------------------------------------------------
    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        capacity = self.cluster.total_gpus
        # Between a round's planned changes, with the same jobs and GPUs, the answer stands
        # (re-planning every slot would give the same plans at far greater cost).
        key = (tuple(j.name for j in jobs), tuple(n.gpus for n in self.cluster.nodes))
        if self._last is not None and self._last[0] == key and now < self._last[1] - 1e-6:
            return self._last[2]
        newcomers = [j for j in jobs if j.name not in self._seen]
        self._seen.update(j.name for j in newcomers)
        for j in newcomers:
            if j.deadline is None or not self.admission:
                self._admitted.add(j.name)
        waiting = [j for j in newcomers if j.name not in self._admitted]
        if waiting:
            admitted = [j for j in jobs if j.name in self._admitted and j.deadline is not None]
            before = self._plan(now, capacity, admitted)
            after = self._plan(now, capacity, admitted + waiting)
            broken = [
                j.name
                for j in admitted + waiting
                if after.get(j.name) is None and (j in waiting or before.get(j.name) is not None)
            ]
            if broken:
                for j in waiting:
                    self._declined[j.name] = (
                        f"deadline {j.deadline:.0f} s cannot be met beside the admitted jobs "
                        f"(at {now:.0f} s)"
                    )
            else:
                self._admitted.update(j.name for j in waiting)
        live = [j for j in jobs if j.name in self._admitted and j.name not in self._declined]
        gone = {j.name for j in jobs}
        self._admitted &= gone
        if self.allocation == "marginal":
            counts, plans = self._marginal(now, capacity, live)
            changes = [c for p in plans if (c := p.next_change(now)) is not None]
            until = min(changes, default=math.inf)
        else:
            counts, until = self._edf(capacity, live), math.inf
        answer = self._place(live, counts)
        if not self._declined:
            self._last = (key, until, answer)
        return answer

    def _order(self, jobs: Sequence[JobInfo]) -> list[JobInfo]:
        return sorted(
            jobs,
            key=lambda j: (math.inf if j.deadline is None else j.deadline, j.submit_time, j.index),
        )

    def _rate(self, curve: ThroughputCurve) -> _RateOf:
        return _RateOf(curve)

    def _plan(
        self, now: float, capacity: int, jobs: Sequence[JobInfo], timeline: Timeline | None = None
    ) -> dict[str, DeadlinePlan | None]:
        """Minimum-share plans of the deadline ``jobs`` in deadline order (None: infeasible),
        reserved on ``timeline`` (a fresh one of ``capacity`` GPUs by default)."""
        line = timeline if timeline is not None else Timeline(now, capacity)
        plans: dict[str, DeadlinePlan | None] = {}
        for job in self._order([j for j in jobs if j.deadline is not None]):
            assert job.deadline is not None
            curve = self._curve(job)
            plan = min_share(
                line,
                job.remaining_progress,
                job.deadline,
                self._rate(curve),
                curve.sizes,
                self._cap(curve),
                self.interval_s,
            )
            if plan is not None:
                line.add(plan, -1)
            plans[job.name] = plan
        return plans

    def _marginal(
        self, now: float, capacity: int, jobs: Sequence[JobInfo]
    ) -> tuple[dict[str, int], list[DeadlinePlan]]:
        """GPUs now by job name, and the plans they follow."""
        line = Timeline(now, capacity)
        plans: dict[str, DeadlinePlan | None] = self._plan(now, capacity, jobs, line)
        current = {j.name: (p.gpus_at(now) if (p := plans.get(j.name)) else 0) for j in jobs}
        free = capacity - sum(current.values())
        while free > 0:
            best: tuple[float, int, JobInfo, DeadlinePlan] | None = None
            for job in jobs:
                grown = self._grow(now, line, job, plans.get(job.name), current[job.name], free)
                if grown is None:
                    continue
                score, plan = grown
                key = (score, -job.index)
                if best is None or key > (best[0], best[1]):
                    best = (score, -job.index, job, plan)
            if best is None:
                break
            _, _, job, plan = best
            old = plans.get(job.name)
            if old is not None:
                line.add(old, +1)
            line.add(plan, -1)
            plans[job.name] = plan
            gpus = plan.gpus_at(now)
            free -= gpus - current[job.name]
            current[job.name] = gpus
        kept = [p for p in plans.values() if p is not None]
        return {name: g for name, g in current.items() if g > 0}, kept

    def _grow(
        self,
        now: float,
        line: Timeline,
        job: JobInfo,
        plan: DeadlinePlan | None,
        have: int,
        free: int,
    ) -> tuple[float, DeadlinePlan] | None:
        """``job`` at its next level now, re-planned, with its score; None if it cannot grow."""
        curve = self._curve(job)
        bigger = [s for s in curve.sizes if have < s <= self._cap(curve)]
        if not bigger or bigger[0] - have > free:
            return None
        level = bigger[0]
        trial = line.copy()
        if plan is not None:
            trial.add(plan, +1)
        new = constant_plan(
            trial, job.remaining_progress, self._rate(curve), curve.sizes, level, self.interval_s
        )
        if new is None or new.gpus_at(now) != level:
            return None
        if job.deadline is not None and plan is not None and new.end > job.deadline + 1e-6:
            return None
        if have == 0:
            return math.inf, new
        before = plan.gpu_time() if plan is not None else 0.0
        return (new.gpu_time() - before) / (level - have), new

    def _edf(self, capacity: int, jobs: Sequence[JobInfo]) -> dict[str, int]:
        free = capacity
        out: dict[str, int] = {}
        for job in self._order(jobs):
            curve = self._curve(job)
            limit = min(free, self._cap(curve))
            choices = [s for s in curve.sizes if s <= limit]
            if not choices:
                continue
            size = max(choices, key=lambda s: (self._rate(curve)(s), -s))
            out[job.name] = size
            free -= size
        return out

    # ---- placement -----------------------------------------------------------------------
    def _place(self, jobs: Sequence[JobInfo], counts: Mapping[str, int]) -> dict[str, Allocation]:
        by_name = {j.name: j for j in jobs}
        order = sorted(counts, key=lambda n: (-counts[n], by_name[n].index))
        placed = self._try_place(order, counts, by_name, keep=True)
        if placed is None:
            placed = self._try_place(order, counts, by_name, keep=False)
        assert placed is not None
        return {name: table_allocation(by_name[name], gpus) for name, gpus in placed.items()}

    def _try_place(
        self,
        order: Sequence[str],
        counts: Mapping[str, int],
        by_name: Mapping[str, JobInfo],
        keep: bool,
    ) -> dict[str, tuple[tuple[int, int], ...]] | None:
        """Placements of ``order`` (largest first); with ``keep``, jobs of unchanged size keep
        their GPUs and a job that does not fit fails the whole attempt; without, a job that
        does not fit is halved until it does (or gets nothing)."""
        free = [n.gpus for n in self.cluster.nodes]
        out: dict[str, tuple[tuple[int, int], ...]] = {}
        if keep:
            for name in order:
                alloc = by_name[name].allocation
                if (
                    alloc is not None
                    and alloc.num_gpus == counts[name]
                    and all(free[node] >= c for node, c in alloc.gpus)
                ):
                    for node, c in alloc.gpus:
                        free[node] -= c
                    out[name] = alloc.gpus
        for name in order:
            if name in out:
                continue
            size = counts[name]
            while size > 0:
                gpus = buddy_place(self.cluster, free, size)
                if gpus is not None:
                    out[name] = gpus
                    break
                if keep:
                    return None
                size = fit(self._curve(by_name[name]).sizes, size - 1, size - 1)
        return out


@dataclass(frozen=True, slots=True)
class _RateOf:
    """A curve's iterations per second by GPU count (0 where not measured)."""

    curve: ThroughputCurve

    def __call__(self, gpus: int) -> float:
        rate = self.curve.rate(gpus)
        return 0.0 if rate is None else rate
