"""Job features for the learned duration estimator: vocabularies fitted on the training window,
per-job static features, and running per-user/per-name statistics of finished jobs.

The feature vector (:data:`COLUMNS`, then one indicator per top name token):

* ``user``, ``vc``, ``template``: categorical codes from the training window's vocabularies
  (NaN = absent or unseen). A name's template is its lower-cased text with digit runs replaced
  by ``#`` (``train_resnet_lr0.01`` → ``train_resnet_lr#.#``), which groups numeric variants.
* ``gpus``, ``cpus``: the request (``cpus`` NaN when the trace lacks it).
* ``hour``, ``weekday``: UTC hour of day and day of week (Monday = 0) of the submission, from
  ``origin_unix + submit_time``; NaN when the trace has no wall-clock origin.
* ``user_n``, ``user_mean``, ``user_recent``, ``user_last``: the user's finished-job count, mean
  log duration, median log duration of the last :data:`RECENT` finished jobs, and the last one;
  ``name_n``, ``name_mean``: count and mean log duration of finished jobs with the same name;
  ``user_name_mean``: the same for the user's own jobs with that name. Only jobs finished before
  the submission count (NaN means none), so a job's own duration never leaks into its features.
* ``tok_<token>``: 1 if the name contains the token (lower-cased letter or digit runs), for the
  ``top_tokens`` most frequent tokens of the training names.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

COLUMNS = (
    "user",
    "vc",
    "template",
    "gpus",
    "cpus",
    "hour",
    "weekday",
    "user_n",
    "user_mean",
    "user_recent",
    "user_last",
    "name_n",
    "name_mean",
    "user_name_mean",
)
CATEGORICAL = ("user", "vc", "template")
RECENT = 16
_TOKEN = re.compile(r"[a-z]+|\d+")
_DIGITS = re.compile(r"\d+")
NAN = math.nan
K = TypeVar("K")


def name_tokens(name: str) -> tuple[str, ...]:
    """The distinct lower-cased letter runs and digit runs of ``name``, in order."""
    return tuple(dict.fromkeys(_TOKEN.findall(name.lower())))


def name_template(name: str) -> str:
    """``name`` lower-cased with every digit run replaced by ``#``."""
    return _DIGITS.sub("#", name.lower())


@dataclass(frozen=True)
class Vocabulary:
    """Codes 0..n-1 for the most frequent values (ties: first seen first)."""

    codes: dict[str, int]

    @classmethod
    def fit(cls, values: Iterable[str | None], max_size: int | None = None) -> Vocabulary:
        counts = Counter(v for v in values if v is not None)
        ranked = sorted(counts, key=lambda v: -counts[v])  # stable: keeps first-seen order
        return cls({v: i for i, v in enumerate(ranked[:max_size])})

    def code(self, value: str | None) -> float:
        """The value's code as a float; NaN when absent or not in the vocabulary."""
        if value is None:
            return NAN
        code = self.codes.get(value)
        return NAN if code is None else float(code)


class RunningStats:
    """Per-user and per-name statistics of finished jobs' log durations (module docstring)."""

    def __init__(self) -> None:
        # user -> ([count, sum of logs, last log], the last RECENT logs)
        self._user: dict[str, tuple[list[float], deque[float]]] = {}
        self._name: dict[str, list[float]] = {}
        self._user_name: dict[tuple[str, str], list[float]] = {}

    def add(self, user: str | None, name: str | None, log_duration: float) -> None:
        """Record one finished job."""
        if user is not None:
            entry = self._user.get(user)
            if entry is None:
                entry = self._user[user] = ([0.0, 0.0, 0.0], deque(maxlen=RECENT))
            sums, recent = entry
            sums[0] += 1
            sums[1] += log_duration
            sums[2] = log_duration
            recent.append(log_duration)
        if name is not None:
            _accumulate(self._name, name, log_duration)
            if user is not None:
                _accumulate(self._user_name, (user, name), log_duration)

    def fill(self, out: np.ndarray, user: str | None, name: str | None) -> None:
        """Write the seven statistics columns (``user_n`` … ``user_name_mean``) into ``out``."""
        entry = self._user.get(user) if user is not None else None
        if entry is None:
            out[:4] = (0.0, NAN, NAN, NAN)
        else:
            sums, recent = entry
            out[:4] = (sums[0], sums[1] / sums[0], statistics.median(recent), sums[2])
        stats = self._name.get(name) if name is not None else None
        out[4:6] = (0.0, NAN) if stats is None else (stats[0], stats[1] / stats[0])
        both = self._user_name.get((user, name)) if user is not None and name is not None else None
        out[6] = NAN if both is None else both[1] / both[0]


def _accumulate(groups: dict[K, list[float]], key: K, value: float) -> None:
    stats = groups.get(key)
    if stats is None:
        groups[key] = [1.0, value]
    else:
        stats[0] += 1
        stats[1] += value


@dataclass(frozen=True)
class FeatureSpace:
    """The vocabularies and token columns fitted on the training jobs, and row assembly."""

    users: Vocabulary
    vcs: Vocabulary
    templates: Vocabulary
    tokens: Vocabulary
    origin_unix: float | None

    @classmethod
    def fit(
        cls,
        users: Sequence[str | None],
        vcs: Sequence[str | None],
        names: Sequence[str | None],
        origin_unix: float | None,
        top_tokens: int = 32,
        max_templates: int = 4096,
    ) -> FeatureSpace:
        """Vocabularies of the given (training) jobs' users, VCs, name templates and tokens."""
        known = [n for n in names if n is not None]
        return cls(
            Vocabulary.fit(users),
            Vocabulary.fit(vcs),
            Vocabulary.fit((name_template(n) for n in known), max_templates),
            Vocabulary.fit((t for n in known for t in name_tokens(n)), top_tokens),
            origin_unix,
        )

    @property
    def column_names(self) -> list[str]:
        by_code = sorted(self.tokens.codes, key=self.tokens.codes.__getitem__)
        return [*COLUMNS, *(f"tok_{t}" for t in by_code)]

    @property
    def width(self) -> int:
        return len(COLUMNS) + len(self.tokens.codes)

    def fill(
        self,
        out: np.ndarray,
        user: str | None,
        vc: str | None,
        name: str | None,
        gpus: int,
        cpus: float | None,
        submit: float,
        stats: RunningStats,
    ) -> None:
        """Write one job's feature vector into ``out`` (length :attr:`width`)."""
        out[0] = self.users.code(user)
        out[1] = self.vcs.code(vc)
        out[2] = NAN if name is None else self.templates.code(name_template(name))
        out[3] = gpus
        out[4] = NAN if cpus is None else cpus
        if self.origin_unix is None:
            out[5:7] = NAN
        else:
            wall = self.origin_unix + submit
            out[5] = (wall // 3600) % 24
            out[6] = (wall // 86400 + 3) % 7  # 1970-01-01 was a Thursday
        stats.fill(out[7 : len(COLUMNS)], user, name)
        out[len(COLUMNS) :] = 0.0
        if name is not None:
            base = len(COLUMNS)
            for token in name_tokens(name):
                code = self.tokens.codes.get(token)
                if code is not None:
                    out[base + code] = 1.0

    def known_identity(self, user: str | None, name: str | None) -> bool:
        """Whether the training window saw this job's user or its name template."""
        if user is not None and user in self.users.codes:
            return True
        return name is not None and name_template(name) in self.templates.codes
