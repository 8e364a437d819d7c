"""Several services on one store: each job runs exactly once across their back ends, and the
jobs of a service that stops renewing its lease are taken over by another after the lease.

Two controllers with fake back ends share one clock and one database (SQLite file or
PostgreSQL); each schedules its own cluster from the shared queue."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from dlsched.backends.fake import FakeBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.registry import create_policy
from dlsched.service.control.controller import Controller
from dlsched.service.control.elastic_book import AttemptSize, ElasticBook
from dlsched.service.store.database import SCHEMA_VERSION, Fenced, Store
from dlsched.service.store.records import (
    COMPLETED,
    ORPHAN_CHECK,
    PENDING,
    PREEMPTING,
    RUNNING,
    NewJob,
)
from dlsched.service.store.service_id import SERVICE_ID_FILE, check_service_id, resolve_service_id
from tests.service.helpers import Clock, run_beside

LEASE_S = 60.0
DURATION_S = 100.0


class Service:
    """One service of the test: its own store connection, fake back end and controller."""

    def __init__(self, db: str, clock: Clock, service_id: str, policy: str = "fifo") -> None:
        self.store = Store(db)
        self.backend = FakeBackend(clock)
        self.ctl = Controller(
            self.store,
            self.backend,
            resolve_cluster("1x4"),
            create_policy(policy),
            clock=clock,
            service_id=service_id,
            lease_s=LEASE_S,
        )

    def step(self) -> None:
        self.ctl.step()
        # A preempted fake job exits at once: settle it at this instant.
        for _ in range(10):
            if not any(
                r.state == PREEMPTING and r.owner == self.ctl.service_id
                for r in self.store.holding()
            ):
                return
            self.ctl.step()


def run(clock: Clock, services: list[Service], max_steps: int = 2000) -> None:
    """Step every service at every event (and every quarter lease) until no job is active."""
    store = services[0].store
    for _ in range(max_steps):
        for s in services:
            s.step()
        if not store.active():
            return
        events = [s.backend.next_event_time() for s in services]
        nxt = min((t for t in events if t is not None), default=math.inf)
        clock.now = min(clock.now + LEASE_S / 4, nxt)
    raise AssertionError("jobs never finished")


def submit(store: Store, clock: Clock, n: int, gpus: int = 2) -> list[int]:
    return [
        store.submit(
            NewJob(f"job{i}", "u", gpus, ("sleep", str(DURATION_S)), None, DURATION_S), clock()
        ).seq
        for i in range(n)
    ]


def finished_runs(services: list[Service]) -> Counter[str]:
    return Counter(
        r.request.job_id for s in services for r in s.backend.history if r.exit_code == 0
    )


def test_two_services_run_every_job_exactly_once(db_url: str) -> None:
    clock = Clock()
    a, b = Service(db_url, clock, "svc-a"), Service(db_url, clock, "svc-b")
    seqs = submit(a.store, clock, 8)
    run(clock, [a, b])
    launched = Counter(r.request.job_id for s in (a, b) for r in s.backend.history)
    assert launched == {f"j{seq}": 1 for seq in seqs}
    assert finished_runs([a, b]) == {f"j{seq}": 1 for seq in seqs}
    # Both clusters were used: each service started jobs of the shared queue.
    assert a.backend.history and b.backend.history
    for seq in seqs:
        row = a.store.get(seq)
        assert row is not None and row.state == COMPLETED and row.attempt == 1
        ran_on = a if any(r.request.job_id == row.id for r in a.backend.history) else b
        assert row.owner == ran_on.ctl.service_id


def test_a_dead_services_jobs_are_taken_over_after_its_lease(db_url: str) -> None:
    clock = Clock()
    a = Service(db_url, clock, "svc-a")
    seqs = submit(a.store, clock, 2)
    a.step()
    assert [r.owner for r in a.store.holding()] == ["svc-a", "svc-a"]
    # Service a dies now (it is never stepped again); b starts and runs beside its jobs.
    b = Service(db_url, clock, "svc-b")
    clock.now += LEASE_S / 2
    b.step()
    assert {r.seq: r.owner for r in b.store.holding()} == {seq: "svc-a" for seq in seqs}
    assert not b.backend.history, "b launched jobs a still holds under a live lease"
    clock.now += LEASE_S / 2 + 1
    b.step()
    assert b.ctl.taken_over == 2
    for seq in seqs:
        row = b.store.get(seq)
        assert row is not None and row.state == RUNNING and row.owner == "svc-b"
        assert row.restarts == 1 and row.attempt == 2
        checked = [d for _, k, d in b.store.events(seq) if k == "orphan_check"]
        assert checked == [
            {
                "attempt": 1,
                "reason": "service svc-a stopped renewing its lease",
                "taken_over_by": "svc-b",
            }
        ]
        # a's fake back end died with it (no peers): its attempt is gone, the job runs again.
        requeued = [d for _, k, d in b.store.events(seq) if k == "requeued"]
        assert requeued == [
            {
                "attempt": 1,
                "exit_code": None,
                "orphan": True,
                "reason": "its attempt under service svc-a never ran or was killed",
            }
        ]
    run(clock, [b])
    assert finished_runs([b]) == {f"j{seq}": 1 for seq in seqs}
    for seq in seqs:
        row = b.store.get(seq)
        assert row is not None and row.state == COMPLETED


def test_a_lease_is_judged_by_its_owners_length(db_url: str) -> None:
    clock = Clock()
    store = Store(db_url)
    (seq,) = submit(store, clock, 1)
    assert store.mark_started(seq, {"node-000": [0, 1]}, clock(), "svc-a") is not None
    store.renew_lease("svc-a", clock(), 10 * LEASE_S)
    assert store.lease_end("svc-a") == clock() + 10 * LEASE_S
    assert store.lease_end("svc-x") is None
    # b's own lease is shorter; a's jobs are a's until a's lease runs out.
    assert store.claim_lapsed("svc-b", clock() + 2 * LEASE_S) == []
    assert store.claim_lapsed("svc-b", clock() + 10 * LEASE_S + 1) == [seq]
    assert store.claim_lapsed("svc-c", clock() + 10 * LEASE_S + 1) == []


@pytest.mark.parametrize("lease", [0.0, -1.0, math.nan, math.inf])
def test_bad_leases_are_refused_naming_the_field(tmp_path: Path, lease: float) -> None:
    from dlsched.service.server import Service as LiveService
    from dlsched.service.server import ServiceConfig

    config = ServiceConfig(backend="fake", db=tmp_path / "s.db", lease_s=lease)
    with pytest.raises(ValueError, match=r"lease_s \(--lease\): must be a positive number"):
        LiveService(config)
    assert not (tmp_path / "s.db").exists()


def test_a_service_keeps_its_jobs_while_it_renews_its_lease(db_url: str) -> None:
    clock = Clock()
    a = Service(db_url, clock, "svc-a")
    b = Service(db_url, clock, "svc-b")
    seqs = submit(a.store, clock, 1, gpus=4)
    a.step()
    for _ in range(8):
        clock.now += LEASE_S / 4
        a.step()
        b.step()
    assert b.ctl.taken_over == 0
    row = a.store.get(seqs[0])
    assert row is not None and row.owner == "svc-a" and row.attempt == 1


def test_a_restarted_service_adopts_its_jobs_and_a_stopped_one_loses_them(db_url: str) -> None:
    clock = Clock()
    a = Service(db_url, clock, "svc-a")
    (seq,) = submit(a.store, clock, 1)
    a.step()
    # Restarted under the same id before its lease lapsed: the job stays its own.
    again = Controller(
        a.store,
        a.backend,
        resolve_cluster("1x4"),
        create_policy("fifo"),
        clock=clock,
        service_id="svc-a",
        lease_s=LEASE_S,
    )
    again.recover()
    again.step()
    assert a.backend.launches == 1
    row = a.store.get(seq)
    assert row is not None and row.owner == "svc-a" and row.state == RUNNING
    # Its job taken over meanwhile (lease lapsed): the taker waits for the attempt it can see
    # alive, and the service it took it from is fenced: it acts no more (nor stops the job).
    b = Service(db_url, clock, "svc-b")
    b.backend.peers.append(a.backend)
    clock.now += LEASE_S + 1
    b.step()
    row = b.store.get(seq)
    assert row is not None and row.owner == "svc-b" and row.state == ORPHAN_CHECK
    assert row.orphan_of == "svc-a"
    with pytest.raises(Fenced):
        again.step()
    with pytest.raises(Fenced):
        again.step()
    stopped = [r for r in a.backend.history if r.request.request_id == f"j{seq}.1"]
    assert [r.stop_at for r in stopped] == [math.inf]
    # The attempt ends by itself: the taker records its outcome and never runs it again.
    clock.now = a.backend.next_event_time() or clock.now
    b.step()
    row = b.store.get(seq)
    assert row is not None and row.state == COMPLETED and row.attempt == 1
    assert not b.backend.history


def test_an_upgraded_store_gives_running_jobs_to_its_instance(db_url: str) -> None:
    store = Store(db_url)
    (seq,) = submit(store, Clock(), 1)
    assert store.mark_started(seq, {"n0": [0, 1]}, 1001.0) is not None
    instance = store.instance
    store.close()
    # Back to the version 1 schema: no owner column, elastic sizes keyed by (seq, attempt).
    run_beside(
        db_url,
        [
            ("ALTER TABLE jobs DROP COLUMN owner", ()),
            ("ALTER TABLE jobs DROP COLUMN tenant", ()),
            ("ALTER TABLE jobs DROP COLUMN queue", ()),
            ("DROP TABLE elastic_attempts", ()),
            (
                "CREATE TABLE elastic_attempts (seq INTEGER NOT NULL, attempt INTEGER NOT NULL, "
                "gpus INTEGER NOT NULL, batch_size INTEGER NOT NULL, PRIMARY KEY (seq, attempt))",
                (),
            ),
            ("INSERT INTO elastic_attempts VALUES (?, 1, 2, 64)", (seq,)),
            ("UPDATE meta SET value='1' WHERE key='schema_version'", ()),
        ],
    )
    store = Store(db_url)
    assert store.schema_version == SCHEMA_VERSION
    row = store.get(seq)
    assert row is not None and row.owner == instance and row.state == RUNNING
    assert ElasticBook(store).attempt(seq, 1, row.owner) == AttemptSize(2, 64)
    store.close()
    again = Store(db_url)
    assert again.schema_version == SCHEMA_VERSION
    again.close()


def test_service_ids_are_kept_in_the_work_dir(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    first = resolve_service_id(None, tmp_path / "a", store, 1000.0, LEASE_S)
    assert first == store.instance
    assert resolve_service_id(None, tmp_path / "a", store, 1000.0, LEASE_S) == first
    second = resolve_service_id(None, tmp_path / "b", store, 1000.0, LEASE_S)
    assert second != first and check_service_id(second) == second
    assert resolve_service_id("gpu-rack-2", tmp_path / "c", store, 1000.0, LEASE_S) == "gpu-rack-2"
    assert (tmp_path / "c" / SERVICE_ID_FILE).read_text().strip() == "gpu-rack-2"
    with pytest.raises(ValueError, match=r"service_id \(--service-id\): 'a b'"):
        resolve_service_id("a b", tmp_path / "d", store, 1000.0, LEASE_S)
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / SERVICE_ID_FILE).write_text("\n")
    with pytest.raises(ValueError, match=SERVICE_ID_FILE):
        resolve_service_id(None, tmp_path / "e", store, 1000.0, LEASE_S)


def test_racing_services_each_read_the_elastic_size_of_their_own_start(db_url: str) -> None:
    store = Store(db_url)
    (seq,) = submit(store, Clock(), 1)
    book = ElasticBook(store)
    book.set_attempt(seq, 1, "svc-a", AttemptSize(2, 32))
    book.set_attempt(seq, 1, "svc-b", AttemptSize(4, 16))
    won = store.mark_started(seq, {"n0": [0, 1]}, 1001.0, "svc-a")
    assert won is not None and won.owner == "svc-a"
    assert store.mark_started(seq, {"n0": [0, 1, 2, 3]}, 1001.0, "svc-b") is None
    assert book.attempt(seq, 1, won.owner) == AttemptSize(2, 32)
    assert book.attempt(seq, 1, None) is None


def test_pending_jobs_have_no_owner(db_url: str) -> None:
    store = Store(db_url)
    (seq,) = submit(store, Clock(), 1)
    row = store.get(seq)
    assert row is not None and row.state == PENDING and row.owner is None


def test_the_cluster_view_shows_only_this_services_jobs(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from dlsched.service.api.app import ServiceContext, create_app

    clock = Clock()
    db = str(tmp_path / "state.db")
    a, b = Service(db, clock, "svc-a"), Service(db, clock, "svc-b")
    (seq,) = submit(a.store, clock, 1)
    a.step()

    def held(service: Service) -> list[str | None]:
        ctx = ServiceContext(service.store, service.ctl, lambda: None, clock, "t" * 32, "fifo")
        with TestClient(create_app(ctx, None), base_url="http://localhost") as client:
            nodes = client.get("/cluster").json()["nodes"]
        return [g["job_id"] for n in nodes for g in n["gpus"]]

    assert held(a).count(f"j{seq}") == 2
    assert held(b) == [None] * 4


def test_two_running_services_on_one_database_get_their_own_ids(
    db_url: str, tmp_path: Path
) -> None:
    """Two whole services (control loops on threads, fake back ends), configured alike but for
    their work directories: distinct ids, and each job runs once across both."""
    import time

    from dlsched.service.server import Service as LiveService
    from dlsched.service.server import ServiceConfig

    def config(name: str) -> ServiceConfig:
        return ServiceConfig(
            cluster="1x4",
            backend="fake",
            db=db_url,
            token_file=tmp_path / "token",
            work_dir=tmp_path / name,
            round_s=0.1,
            poll_s=0.02,
        )

    first, second = LiveService(config("a")), LiveService(config("b"))
    try:
        assert first.service_id == first.store.instance
        assert second.service_id not in ("", first.service_id)
        assert (tmp_path / "b" / SERVICE_ID_FILE).read_text().strip() == second.service_id
        seqs = [
            first.store.submit(
                NewJob(f"j{i}", "u", 2, ("sleep", "0.2"), None, 0.2), time.time()
            ).seq
            for i in range(6)
        ]
        first.start()
        second.start()
        deadline = time.monotonic() + 60
        while first.store.active() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not first.store.active(), "jobs never finished"
    finally:
        first.stop()
        second.stop()
    backends = [first.backend, second.backend]
    assert all(isinstance(be, FakeBackend) for be in backends)
    launched = Counter(
        r.request.job_id for be in backends if isinstance(be, FakeBackend) for r in be.history
    )
    assert launched == {f"j{seq}": 1 for seq in seqs}


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--service-id", "a b", "service_id (--service-id): 'a b' is not a service id"),
        ("--lease", "0", "lease_s (--lease): must be a positive number of seconds"),
    ],
)
def test_serve_refuses_a_bad_service_id_or_lease(
    tmp_path: Path, option: str, value: str, message: str
) -> None:
    from typer.testing import CliRunner

    from dlsched.cli.main import app

    result = CliRunner().invoke(
        app,
        [
            "serve",
            "--port",
            "0",
            "--backend",
            "fake",
            "--db",
            str(tmp_path / "s.db"),
            "--work-dir",
            str(tmp_path / "jobs"),
            option,
            value,
        ],
    )
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "jobs" / SERVICE_ID_FILE).exists()
