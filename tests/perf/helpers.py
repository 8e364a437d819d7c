"""Small traces and reference implementations shared by the duration-estimator tests."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from dlsched.trace.schema import Trace


@dataclass(frozen=True)
class Job:
    user: str | None
    name: str | None
    gpus: int
    duration: float


def trace_of(jobs: Sequence[Job], gap: float = 10.0) -> Trace:
    """One job every ``gap`` seconds, in the given order."""
    return Trace.from_columns(
        {
            "job_id": [str(i) for i in range(len(jobs))],
            "submit_time": [i * gap for i in range(len(jobs))],
            "num_gpus": [j.gpus for j in jobs],
            "duration": [j.duration for j in jobs],
            "user": [j.user for j in jobs],
            "job_name": [j.name for j in jobs],
        },
        source="test",
    )


def _mean(jobs: list[Job]) -> float:
    return sum(j.duration for j in jobs) / len(jobs)


def reference_history(history: Sequence[Job], job: Job, no_history_s: float) -> tuple[float, str]:
    """seeds.md 1.3 by full scan of the history (the artifact's logic, get_close_matches)."""
    names = list(dict.fromkeys(h.name for h in history if h.name is not None))
    if job.name is not None:
        if job.name in names:
            similar = [job.name]
        else:
            similar = difflib.get_close_matches(job.name, names, n=2, cutoff=0.6)
        if similar:
            if job.user is not None:
                mine = [h for h in history if h.user == job.user and h.name in similar]
                same_gpus = [h for h in mine if h.gpus == job.gpus]
                if same_gpus:
                    return _mean(same_gpus), "user-name-gpu"
                if mine:
                    return _mean(mine), "user-name"
            anyone = [h for h in history if h.name in similar]
            if anyone:
                return _mean(anyone), "name"
    if job.user is not None:
        mine = [h for h in history if h.user == job.user]
        if mine:
            return _mean(mine), "user"
    if history:
        return _mean(list(history)), "global"
    return no_history_s, "prior"
