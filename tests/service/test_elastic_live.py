"""Elastic policies driven live on the fake back end with a controllable clock: a job is resized
through the preemption protocol (stopped once, relaunched with the new GPU count and batch),
GPUs are never held twice, measured throughputs reach the policy, and submissions are checked."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dlsched.backends.base import LaunchRequest
from dlsched.backends.fake import FakeBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.registry import elastic_policies
from dlsched.elastic.types import Allocation, ClusterView
from dlsched.service.api.app import ServiceContext, create_app
from dlsched.service.api.auth import load_or_create_token
from dlsched.service.control.controller import Controller
from dlsched.service.control.elastic_book import ElasticSpec
from dlsched.service.control.elastic_planning import ElasticPlanning
from dlsched.service.control.elastic_setup import (
    build_controller,
    create_service_policy,
    elastic_name,
)
from dlsched.service.control.planning import OrderingPlanning
from dlsched.service.store.database import Store
from dlsched.service.store.records import COMPLETED, PREEMPTING, NewJob
from tests.service.helpers import Clock, check_no_double_booking

DURATION_S = 1800.0
TOTAL_SAMPLES = 90_000
RATE_PER_GPU = 50.0


def report(clock: Clock, scaling: bool = True) -> Any:
    """The status a fake training job reports: its share of work done, and a throughput of
    ``RATE_PER_GPU`` per GPU (so the policy can tell sizes apart), or with ``scaling=False``
    ``RATE_PER_GPU`` whatever its GPUs (a job that does not speed up)."""

    def status(request: LaunchRequest, worked_s: float) -> Mapping[str, Any]:
        fraction = min(worked_s / DURATION_S, 1.0)
        return {
            "progress": fraction,
            "samples": round(fraction * TOTAL_SAMPLES),
            "total_samples": TOTAL_SAMPLES,
            "samples_per_s": RATE_PER_GPU * (request.num_gpus if scaling else 1),
            "num_gpus": request.num_gpus,
            "batch_size": request.batch_size,
            "time": clock(),
            "state": "running",
        }

    return status


class Live:
    def __init__(
        self,
        tmp: Path,
        policy: str,
        cluster: str = "1x4",
        db: str | None = None,
        scaling: bool = True,
    ) -> None:
        self.clock = Clock()
        self.store = Store(db or tmp / "state.db")
        self.backend = FakeBackend(self.clock, status_of=report(self.clock, scaling))
        ctl = build_controller(
            create_service_policy(policy, {}),
            self.store,
            self.backend,
            resolve_cluster(cluster),
            clock=self.clock,
        )
        assert isinstance(ctl.planning, ElasticPlanning)
        self.ctl = ctl
        self.planning = ctl.planning
        self.terminations: list[str] = []
        terminate = self.backend.terminate

        def counted(request_id: str, grace_s: float) -> None:
            if self.backend.runs.get(request_id) is not None:
                self.terminations.append(request_id)
            terminate(request_id, grace_s)

        self.backend.terminate = counted  # type: ignore[method-assign]

    def submit(self, name: str, gpus: int = 1, max_gpus: int = 4, batch: int = 64) -> int:
        spec = ElasticSpec("cifar10", max_gpus, batch)
        assert self.ctl.submission_problem(gpus, spec) is None
        row = self.store.submit(
            NewJob(name, "u", gpus, ("sleep", str(DURATION_S)), batch, DURATION_S), self.clock()
        )
        self.ctl.submitted(row.seq, spec)
        return row.seq

    def run(self, round_s: float = 60.0, max_rounds: int = 500) -> None:
        for _ in range(max_rounds):
            self.ctl.step()
            # A stopped fake job exits at once (checkpoint_s=0): settle it at this instant.
            for _ in range(10):
                if not any(r.state == PREEMPTING for r in self.store.holding()):
                    break
                self.ctl.step()
            if not self.store.active():
                return
            nxt = self.backend.next_event_time()
            self.clock.now = min(self.clock.now + round_s, nxt or float("inf"))
        raise AssertionError("jobs never finished")


def runs_of(live: Live, job_id: str) -> list[Any]:
    return [r for r in live.backend.history if r.request.job_id == job_id]


@pytest.mark.parametrize("policy", ["pollux", "ones"])
def test_an_elastic_policy_resizes_a_running_job(tmp_path: Path, policy: str, db_url: str) -> None:
    live = Live(tmp_path, policy, db=db_url)
    seq = live.submit("grow")
    live.run()
    runs = runs_of(live, f"j{seq}")
    sizes = [(r.request.num_gpus, r.request.batch_size) for r in runs]
    assert len(runs) >= 2, sizes
    assert runs[0].request.num_gpus == 1
    assert max(n for n, _ in sizes) > 1, sizes
    for before, after in itertools.pairwise(runs):
        # Each resize: the old run was stopped (checkpoint exit 75) before the new one began,
        # and the new one runs with a new GPU count and the batch recorded for it.
        assert before.exit_code == 75 and before.end <= after.begin
        assert before.request.num_gpus != after.request.num_gpus
        size = live.planning.book.attempt(
            seq, int(after.request.request_id.split(".")[1]), live.ctl.service_id
        )
        assert size is not None
        assert (size.gpus, size.batch_size) == (after.request.num_gpus, after.request.batch_size)
    assert runs[-1].exit_code == 0
    # Exactly once: one stop request per resized attempt, one completion.
    assert sorted(live.terminations) == sorted(r.request.request_id for r in runs[:-1])
    assert live.ctl.resizes == len(runs) - 1
    kinds = [k for _, k, _ in live.store.events(seq)]
    assert kinds.count("completed") == 1 and kinds.count("started") == len(runs)
    row = live.store.get(seq)
    assert row is not None and row.state == COMPLETED and row.restarts == len(runs) - 1
    check_no_double_booking(live.backend)


def test_measured_throughputs_reach_the_policy(tmp_path: Path) -> None:
    live = Live(tmp_path, "ones")
    seq = live.submit("measured")
    seen: list[Mapping[int, tuple[float, ...]]] = []
    decide = live.planning.policy.decide

    def spy(now: float, jobs: Any) -> Any:
        seen.extend(j.throughputs for j in jobs if j.index == seq)
        return decide(now, jobs)

    live.planning.policy.decide = spy  # type: ignore[method-assign]
    live.run()
    sizes = {n for t in seen for n in t}
    assert len(sizes) >= 2, sizes
    for table in seen:
        for n, values in table.items():
            assert 1 <= len(values) <= 5
            assert values == (RATE_PER_GPU * n,) * len(values)


@pytest.mark.parametrize("scaling", [True, False])
def test_pollux_sizes_a_job_by_its_measured_throughputs(tmp_path: Path, scaling: bool) -> None:
    live = Live(tmp_path, "pollux", scaling=scaling)
    seq = live.submit("measured")
    live.run(round_s=60.0)
    runs = runs_of(live, f"j{seq}")
    sizes = [r.request.num_gpus for r in runs]
    at_four = sum(r.end - r.begin for r in runs if r.request.num_gpus == 4)
    total = sum(r.end - r.begin for r in runs)
    assert sizes[:2] == [1, 2], sizes  # grown once while only one size is measured
    if scaling:
        # Throughput grows with GPUs as profiled: grown to 4 and kept there.
        assert sizes[-1] == 4 and at_four > total / 2, (sizes, at_four, total)
    else:
        # The same throughput at 1 and 2 GPUs: at most one round at 4 GPUs, then shrunk.
        assert sizes[-1] <= 2 and at_four <= 60.0, (sizes, at_four, total)
    measured = live.planning.adapter.driver.perf
    assert measured.measured(seq) == {}  # dropped once the job completed
    check_no_double_booking(live.backend)


def test_several_jobs_share_the_cluster_without_double_booking(tmp_path: Path) -> None:
    live = Live(tmp_path, "pollux", cluster="2x4")
    seqs = [live.submit(f"j{i}", gpus=1 + i % 2, max_gpus=4) for i in range(5)]
    live.run()
    for seq in seqs:
        row = live.store.get(seq)
        assert row is not None and row.state == COMPLETED
        kinds = [k for _, k, _ in live.store.events(seq)]
        assert kinds.count("completed") == 1
    check_no_double_booking(live.backend)
    assert live.ctl.resizes > 0


def test_policy_names_resolve_to_elastic_or_rigid() -> None:
    for name in elastic_policies():
        assert elastic_name(f"elastic:{name}") == name
    assert elastic_name("ones") == "ones" and elastic_name("pollux") == "pollux"
    assert elastic_name("tiresias") is None and elastic_name("fifo") is None


# ElasticFlow schedules jobs of its throughput tables only, which the live service cannot
# submit yet (no deadline or iterations in the job API): it refuses these Pollux-profile jobs.
@pytest.mark.parametrize("policy", sorted(set(elastic_policies()) - {"elasticflow"}))
def test_every_elastic_policy_runs_live(tmp_path: Path, policy: str) -> None:
    live = Live(tmp_path, f"elastic:{policy}", cluster="2x4")
    seqs = [live.submit(f"j{i}", gpus=1 + i % 3, max_gpus=4) for i in range(4)]
    live.run()
    assert all((r := live.store.get(s)) is not None and r.state == COMPLETED for s in seqs)
    check_no_double_booking(live.backend)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str], Live]]:
    live = Live(tmp_path, "ones")
    token = load_or_create_token(tmp_path / "token")
    ctx = ServiceContext(live.store, live.ctl, lambda: None, live.clock, token, "ones")
    with TestClient(create_app(ctx, None), base_url="http://localhost") as client:
        yield client, {"Authorization": f"Bearer {token}"}, live
    live.store.close()


ELASTIC = {
    "name": "e",
    "gpus": 1,
    "command": ["sleep", "5"],
    "elastic": True,
    "application": "cifar10",
    "batch_size": 32,
    "max_gpus": 4,
}


def test_api_stores_an_elastic_submission(api: tuple[TestClient, dict[str, str], Live]) -> None:
    client, auth, live = api
    r = client.post("/jobs", json=ELASTIC, headers=auth)
    assert r.status_code == 201, r.text
    assert live.planning.book.spec(1) == ElasticSpec("cifar10", 4, 32)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"application": None}, "application"),
        ({"application": "alexnet"}, "application"),
        ({"batch_size": None}, "batch_size"),
        ({"max_gpus": 9}, "max_gpus"),
        ({"max_gpus": 1, "gpus": 2}, "max_gpus"),
        ({"elastic": False}, "application"),
        ({"elastic": False, "application": None, "max_gpus": None}, "elastic"),
    ],
)
def test_api_rejects_bad_elastic_submissions(
    api: tuple[TestClient, dict[str, str], Live], change: dict[str, Any], field: str
) -> None:
    client, auth, live = api
    body = {k: v for k, v in {**ELASTIC, **change}.items() if v is not None}
    r = client.post("/jobs", json=body, headers=auth)
    assert r.status_code == 422, r.text
    assert field in r.json()["detail"]
    assert live.store.jobs() == []


def test_a_rigid_service_refuses_elastic_jobs(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    policy = create_service_policy("tiresias", {})
    ctl = build_controller(policy, store, FakeBackend(Clock()), resolve_cluster("1x4"))
    assert isinstance(ctl.planning, OrderingPlanning) and policy.name == "tiresias"
    problem = ctl.submission_problem(1, ElasticSpec("cifar10", 2, 32))
    assert problem is not None and problem.startswith("elastic:")
    store.close()


def test_options_a_policy_cannot_honour_are_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    cluster, backend = resolve_cluster("1x4"), FakeBackend(Clock())
    with pytest.raises(ValueError, match=r"placement \(--placement\) 'random': elastic policy"):
        build_controller(create_service_policy("pollux", {}), store, backend, cluster, "random")
    with pytest.raises(ValueError, match="interval_s: policy 'fifo' plans at every cycle"):
        Controller(store, backend, cluster, create_service_policy("fifo", {}), interval_s=60.0)
    store.close()


def test_a_restarted_elastic_service_finishes_every_job_once(tmp_path: Path, db_url: str) -> None:
    live = Live(tmp_path, "pollux", cluster="2x4", db=db_url)
    seqs = [live.submit(f"j{i}", gpus=1 + i % 2, max_gpus=4) for i in range(4)]
    for _ in range(4):
        live.ctl.step()
        live.clock.now += 60.0
    assert live.store.holding(), "jobs run when the service stops"
    # A new controller on the same store and back end (the processes outlived the service).
    again = build_controller(
        create_service_policy("pollux", {}),
        live.store,
        live.backend,
        resolve_cluster("2x4"),
        clock=live.clock,
    )
    assert isinstance(again.planning, ElasticPlanning)
    again.recover()
    live.ctl = again
    live.run()
    for seq in seqs:
        row = live.store.get(seq)
        assert row is not None and row.state == COMPLETED
        kinds = [k for _, k, _ in live.store.events(seq)]
        assert kinds.count("completed") == 1
        for run in runs_of(live, f"j{seq}"):
            attempt = int(run.request.request_id.split(".")[1])
            size = again.planning.book.attempt(seq, attempt, again.service_id)
            assert size is not None and size.batch_size == run.request.batch_size
    check_no_double_booking(live.backend)


def test_cancelling_a_running_elastic_job_frees_its_gpus(tmp_path: Path) -> None:
    live = Live(tmp_path, "pollux")
    first = live.submit("first")
    for _ in range(3):
        live.ctl.step()
        live.clock.now += 60.0
    for _ in range(10):
        if not any(r.state == PREEMPTING for r in live.store.holding()):
            break
        live.ctl.step()
    row = live.store.get(first)
    assert row is not None and row.state == "RUNNING"
    live.store.request_cancel(first, live.clock())
    second = live.submit("second")
    live.run()
    done = live.store.get(first)
    assert done is not None and done.state == "CANCELLED"
    after = live.store.get(second)
    assert after is not None and after.state == COMPLETED
    check_no_double_booking(live.backend)


def test_a_job_stored_without_its_elastic_spec_is_cancelled(tmp_path: Path) -> None:
    live = Live(tmp_path, "ones")
    row = live.store.submit(NewJob("orphan", "u", 1, ("sleep", "5"), 8), live.clock())
    live.ctl.step()
    got = live.store.get(row.seq)
    assert got is not None and got.state == "CANCELLED"
    assert live.backend.history == []


@pytest.mark.parametrize("how", ["lost", "drained"])
def test_an_elastic_policy_sees_a_down_node_and_moves_its_jobs_off_it(
    tmp_path: Path, how: str
) -> None:
    """A lost node ends its runs at once; a drained one (as Slurm reports it) keeps them
    running: either way the policy's next round sees it with no GPUs and moves its jobs."""
    live = Live(tmp_path, "pollux", cluster="2x4")
    policy = live.planning.policy
    views: list[ClusterView] = []
    answers: list[Mapping[str, Allocation]] = []
    observe, decide = policy.observe, policy.decide

    def seen(cluster: ClusterView) -> None:
        views.append(cluster)
        observe(cluster)

    def answered(now: float, jobs: Any) -> Mapping[str, Allocation]:
        answers.append(decide(now, jobs))
        return answers[-1]

    policy.observe = seen  # type: ignore[method-assign]
    policy.decide = answered  # type: ignore[method-assign]
    launched: list[LaunchRequest] = []
    launch = live.backend.launch

    def recorded(request: LaunchRequest) -> None:
        launched.append(request)
        launch(request)

    live.backend.launch = recorded  # type: ignore[method-assign]
    seqs = [live.submit(f"j{i}", gpus=2, max_gpus=4) for i in range(4)]
    node = "node-001"
    for _ in range(10):
        live.ctl.step()
        if any(node in r.request.gpu_ids for r in live.backend.runs.values()):
            break
        live.clock.now += 60.0
    on_node = {r.request.job_id for r in live.backend.runs.values() if node in r.request.gpu_ids}
    assert on_node, "the node was in use"
    rounds_before, launches_before = len(views), len(launched)
    if how == "lost":
        live.backend.fail_node(node)
    else:
        live.backend.down.add(node)
    live.ctl.step()  # settles what ended and decides again at once
    assert len(views) > rounds_before, "no round right after the node was lost"
    lost = {n.name: n for n in views[rounds_before].nodes}
    assert (lost[node].gpus, lost[node].size) == (0, 4)
    assert lost["node-000"].size == 4
    position = lost[node].index
    for _ in range(5):
        live.clock.now += 60.0
        live.ctl.step()
    rounds_down, launches_down = len(views), len(launched)
    live.backend.restore_node(node)
    live.run()
    while_down = answers[rounds_before:rounds_down]
    assert while_down and all(
        position not in dict(alloc.gpus) for answer in while_down for alloc in answer.values()
    )
    while_down_launched = launched[launches_before:launches_down]
    assert all(node not in r.gpu_ids for r in while_down_launched)
    # The jobs it had were stopped or lost, queued again, and ran elsewhere while it was down.
    moved = {r.job_id for r in while_down_launched}
    assert on_node <= moved, (on_node, moved)
    # Once back, the node is offered again.
    assert len(views) > rounds_down
    assert {n.name: n.gpus for n in views[rounds_down].nodes}[node] > 0
    for seq in seqs:
        row = live.store.get(seq)
        assert row is not None and row.state == COMPLETED
    check_no_double_booking(live.backend)
