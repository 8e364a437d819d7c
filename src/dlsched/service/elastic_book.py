"""What the live service keeps about elastic jobs beside the job store.

An elastic job carries its profiled application (the performance model the elastic policies
use), the most GPUs it may get and its per-GPU batch; each launch of it records the batch it was
started with. These live in two tables of the store's own SQLite file (``elastic_jobs``,
``elastic_attempts``), written through a second connection, so the job store's schema is
unchanged and a restarted service finds them again.

Contracts:
- A job's spec is written once, right after the job is stored; :meth:`ElasticBook.spec`
  returns None for a job stored without one (the service stopped between the two writes).
- An attempt's batch is written *before* the attempt is marked started, so a launch, or a
  relaunch after a crash, always finds the batch it must run with.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from dlsched.elastic.perfbook import check_application

_SCHEMA = """
CREATE TABLE IF NOT EXISTS elastic_jobs (
    seq INTEGER PRIMARY KEY,
    application TEXT NOT NULL,
    max_gpus INTEGER NOT NULL,
    batch_size INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS elastic_attempts (
    seq INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    gpus INTEGER NOT NULL,
    batch_size INTEGER NOT NULL,
    PRIMARY KEY (seq, attempt)
);
"""


@dataclass(frozen=True, slots=True)
class ElasticSpec:
    """An elastic job's submission: ``application`` is a profiled application
    (:data:`dlsched.perf.profiles.APPLICATIONS`) whose models stand for the job; ``max_gpus``
    bounds its GPUs; ``batch_size`` is its per-GPU batch at the requested GPU count (the
    requested global batch is ``batch_size`` × requested GPUs)."""

    application: str
    max_gpus: int
    batch_size: int

    def check(self, gpus: int) -> None:
        """ValueError naming the field unless the spec is usable for a job of ``gpus`` GPUs."""
        try:
            check_application(self.application)
        except ValueError as e:
            raise ValueError(f"application: {e}") from None
        if self.max_gpus < gpus:
            raise ValueError(f"max_gpus: {self.max_gpus} is below the requested gpus ({gpus})")
        if self.batch_size < 1:
            raise ValueError(f"batch_size: must be >= 1, got {self.batch_size}")


@dataclass(frozen=True, slots=True)
class AttemptSize:
    """The GPUs and per-GPU batch one launch of an elastic job runs with."""

    gpus: int
    batch_size: int


class ElasticBook:
    """The elastic tables of the store file at ``path`` (module docstring). Thread-safe."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=30.0
        )
        self._db.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            self._db.executescript(_SCHEMA)
        self._specs: dict[int, ElasticSpec] = {}

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def add(self, seq: int, spec: ElasticSpec) -> None:
        """Record job ``seq``'s spec (a second write for the same job is ignored)."""
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO elastic_jobs VALUES (?, ?, ?, ?)",
                (seq, spec.application, spec.max_gpus, spec.batch_size),
            )

    def spec(self, seq: int) -> ElasticSpec | None:
        """Job ``seq``'s spec, or None if it has none."""
        found = self._specs.get(seq)
        if found is not None:
            return found
        with self._lock:
            r = self._db.execute(
                "SELECT application, max_gpus, batch_size FROM elastic_jobs WHERE seq=?", (seq,)
            ).fetchone()
        if r is None:
            return None
        found = self._specs[seq] = ElasticSpec(r[0], r[1], r[2])
        return found

    def set_attempt(self, seq: int, attempt: int, size: AttemptSize) -> None:
        """Record the size attempt ``attempt`` of job ``seq`` starts with (replacing an earlier
        record of the same attempt, which never launched)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO elastic_attempts VALUES (?, ?, ?, ?)",
                (seq, attempt, size.gpus, size.batch_size),
            )

    def attempt(self, seq: int, attempt: int) -> AttemptSize | None:
        """The size attempt ``attempt`` of job ``seq`` was started with, or None."""
        with self._lock:
            r = self._db.execute(
                "SELECT gpus, batch_size FROM elastic_attempts WHERE seq=? AND attempt=?",
                (seq, attempt),
            ).fetchone()
        return None if r is None else AttemptSize(r[0], r[1])
