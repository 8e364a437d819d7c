"""The Helios history estimator (seeds.md 1.3): a job runs about as long as the finished jobs
with similar names, preferably the same user's with the same GPU count.

For a job of user ``u``, name ``x`` and ``g`` GPUs, with ``S`` the up-to-2 known names similar to
``x`` (:mod:`dlsched.perf.duration.similarity`: ``x`` itself when known, else the best names with
SequenceMatcher ratio ≥ 0.6), the estimate is the mean duration of the first non-empty group:

====================  ============================================================
source                jobs averaged
====================  ============================================================
``user-name-gpu``     ``u``'s finished jobs with a name in ``S`` and ``g`` GPUs
``user-name``         ``u``'s finished jobs with a name in ``S``
``name``              all users' finished jobs with a name in ``S``
``user``              ``u``'s finished jobs (no similar name)
``global``            all finished jobs (unknown user, or no user/name in the trace)
``prior``             none finished yet: the constant ``no_history_s``
====================  ============================================================

A job without a name skips the name groups; a job without a user skips the user groups.
The first four sources count as a match for coverage (``last_matched``); ``global`` and ``prior``
do not. Every ``observe``\\ d job joins the history at once. Estimates are floored at
``min_estimate_s`` so they stay positive.

``no_history_s`` defaults to 6,652 s: the mean run time of GPU jobs over the four Helios clusters
(HeliosData ``cluster_summary.csv``, row ``total``), the figure the global mean tends to on
Helios-like traces. It only answers until the first job finishes.

Every lookup is a dictionary access: running (sum, count) per user, per name, per (user, name)
and per (user, name, GPUs), plus the similar-name index; nothing scans the history.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from dlsched.perf.duration.base import DurationEstimator
from dlsched.perf.duration.similarity import SimilarNames
from dlsched.trace.schema import Trace

NO_HISTORY_S = 6652.0
MATCH_SOURCES = frozenset({"user-name-gpu", "user-name", "name", "user"})
K = TypeVar("K")


class HistoryEstimator(DurationEstimator):
    """Mean duration of similar past jobs, with the fallbacks of the module docstring.

    ``cutoff``, ``max_matches``, ``q``, ``posting_limit``, ``candidate_limit`` and
    ``variant_limit`` configure the similar-name search
    (:class:`~dlsched.perf.duration.similarity.SimilarNames`). The estimator is deterministic;
    ``seed`` is accepted for the common constructor and unused.
    """

    name: ClassVar[str] = "history"

    def __init__(
        self,
        seed: int = 0,
        *,
        cutoff: float = 0.6,
        max_matches: int = 2,
        q: int = 3,
        posting_limit: int | None = 32,
        candidate_limit: int | None = 16,
        variant_limit: int | None = 32,
        no_history_s: float = NO_HISTORY_S,
        min_estimate_s: float = 1.0,
    ) -> None:
        if no_history_s <= 0 or min_estimate_s <= 0:
            raise ValueError("no_history_s and min_estimate_s must be > 0")
        self.seed = seed
        self.no_history_s = no_history_s
        self.min_estimate_s = min_estimate_s
        self._index_options: dict[str, Any] = {
            "q": q,
            "posting_limit": posting_limit,
            "candidate_limit": candidate_limit,
            "variant_limit": variant_limit,
            "cutoff": cutoff,
            "max_matches": max_matches,
        }
        self.last_source = "prior"
        self.last_matched = False
        self._reset()

    def _reset(self) -> None:
        self.names = SimilarNames(**self._index_options)
        self._users: list[str | None] = []
        self._jobnames: list[str | None] = []
        self._gpus: list[int] = []
        # Running [sum, count] of durations per group.
        self._total = [0.0, 0]
        self._by_user: dict[str, list[float]] = {}
        self._by_name: dict[str, list[float]] = {}
        self._by_user_name: dict[tuple[str, str], list[float]] = {}
        self._by_user_name_gpu: dict[tuple[str, str, int], list[float]] = {}

    def bind(self, trace: Trace) -> None:
        """Read the user, name and GPU columns; forget any earlier history."""
        self._reset()
        self._users = trace.column("user").to_pylist()
        self._jobnames = trace.column("job_name").to_pylist()
        self._gpus = trace.column("num_gpus").to_pylist()

    def observe(self, row: int, duration: float, now: float) -> None:
        """Add the finished job ``row`` (``duration`` seconds) to every group it belongs to."""
        user, jobname, gpus = self._users[row], self._jobnames[row], self._gpus[row]
        _add(self._total, duration)
        if user is not None:
            _add_to(self._by_user, user, duration)
        if jobname is not None:
            self.names.add(jobname)
            _add_to(self._by_name, jobname, duration)
            if user is not None:
                _add_to(self._by_user_name, (user, jobname), duration)
                _add_to(self._by_user_name_gpu, (user, jobname, gpus), duration)

    def estimate(self, row: int, now: float) -> float:
        """Mean duration of the first non-empty group (module docstring); sets ``last_source``."""
        value, source = self._lookup(self._users[row], self._jobnames[row], self._gpus[row])
        self.last_source = source
        self.last_matched = source in MATCH_SOURCES
        return max(value, self.min_estimate_s)

    def _lookup(self, user: str | None, jobname: str | None, gpus: int) -> tuple[float, str]:
        if jobname is not None:
            similar = self.names.similar(jobname)
            if similar:
                if user is not None:
                    mean = _mean(self._by_user_name_gpu, [(user, n, gpus) for n in similar])
                    if mean is not None:
                        return mean, "user-name-gpu"
                    mean = _mean(self._by_user_name, [(user, n) for n in similar])
                    if mean is not None:
                        return mean, "user-name"
                mean = _mean(self._by_name, list(similar))
                if mean is not None:
                    return mean, "name"
        if user is not None:
            stats = self._by_user.get(user)
            if stats is not None:
                return stats[0] / stats[1], "user"
        if self._total[1]:
            return self._total[0] / self._total[1], "global"
        return self.no_history_s, "prior"


def _add(stats: list[float], duration: float) -> None:
    stats[0] += duration
    stats[1] += 1


def _add_to(groups: dict[K, list[float]], key: K, duration: float) -> None:
    stats = groups.get(key)
    if stats is None:
        groups[key] = [duration, 1]
    else:
        stats[0] += duration
        stats[1] += 1


def _mean(groups: dict[K, list[float]], keys: list[K]) -> float | None:
    """Mean duration over the union of the groups ``keys`` (None if all are empty)."""
    total, count = 0.0, 0.0
    for key in keys:
        stats = groups.get(key)
        if stats is not None:
            total += stats[0]
            count += stats[1]
    return total / count if count else None
