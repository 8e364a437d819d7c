"""A round-based simulator of PS jobs: arrivals, allocations chosen by a policy, completions.

The policy decides at every arrival and completion (and every ``interval`` seconds if it has
one). Between decisions every running job advances at ``w · batch / iteration time`` samples
per second, with iteration times from the layered model under the bandwidth sharing of all
placed tasks (:mod:`dlsched.ps.objective`). A job whose placement changes after it has run
(resized, moved, or resumed after preemption) first spends ``restart_s`` seconds restoring
its checkpoint. Jobs that can never run are reported as infeasible with the reason.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.ps.job import PsJob, infeasibility
from dlsched.ps.machines import Machine, check_machines
from dlsched.ps.objective import iteration_times
from dlsched.ps.placement import Option, capacity, usage
from dlsched.ps.policy_base import JobState, PsPolicy, fits_somewhere


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """One job's result: ``finish`` and ``jct`` (finish − arrival) are None for an infeasible
    job, whose ``reason`` says why."""

    job_id: str
    model: str
    arrival: float
    samples: float
    requested_workers: int
    requested_servers: int
    finish: float | None
    jct: float | None
    restarts: int
    reason: str | None


@dataclass(frozen=True)
class SimResult:
    """Per-job outcomes (input order), how many decisions the policy made and the wall-clock
    seconds it spent deciding."""

    policy: str
    outcomes: tuple[JobOutcome, ...]
    decisions: int
    decide_seconds: float

    @property
    def mean_jct(self) -> float:
        """Average JCT over the jobs that ran (NaN if none did)."""
        jcts = [o.jct for o in self.outcomes if o.jct is not None]
        return float(np.mean(jcts)) if jcts else math.nan

    @property
    def infeasible(self) -> tuple[JobOutcome, ...]:
        return tuple(o for o in self.outcomes if o.reason is not None)


@dataclass
class _Running:
    job: PsJob
    remaining: float
    attained: float = 0.0
    option: Option | None = None
    has_run: bool = False
    stalled_until: float = 0.0
    restarts: int = 0


def simulate(
    jobs: Sequence[PsJob],
    machines: Sequence[Machine],
    policy: PsPolicy,
    restart_s: float = 30.0,
) -> SimResult:
    """Run ``jobs`` on ``machines`` under ``policy`` until every feasible job completes.

    Raises RuntimeError if the policy over-commits a machine or leaves the cluster idle with
    jobs waiting and nothing else to wait for (a policy bug).
    """
    check_machines(machines)
    if restart_s < 0:
        raise ValueError(f"restart_s must be >= 0, got {restart_s}")
    reasons = {job.job_id: _reason(job, machines) for job in jobs}
    if len(reasons) != len(jobs):
        raise ValueError("job ids must be unique")
    pending = sorted(
        (j for j in jobs if reasons[j.job_id] is None), key=lambda j: (j.arrival, j.job_id)
    )
    finish: dict[str, float] = {}
    active: dict[str, _Running] = {}
    restarts: dict[str, int] = {}
    decisions = 0
    spent = 0.0
    now = pending[0].arrival if pending else 0.0
    cursor = 0
    cap = capacity(machines)
    while cursor < len(pending) or active:
        while cursor < len(pending) and pending[cursor].arrival <= now:
            job = pending[cursor]
            active[job.job_id] = _Running(job, job.samples)
            cursor += 1
        views = [JobState(r.job, r.remaining, r.attained, r.option) for r in active.values()]
        started = time.perf_counter()
        decision = dict(policy.decide(now, views, machines))
        spent += time.perf_counter() - started
        decisions += 1
        _check(decision, active, cap)
        for job_id, run in active.items():
            new = decision.get(job_id)
            if new != run.option and new is not None and run.has_run:
                run.stalled_until = now + restart_s
                run.restarts += 1
            run.option = new
            if new is not None:
                run.has_run = True
        placed = {i: (r.job, r.option) for i, r in active.items() if r.option is not None}
        seconds = iteration_times(placed, machines)
        rates = {i: placed[i][1].w * placed[i][0].batch / seconds[i] for i in placed}
        horizon = [pending[cursor].arrival] if cursor < len(pending) else []
        horizon += [
            max(now, active[i].stalled_until) + active[i].remaining / r for i, r in rates.items()
        ]
        if policy.interval is not None and rates:
            horizon.append(now + policy.interval)
        if not horizon:
            raise RuntimeError(f"policy {policy.name!r} left every waiting job unplaced at {now}")
        until = min(horizon)
        for job_id, rate in rates.items():
            run = active[job_id]
            working = max(0.0, until - max(now, run.stalled_until))
            run.remaining -= working * rate
            run.attained += (until - now) * run.option.w if run.option else 0.0
            if run.remaining <= 1e-9 * run.job.samples:
                finish[job_id] = until
                restarts[job_id] = run.restarts
        for job_id in finish.keys() & active.keys():
            del active[job_id]
        now = until
    outcomes = tuple(
        JobOutcome(
            j.job_id,
            j.network.name,
            j.arrival,
            j.samples,
            j.requested_workers,
            j.requested_servers,
            finish.get(j.job_id),
            finish[j.job_id] - j.arrival if j.job_id in finish else None,
            restarts.get(j.job_id, 0),
            reasons[j.job_id],
        )
        for j in jobs
    )
    return SimResult(policy.name, outcomes, decisions, spent)


def _reason(job: PsJob, machines: Sequence[Machine]) -> str | None:
    reason = infeasibility(job, machines)
    if reason is not None:
        return reason
    if not fits_somewhere(job, 1, 1, machines):
        return "one worker and one PS do not fit together on the machines"
    if not fits_somewhere(job, job.requested_workers, job.requested_servers, machines):
        return (
            f"the requested {job.requested_workers} workers and {job.requested_servers} PS "
            f"do not fit on the empty machines"
        )
    return None


def _check(decision: dict[str, Option], active: dict[str, _Running], cap: np.ndarray) -> None:
    used = np.zeros_like(cap)
    for job_id, option in decision.items():
        if job_id not in active:
            raise RuntimeError(f"policy placed unknown or finished job {job_id!r}")
        used += usage(active[job_id].job, option)
    if np.any(used > cap + 1e-6):
        raise RuntimeError("policy over-committed a machine")
