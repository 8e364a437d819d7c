"""Shared pieces of the service tests: a controllable clock and a controller on the fake
back end, driven from event to event."""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from dlsched.backends.fake import FakeBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.registry import create_policy
from dlsched.service.control.controller import Controller
from dlsched.service.server import Service, ServiceConfig, bind
from dlsched.service.store.database import Store
from dlsched.service.store.records import FINAL, PREEMPTING, NewJob


class Clock:
    """A clock that moves only when told."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Harness:
    clock: Clock
    store: Store
    backend: FakeBackend
    controller: Controller

    def submit(self, name: str, gpus: int, duration: float, user: str = "u") -> int:
        row = self.store.submit(
            NewJob(name, user, gpus, ("sleep", str(duration)), expected_duration_s=duration),
            self.clock(),
        )
        return row.seq

    def run(
        self,
        arrivals: list[tuple[float, str, int, float]] = (),  # type: ignore[assignment]
        max_steps: int = 10_000,
        round_s: float = 60.0,
    ) -> dict[str, int]:
        """Submit ``(time, name, gpus, duration)`` arrivals at their times and step at every
        arrival, back-end event, wake-up and round until no job is active. Returns the job
        seq of each name."""
        pending = sorted(arrivals)
        seqs: dict[str, int] = {}
        steps = 0
        while True:
            while pending and pending[0][0] <= self.clock.now:
                _, name, gpus, duration = pending.pop(0)
                seqs[name] = self.submit(name, gpus, duration)
            self.controller.step()
            # A preempted fake job exits at once (checkpoint_s=0): settle it at this instant.
            while any(r.state == PREEMPTING for r in self.store.holding()):
                self.controller.step()
                steps += 1
                assert steps < max_steps, "a preempted job never stopped"
            if not pending and not self.store.active():
                return seqs
            candidates = [self.clock.now + round_s]
            nxt = self.backend.next_event_time()
            if nxt is not None:
                candidates.append(nxt)
            wake = self.controller.wake_at
            if wake is not None and wake > self.clock.now:
                candidates.append(wake)
            if pending:
                candidates.append(pending[0][0])
            self.clock.now = min(candidates)
            steps += 1
            assert steps < max_steps, "the control loop made no progress"

    def run_until_idle(self) -> None:
        self.run([])


def make_harness(
    tmp: Path, policy: str = "fifo", cluster: str = "2x4", grace_s: float = 30.0, **fake: object
) -> Harness:
    clock = Clock()
    store = Store(tmp / "state.db")
    backend = FakeBackend(clock, **fake)  # type: ignore[arg-type]
    ctl = Controller(
        store,
        backend,
        resolve_cluster(cluster),
        create_policy(policy),
        clock=clock,
        grace_s=grace_s,
    )
    return Harness(clock, store, backend, ctl)


def all_final(store: Store) -> bool:
    return all(r.state in FINAL for r in store.jobs())


def run_beside(db: str, statements: list[tuple[str, tuple[object, ...]]]) -> None:
    """Run ``statements`` (``?`` placeholders) in one committed transaction on the store
    database ``db`` (a SQLite path or a ``postgresql://`` URL) beside any store, to tamper with
    it; a statement's error is raised and nothing is committed."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as pg:
            for sql, args in statements:
                pg.execute(sql.replace("?", "%s"), args)
        return
    lite = sqlite3.connect(db)
    try:
        for sql, args in statements:
            lite.execute(sql, args)
        lite.commit()
    finally:
        lite.close()


def check_no_double_booking(backend: FakeBackend) -> None:
    """Assert that no GPU was held by two runs of ``backend`` at once (from its run history)."""
    cells: dict[tuple[str, int], list[tuple[float, float, str]]] = {}
    for run in backend.history:
        for node, gpus in run.request.gpu_ids.items():
            for g in gpus:
                cells.setdefault((node, g), []).append((run.begin, run.end, run.request.request_id))
    for cell, spans in cells.items():
        spans.sort()
        for (_, e1, r1), (b2, _, r2) in itertools.pairwise(spans):
            assert e1 <= b2, f"GPU {cell} held by {r1} until {e1} and by {r2} from {b2}"


@contextmanager
def serving(config: ServiceConfig) -> Iterator[tuple[str, Service]]:
    """Run ``config``'s service with its control loop and a real uvicorn server on a free
    loopback port; yield the base URL and the service, and stop both on exit."""
    service = Service(config)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(service.app, log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    service.start()
    thread.start()
    try:
        while not srv.started:
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}", service
    finally:
        srv.should_exit = True
        thread.join(10)
        service.stop()
        sock.close()
