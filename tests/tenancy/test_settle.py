"""Admitting at once the workloads submitted since the last round of a cohort tree with nothing
else pending (``Admission._settle``) is only a saving. Driven directly by random operations
(batches of workloads of random queues, sizes, priorities and creation times submitted between
rounds at non-decreasing times, releases of admitted workloads, withdrawals of waiting ones,
including ones not yet seen by a round, adoptions of running ones with ``admit_now``, and evicted
workloads submitted again, as the simulator does) on random cohort trees, quotas, borrowing and
lending limits, flavors, preemption and queueing policies, with and without fair sharing, the
default admission admits at every round the same workloads, with the same evictions and causes
and the same borrowing flags, as the reference that parks no queue and takes no shortcut
(``Admission.recheck_all``)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from dlsched.tenancy.admission import Admission, Admitted, Workload
from dlsched.tenancy.manifests import read_manifests
from dlsched.tenancy.model import Tenancy
from tests.tenancy.kueue_manifests import DEFAULT_FLAVOR, documents, write
from tests.tenancy.strategies import policies


class _Default(Admission):
    """The default admission, counting the workloads its shortcut admits."""

    settled = 0

    def _settle(self, now: float, out: list[Admitted]) -> None:
        before = len(out)
        super()._settle(now, out)
        self.settled += len(out) - before


class _Reference(Admission):
    """The reference: every waiting queue of a tree checked after each change, no shortcut."""

    recheck_all = True


class Submit(NamedTuple):
    """Workloads waiting from now on: each (queue, GPUs, priority, how long ago it was
    created), queue and priority as indices into the setup's."""

    jobs: tuple[tuple[int, int, int, int], ...]


class Schedule(NamedTuple):
    """A round, ``advance`` after the last (evicted workloads are submitted again first)."""

    advance: int


class Release(NamedTuple):
    """An admitted workload ends (``pick`` modulo how many there are, in the order they
    were admitted)."""

    pick: int


class Withdraw(NamedTuple):
    """A waiting workload, or an evicted one not submitted again, is cancelled."""

    pick: int


class Requeue(NamedTuple):
    """An evicted workload, stopped by now, is submitted again."""

    pick: int


class Adopt(NamedTuple):
    """A running job found by a restarted service is admitted at once if it fits
    (``through_queue``: first submitted and withdrawn, as the tenancy stage adopts), as of
    ``age`` before the last round (a clock that went back)."""

    queue: int
    gpus: int
    priority: int
    through_queue: bool
    age: int = 0


Op = Submit | Schedule | Release | Withdraw | Requeue | Adopt


class Setup(NamedTuple):
    """The manifests, their queues' names and the priorities workloads take."""

    docs: list[dict[str, Any]]
    queues: tuple[str, ...]
    priorities: tuple[int, ...]


class Run(NamedTuple):
    """What a run did: the workloads the shortcut admitted, and the evictions."""

    settled: int
    evictions: int


@st.composite
def setups(draw: st.DrawFn) -> Setup:
    teams = draw(st.integers(1, 3))
    priorities = draw(st.sampled_from([(1, 100), (0, 5), (1, 50, 100), (0, 1, 2)]))
    limits = draw(st.booleans())
    queues: dict[str, dict[str, Any]] = {}
    for q in range(draw(st.integers(1, 6))):
        spec: dict[str, Any] = {}
        if draw(st.integers(0, 5)):
            spec["cohort"] = f"team{q % teams}"
        quota: dict[str, Any] = {"gpu": draw(st.integers(0, 8))}
        if limits and "cohort" in spec and draw(st.integers(0, 2)) == 0:
            quota["borrow"] = draw(st.integers(0, 8))
        if limits and "cohort" in spec and draw(st.integers(0, 2)) == 0:
            quota["lend"] = draw(st.integers(0, quota["gpu"]))
        if draw(st.integers(0, 7)) == 0:
            spare = {"gpu": draw(st.integers(0, 4))}
            spec["flavors"] = {DEFAULT_FLAVOR: quota, "spare": spare}
            spec["when_can_borrow"] = draw(st.sampled_from(["Borrow", "TryNextFlavor"]))
            spec["when_can_preempt"] = draw(st.sampled_from(["Preempt", "TryNextFlavor"]))
        else:
            spec |= quota
        spec |= draw(policies())
        if "borrow_within" in spec and draw(st.booleans()):
            spec["threshold"] = draw(st.sampled_from(priorities))
        queues[f"q{q}"] = spec
    cohorts: dict[str, dict[str, Any]] = {"org": {}}
    if draw(st.integers(0, 3)) == 0:
        cohorts["org"]["gpu"] = draw(st.integers(1, 8))
    for t in range(teams):
        cohorts[f"team{t}"] = {"parent": "org"}
        if draw(st.integers(0, 3)) == 0:
            cohorts[f"team{t}"]["gpu"] = gpu = draw(st.integers(0, 8))
            if limits and draw(st.booleans()):
                cohorts[f"team{t}"]["lend"] = draw(st.integers(0, gpu))
    fair = draw(st.integers(0, 3)) == 0
    return Setup(documents(queues, cohorts, fair_sharing=fair), tuple(queues), priorities)


GPUS = st.one_of(st.integers(1, 2), st.integers(1, 8))
SUBMIT = st.builds(
    Submit,
    st.lists(
        st.tuples(st.integers(0, 5), GPUS, st.integers(0, 2), st.integers(0, 3)),
        min_size=1,
        max_size=5,
    ).map(tuple),
)
OPS: st.SearchStrategy[Op] = st.one_of(
    SUBMIT,
    SUBMIT,
    st.builds(Schedule, st.integers(0, 3)),
    st.builds(Schedule, st.integers(0, 3)),
    st.builds(Release, st.integers(0, 50)),
    st.builds(Withdraw, st.integers(0, 50)),
    st.builds(Requeue, st.integers(0, 50)),
    st.builds(
        Adopt,
        st.integers(0, 5),
        GPUS,
        st.integers(0, 2),
        st.booleans(),
        st.sampled_from([0, 0, 0, 2]),
    ),
)
RUNS = st.tuples(setups(), st.lists(OPS, min_size=10, max_size=60))


class _Pair:
    """The default admission and the reference, driven alike, with what the caller knows:
    which workloads wait, which are admitted and which were evicted (and stopped)."""

    def __init__(self, tenancy: Tenancy, setup: Setup) -> None:
        self.default = _Default(tenancy)
        self.reference = _Reference(tenancy)
        self.setup = setup
        self.seq: Iterator[int] = count()
        self.now = 0.0
        self.workloads: dict[str, tuple[Workload, Workload]] = {}
        self.waiting: dict[str, None] = {}
        self.admitted: dict[str, None] = {}
        self.stopped: dict[str, None] = {}
        self.evictions = 0

    @property
    def sides(self) -> tuple[Admission, Admission]:
        return self.default, self.reference

    def fresh(self, queue: int, gpus: int, priority: int, age: int) -> tuple[Workload, Workload]:
        """The same new workload for each side."""
        queues, priorities = self.setup.queues, self.setup.priorities
        name = queues[queue % len(queues)]
        seq = next(self.seq)
        pair = tuple(
            Workload(
                f"w{seq}",
                adm.quota.index[name],
                priorities[priority % len(priorities)],
                self.now - age,
                seq,
                {"gpu": float(gpus)},
            )
            for adm in (self.default, self.reference)
        )
        return pair[0], pair[1]

    def admissible(self, pair: tuple[Workload, Workload]) -> bool:
        """Whether the workload can ever be admitted (the tenancy stage sets the others
        aside)."""
        reasons = [adm.never_admitted(wl) for adm, wl in zip(self.sides, pair, strict=True)]
        assert reasons[0] == reasons[1]
        return reasons[0] is None

    def submit(self, pair: tuple[Workload, Workload]) -> None:
        for adm, wl in zip(self.sides, pair, strict=True):
            adm.submit(wl)
        self.waiting[pair[0].key] = None

    def apply(self, op: Op) -> None:
        if isinstance(op, Submit):
            for queue, gpus, priority, age in op.jobs:
                pair = self.fresh(queue, gpus, priority, age)
                if self.admissible(pair):
                    self.workloads[pair[0].key] = pair
                    self.submit(pair)
        elif isinstance(op, Schedule):
            self.schedule(self.now + op.advance)
        elif isinstance(op, Release):
            if self.admitted:
                self.release(list(self.admitted)[op.pick % len(self.admitted)])
        elif isinstance(op, Withdraw):
            gone = [*self.waiting, *self.stopped]
            if gone:
                key = gone[op.pick % len(gone)]
                waits = key in self.waiting
                self.waiting.pop(key, None)
                self.stopped.pop(key, None)
                done = [
                    adm.withdraw(wl)
                    for adm, wl in zip(self.sides, self.workloads[key], strict=True)
                ]
                assert done == [waits, waits]
        elif isinstance(op, Requeue):
            if self.stopped:
                key = list(self.stopped)[op.pick % len(self.stopped)]
                del self.stopped[key]
                self.submit(self.workloads[key])
        else:
            self.adopt(op)

    def release(self, key: str) -> None:
        del self.admitted[key]
        for adm, wl in zip(self.sides, self.workloads[key], strict=True):
            adm.release(wl)

    def adopt(self, op: Adopt) -> None:
        pair = self.fresh(op.queue, op.gpus, op.priority, 0)
        if not self.admissible(pair):
            return
        if op.through_queue:
            for adm, wl in zip(self.sides, pair, strict=True):
                adm.submit(wl)
                assert adm.withdraw(wl)
        at = self.now - op.age
        took = [adm.admit_now(wl, at) for adm, wl in zip(self.sides, pair, strict=True)]
        assert took[0] == took[1]
        if took[0]:
            self.workloads[pair[0].key] = pair
            self.admitted[pair[0].key] = None

    def schedule(self, now: float) -> None:
        """A round on both sides (evicted workloads waiting again first), compared."""
        for key in list(self.stopped):
            del self.stopped[key]
            self.submit(self.workloads[key])
        self.now = now
        outcomes = [_outcome(adm.schedule(now)) for adm in self.sides]
        assert outcomes[0] == outcomes[1]
        admitted, evicted = outcomes[0]
        for key in admitted:
            del self.waiting[key]
            self.admitted[key] = None
        for key, _ in evicted:
            del self.admitted[key]
            self.stopped[key] = None
        self.evictions += len(evicted)
        states = [_state(adm) for adm in self.sides]
        assert states[0] == states[1]
        assert set(states[0][0]) == set(self.admitted)


def _outcome(out: list[Admitted]) -> tuple[dict[str, bool], set[tuple[str, str]]]:
    """The workloads a round admitted with whether each borrows, and its (evicted workload,
    cause) pairs."""
    admitted = {a.workload.key: a.workload.borrows for a in out}
    assert len(admitted) == len(out)
    evicted = {(e.workload.key, e.cause) for a in out for e in a.evictions}
    return admitted, evicted


def _state(adm: Admission) -> tuple[dict[str, tuple[bool, tuple[str, ...]]], list[int]]:
    """Every admitted workload with whether it borrows and its flavors, and how many wait in
    each queue."""
    admitted = {w.key: (w.borrows, w.flavors) for queue in adm.admitted for w in queue}
    return admitted, list(adm.pending_count)


def _drive(path: Path, setup: Setup, ops: list[Op]) -> Run:
    """Run ``ops`` on both sides, then a last round and rounds after ending each admitted
    workload in turn, comparing them at each round."""
    tenancy = read_manifests(write(path, setup.docs))
    pair = _Pair(tenancy, setup)
    for op in ops:
        pair.apply(op)
    pair.schedule(pair.now + 1)
    while pair.admitted:
        pair.apply(Release(0))
        pair.schedule(pair.now + 1)
    assert not pair.waiting
    return Run(pair.default.settled, pair.evictions)


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("settle") / "queues.yaml"


@settings(max_examples=50, deadline=None)
@given(run=RUNS)
def test_settling_admits_as_the_reference(run: tuple[Setup, list[Op]], manifests: Path) -> None:
    _drive(manifests, *run)


def test_random_runs_take_the_shortcut_and_evict(manifests: Path) -> None:
    # The test above compares two different paths only if its runs admit through the
    # shortcut, and, to be worth much, also preempt.
    def settles_and_evicts(run: tuple[Setup, list[Op]]) -> bool:
        settled, evictions = _drive(manifests, *run)
        return settled > 0 and evictions > 0

    once = settings(max_examples=200, derandomize=True, database=None, phases=[Phase.generate])
    assert settles_and_evicts(find(RUNS, settles_and_evicts, settings=once))


def test_the_shortcut_admits_a_tree_with_nothing_queued(manifests: Path) -> None:
    # Two queues of a tree, one already running a workload: three new workloads that fit
    # together are admitted by the shortcut (the older low-priority one of qa borrows, as qa
    # takes its high-priority one first). Then, with one waiting in qb, a new one of qa that
    # fits goes through the rounds. The reference takes every one through the rounds.
    setup = Setup(
        documents({"qa": {"gpu": 4, "cohort": "team"}, "qb": {"gpu": 4, "cohort": "team"}}),
        ("qa", "qb"),
        (1, 100),
    )
    pair = _Pair(read_manifests(write(manifests, setup.docs)), setup)
    pair.adopt(Adopt(1, 2, 0, False))
    pair.apply(Submit(((0, 2, 0, 2), (0, 3, 1, 1), (1, 1, 0, 1))))
    pair.schedule(10.0)
    assert pair.default.settled == 3
    borrows = {key: wl.borrows for key, (wl, _) in pair.workloads.items()}
    assert borrows == {"w0": False, "w1": True, "w2": False, "w3": False}
    pair.release("w1")
    pair.apply(Submit(((1, 4, 0, 0),)))
    pair.schedule(20.0)
    assert list(pair.waiting) == ["w4"]
    pair.apply(Submit(((0, 1, 0, 0),)))
    pair.schedule(30.0)
    team = pair.default.quota.root[0]
    assert (pair.default.settled, list(pair.waiting), pair.default._queued[team]) == (3, ["w4"], 1)
