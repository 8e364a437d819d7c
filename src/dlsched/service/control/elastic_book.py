"""What the live service keeps about elastic jobs beside the job store.

An elastic job carries its profiled application (the performance model the elastic policies
use), the most GPUs it may get and its per-GPU batch; each launch of it records the batch it was
started with. These live in two side tables of the job store (``elastic_jobs``,
``elastic_attempts``, created with the store's schema), written through the store's own
connection, so they work on SQLite and PostgreSQL alike and a restarted service finds them again.

Contracts:
- A job's spec is written once, right after the job is stored; :meth:`ElasticBook.spec`
  returns None for a job stored without one (the service stopped between the two writes).
- An attempt's batch is written *before* the attempt is marked started, so a launch, or a
  relaunch after a crash, always finds the batch it must run with. It is recorded under the
  service that starts the attempt: services sharing a database that race to start the same
  attempt each record their own size, and the attempt reads the size of the one that won.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from dlsched.perf.perfbook import check_application
from dlsched.service.store.database import Store


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
    """The elastic tables of ``store`` (module docstring). Thread-safe."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._specs: dict[int, ElasticSpec] = {}

    def add(self, seq: int, spec: ElasticSpec) -> None:
        """Record job ``seq``'s spec (a second write for the same job is ignored)."""
        self._store.write(
            "INSERT INTO elastic_jobs (seq, application, max_gpus, batch_size) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (seq) DO NOTHING",
            (seq, spec.application, spec.max_gpus, spec.batch_size),
        )

    def spec(self, seq: int) -> ElasticSpec | None:
        """Job ``seq``'s spec, or None if it has none."""
        with self._lock:
            found = self._specs.get(seq)
        if found is not None:
            return found
        r = self._store.read_one(
            "SELECT application, max_gpus, batch_size FROM elastic_jobs WHERE seq=?", (seq,)
        )
        if r is None:
            return None
        found = ElasticSpec(r[0], r[1], r[2])
        with self._lock:
            self._specs[seq] = found
        return found

    def set_attempt(self, seq: int, attempt: int, owner: str, size: AttemptSize) -> None:
        """Record the size attempt ``attempt`` of job ``seq`` starts with if service ``owner``
        starts it (replacing an earlier record of the same, which never launched)."""
        self._store.write(
            "INSERT INTO elastic_attempts (seq, attempt, owner, gpus, batch_size) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (seq, attempt, owner) DO UPDATE SET "
            "gpus=excluded.gpus, batch_size=excluded.batch_size",
            (seq, attempt, owner, size.gpus, size.batch_size),
        )

    def attempt(self, seq: int, attempt: int, owner: str | None) -> AttemptSize | None:
        """The size attempt ``attempt`` of job ``seq``, started by service ``owner``, was
        started with, or None."""
        if owner is None:
            return None
        r = self._store.read_one(
            "SELECT gpus, batch_size FROM elastic_attempts WHERE seq=? AND attempt=? AND owner=?",
            (seq, attempt, owner),
        )
        return None if r is None else AttemptSize(r[0], r[1])
