"""One reconcile path for every plan: a resize in a Plan applied by the controller (stop through a
checkpoint, then a start at the new size and batch), and an ordering policy and an elastic policy
whose plans both go through ``Controller.apply`` and its one double-booking check (fake back end,
controllable clock)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pytest

from dlsched.backends.fake import FakeBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policy import ElasticPolicy
from dlsched.elastic.types import Allocation, JobInfo
from dlsched.perf.elastic_progress import BatchSetting
from dlsched.policy.registry import create_policy
from dlsched.scheduler.plan import Plan
from dlsched.service.control.controller import Controller
from dlsched.service.control.elastic_book import ElasticBook, ElasticSpec
from dlsched.service.store.database import Store
from dlsched.service.store.records import COMPLETED, PENDING, PREEMPTING, RUNNING, NewJob
from tests.service.helpers import Clock, check_no_double_booking


@dataclass
class Scripted(ElasticPolicy):
    """An elastic policy that answers what the test wrote in ``answers`` (by job id)."""

    name: ClassVar[str] = "scripted"
    answers: dict[str, Allocation] = field(default_factory=dict)
    interval_s: float = 60.0

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        active = {j.name for j in jobs}
        return {name: a for name, a in self.answers.items() if name in active}


def record_plans(ctl: Controller) -> list[Plan]:
    """Record every plan the controller applies (in the order applied)."""
    plans: list[Plan] = []
    apply = ctl.apply

    def recorded(plan: Plan, now: float) -> int:
        plans.append(plan)
        return apply(plan, now)

    ctl.apply = recorded  # type: ignore[method-assign]
    return plans


def submit_elastic(ctl: Controller, name: str, gpus: int, batch: int, duration: float) -> int:
    row = ctl.store.submit(
        NewJob(name, "u", gpus, ("sleep", str(duration)), batch, duration), ctl.clock()
    )
    ctl.submitted(row.seq, ElasticSpec("cifar10", 4, batch))
    return row.seq


def test_a_resize_in_a_plan_is_a_stop_then_a_start_at_the_new_size(tmp_path: Path) -> None:
    clock = Clock()
    store = Store(tmp_path / "state.db")
    backend = FakeBackend(clock)
    policy = Scripted()
    ctl = Controller(store, backend, resolve_cluster("1x4"), policy, clock=clock)
    plans = record_plans(ctl)
    seq = submit_elastic(ctl, "grow", 1, 32, 600.0)
    policy.answers["j1"] = Allocation(((0, 1),), 32)
    ctl.step()
    first = store.get(seq)
    assert first is not None and first.state == RUNNING and first.gpu_ids == {"node-000": [0]}

    # The next round wants 2 GPUs at a per-GPU batch of 8 × 2 micro-steps: one Resize.
    policy.answers["j1"] = Allocation(((0, 2),), 8, accum_steps=1)
    clock.now += 60.0
    ctl.step()
    resize = plans[-1]
    assert resize.starts == () and resize.preempts == ()
    assert [(r.job.seq, r.placement, r.config) for r in resize.resizes] == [
        (seq, ((0, (0, 1)),), BatchSetting(16))
    ]
    stopping = store.get(seq)
    assert stopping is not None and stopping.state == PREEMPTING and ctl.resizes == 1

    # The fake job checkpoints at once: the next step requeues it and starts it at 2 GPUs.
    ctl.step()
    start = plans[-1]
    assert [(s.job.seq, s.placement, s.config) for s in start.starts] == [
        (seq, ((0, (0, 1)),), BatchSetting(16))
    ]
    runs = backend.history
    assert [(r.request.num_gpus, r.request.batch_size) for r in runs] == [(1, 32), (2, 16)]
    assert runs[0].exit_code == 75 and runs[0].end <= runs[1].begin
    size = ElasticBook(store).attempt(seq, 2, ctl.service_id)
    assert size is not None and (size.gpus, size.batch_size) == (2, 16)

    # A change of batch alone is planned as a resize to the same GPUs and not applied live.
    policy.answers["j1"] = Allocation(((0, 2),), 4)
    clock.now += 60.0
    ctl.step()
    assert [r.placement for r in plans[-1].resizes] == [((0, (0, 1)),)]
    still = store.get(seq)
    assert still is not None and still.state == RUNNING and still.attempt == 2
    assert ctl.resizes == 1 and len(backend.history) == 2
    store.close()


@dataclass
class Setup:
    """A controller whose plans stop a job that takes ``checkpoint_s`` to exit while another
    job's start wants its GPUs."""

    ctl: Controller
    backend: FakeBackend
    clock: Clock
    arrive: list[tuple[float, Callable[[], None]]]


def rigid_setup(tmp: Path) -> Setup:
    """Tiresias: a 4-GPU job crosses its 100 GPU-s threshold; a 4-GPU job arriving later has
    the higher priority and preempts it."""
    clock = Clock()
    store = Store(tmp / "state.db")
    backend = FakeBackend(clock, checkpoint_s=20.0)
    policy = create_policy("tiresias", {"thresholds": "100"})
    ctl = Controller(store, backend, resolve_cluster("1x4"), policy, clock=clock)

    def job(name: str) -> Callable[[], None]:
        def submit() -> None:
            job = NewJob(name, "u", 4, ("sleep", "300"), expected_duration_s=300.0)
            store.submit(job, clock())

        return submit

    return Setup(ctl, backend, clock, [(1000.0, job("old")), (1100.0, job("new"))])


def elastic_setup(tmp: Path) -> Setup:
    """An elastic policy gives a job all 4 GPUs, then halves it for a newcomer."""
    clock = Clock()
    store = Store(tmp / "state.db")
    backend = FakeBackend(clock, checkpoint_s=20.0)
    policy = Scripted(answers={"j1": Allocation(((0, 4),), 8)})
    ctl = Controller(store, backend, resolve_cluster("1x4"), policy, clock=clock)

    def old() -> None:
        submit_elastic(ctl, "old", 1, 8, 300.0)

    def newcomer() -> None:
        submit_elastic(ctl, "new", 1, 8, 300.0)
        policy.answers = {"j1": Allocation(((0, 2),), 8), "j2": Allocation(((0, 2),), 8)}

    return Setup(ctl, backend, clock, [(1000.0, old), (1100.0, newcomer)])


@pytest.mark.parametrize("make", [rigid_setup, elastic_setup], ids=["tiresias", "elastic"])
def test_ordering_and_elastic_plans_share_the_reconcile_path(
    tmp_path: Path, make: Callable[[Path], Setup]
) -> None:
    setup = make(tmp_path)
    ctl, backend, clock = setup.ctl, setup.backend, setup.clock
    store = ctl.store
    index = {n.name: i for i, n in enumerate(ctl.cluster.nodes)}
    applied: list[Plan] = []
    blocked: list[tuple[int, float]] = []
    apply = ctl.apply

    def checked(plan: Plan, now: float) -> int:
        held = {
            (index[node], g)
            for row in store.holding()
            for node, gpus in (row.gpu_ids or {}).items()
            for g in gpus
        }
        waits = [
            s.job.seq
            for s in plan.starts
            if any((n, g) in held for n, gs in s.placement for g in gs)
        ]
        taken = apply(plan, now)
        applied.append(plan)
        for seq in waits:
            row = store.get(seq)
            assert row is not None and row.state == PENDING, "started on GPUs still held"
            blocked.append((seq, now))
        return taken

    ctl.apply = checked  # type: ignore[method-assign]
    arrivals = sorted(setup.arrive, key=lambda a: a[0])
    for _ in range(1000):
        while arrivals and arrivals[0][0] <= clock.now:
            arrivals.pop(0)[1]()
        ctl.step()
        if not arrivals and not store.active():
            break
        times = [clock.now + 60.0]
        nxt = backend.next_event_time()
        if nxt is not None and nxt > clock.now:
            times.append(nxt)
        if arrivals:
            times.append(arrivals[0][0])
        clock.now = min(times)
    assert all(r.state == COMPLETED for r in store.jobs())
    assert len(applied) == ctl.cycles, "every cycle's plan went through Controller.apply"
    assert any(p.preempts or p.resizes for p in applied), "a plan stopped a running job"
    # The newcomer's start waited while the stopped job checkpointed (20 s), then happened.
    assert blocked and blocked[0][1] == 1100.0
    new_run = next(r for r in backend.history if r.request.job_id == "j2")
    assert new_run.begin == 1120.0
    check_no_double_booking(backend)
    store.close()
